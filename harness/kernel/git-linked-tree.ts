import { lstatSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import type { TreeChange } from "./tree-diff.ts";

/** A cached source tree and the git tree id of its content. */
export interface LinkSource {
  srcDir: string;
  tree: string;
  /** what it is, for progress lines (e.g. "debian:6.12") */
  describe: string;
}

const STATUS: Record<string, TreeChange["kind"]> = { A: "added", M: "modified", T: "modified", D: "deleted" };

/** What differs between two trees of `repo`, file by file (renames as a deletion and an addition). */
export async function gitTreeChanges(repo: string, from: string, to: string): Promise<TreeChange[]> {
  const r = await run("git diff-tree", "git", [
    "-C",
    repo,
    "diff-tree",
    "-r",
    "-z",
    "--no-renames",
    "--name-status",
    from,
    to,
  ]);
  const fields = r.stdout.split("\0");
  const changes: TreeChange[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const kind = STATUS[fields[i] ?? ""];
    const path = fields[i + 1] ?? "";
    if (!kind)
      throw new HilError(`git diff-tree ${from} ${to}: unexpected status "${fields[i]}" for ${path}`);
    changes.push({ path, kind });
  }
  return changes;
}

const ARCHIVE_BATCH = 500;

/**
 * Makes `dest` hold `tree` of `repo` without exporting all of it: `from` hard-linked, then each
 * file that differs removed and, unless deleted, written anew from the repository (so no write
 * goes through a link into `from`). Returns the changes.
 */
export async function linkGitTree(
  repo: string,
  from: LinkSource,
  tree: string,
  dest: string,
): Promise<TreeChange[]> {
  const changes = await gitTreeChanges(repo, from.tree, tree);
  await run("cp -al (hard-linked copy of a cached tree)", "cp", ["-al", from.srcDir, dest]);
  for (const c of changes) await rm(join(dest, c.path), { force: true });
  const written = changes.filter((c) => c.kind !== "deleted").map((c) => c.path);
  const archive = 'r=$1 t=$2 d=$3; shift 3; git -C "$r" archive --format=tar "$t" -- "$@" | tar -x -C "$d"';
  for (let i = 0; i < written.length; i += ARCHIVE_BATCH)
    await run(
      "git archive (changed files)",
      "bash",
      [
        "-o",
        "pipefail",
        "-c",
        archive,
        "git-archive",
        repo,
        tree,
        dest,
        ...written.slice(i, i + ARCHIVE_BATCH),
      ],
      { env: { ...process.env, GIT_LITERAL_PATHSPECS: "1" } },
    );
  for (const path of written)
    if (lstatSync(join(dest, path)).nlink > 1)
      throw new Error(`${path} of ${dest} is still shared with ${from.srcDir} after it was written anew`);
  return changes;
}
