/** A private copy of a cached build tree that Kbuild may continue in without touching the original. */
import { readFile, readlink, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { probe, run } from "../../util/exec.ts";
import type { KbuildTree } from "./kbuild.ts";
import { pathEre, pathRegExp } from "./path-match.ts";

/** Text files (no NUL byte) under `dir` that name any of `paths`. */
async function textFilesNaming(dir: string, paths: readonly string[]): Promise<string[]> {
  const args = ["-rlIZE", ...paths.flatMap((p) => ["-e", pathEre(p)]), "."];
  const r = await probe("grep", args, { cwd: dir });
  if (r.exitCode > 1)
    throw new HilError("cannot search the copied build tree", { where: dir, detail: r.stderr });
  return r.stdout
    .split("\0")
    .filter(Boolean)
    .map((f) => join(dir, f));
}

/**
 * Copies the O= build tree `from.buildDir` to `to.buildDir` so that Kbuild, run there against
 * `to.srcDir`, takes every object as built: file times are kept (`cp -a`), and every text file
 * and symlink naming the old source or build tree (the .cmd records, .d files, the generated
 * Makefile, `source`) is rewritten to name the new ones. Kbuild compares each target's recorded
 * command with the one it would run now and reads the target's dependencies from the same
 * record, so a record left naming the old tree would hide a changed file; none is left.
 * `named`: the trees as the records spell them, where the tree was built (`from` unless the
 * cache was copied or moved since).
 */
export async function copyBuildTree(
  from: KbuildTree,
  to: KbuildTree,
  named: KbuildTree = from,
): Promise<void> {
  await run("cp -a (copy of the base build tree)", "cp", [
    "-a",
    "--reflink=auto",
    from.buildDir,
    to.buildDir,
  ]);
  // a build of the same source tree (another configuration of it) keeps naming that tree
  const sameSource = named.srcDir === to.srcDir;
  const renames: Array<[RegExp, string]> = [
    [pathRegExp(named.buildDir), to.buildDir],
    ...(sameSource ? [] : [[pathRegExp(named.srcDir), to.srcDir] as [RegExp, string]]),
  ];
  const needles = sameSource ? [named.buildDir] : [named.buildDir, named.srcDir];
  for (const file of await textFilesNaming(to.buildDir, needles)) {
    const before = await stat(file);
    let text = await readFile(file, "utf8");
    for (const [pattern, replacement] of renames) text = text.replace(pattern, replacement);
    await writeFile(file, text);
    await utimes(file, before.atime, before.mtime);
  }
  const links = await run("find (symlinks)", "find", [to.buildDir, "-type", "l", "-printf", "%P\\0"]);
  for (const rel of links.stdout.split("\0").filter(Boolean)) {
    const link = join(to.buildDir, rel);
    let target = await readlink(link);
    for (const [pattern, replacement] of renames) target = target.replace(pattern, replacement);
    if (target === (await readlink(link))) continue;
    await rm(link);
    await symlink(target, link);
  }
  const left = await textFilesNaming(to.buildDir, needles);
  if (left.length > 0) {
    throw new HilError("the copied build tree still names the base trees", {
      where: to.buildDir,
      detail: left.slice(0, 10).join("\n"),
    });
  }
}
