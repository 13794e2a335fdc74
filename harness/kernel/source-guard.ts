/**
 * Kbuild with O= writes only into the build tree. A file of the source tree written during a
 * build would be worse there than anywhere: a patched tree is a hard-linked copy of a cached base
 * tree (apply.ts), so a write into one of its shared files changes the base and every other tree
 * made from it. Checked after each compile by the files' times.
 */
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";

export type WrittenFile = { path: string; links: number };

/** The regular files below `srcDir` whose content changed after `sinceMs`, with their link counts. */
export async function sourceWrittenSince(srcDir: string, sinceMs: number): Promise<WrittenFile[]> {
  const at = `@${(sinceMs / 1000).toFixed(3)}`;
  const r = await run("find (source files written during the build)", "find", [
    srcDir,
    "-type",
    "f",
    "-newermt",
    at,
    "-printf",
    "%n %P\\0",
  ]);
  return r.stdout
    .split("\0")
    .filter(Boolean)
    .map((line) => {
      const space = line.indexOf(" ");
      return { links: Number(line.slice(0, space)), path: line.slice(space + 1) };
    });
}

/** An error naming the source files a build wrote, those shared with the cached base first. */
export function sourceWrittenError(srcDir: string, written: readonly WrittenFile[]): HilError {
  const shared = written.filter((w) => w.links > 1);
  const first = shared[0] ?? written[0];
  return new HilError(
    shared.length > 0
      ? `the build wrote ${shared.length} file(s) of the source tree through a hard link shared with the cached base tree, first ${first?.path}`
      : `the build wrote ${written.length} file(s) into the source tree, first ${first?.path}`,
    {
      where: srcDir,
      detail:
        "Kbuild is run with O= and must write only there; the source entries' contents can no longer be trusted: remove them with hil cache (or rm -r the entry) and build again",
      exitCode: 3,
    },
  );
}

/** Fails when the build wrote into its source tree after `sinceMs`. */
export async function assertSourceUntouched(srcDir: string, sinceMs: number): Promise<void> {
  const written = await sourceWrittenSince(srcDir, sinceMs);
  if (written.length > 0) throw sourceWrittenError(srcDir, written);
}
