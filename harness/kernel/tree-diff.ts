import { HilError } from "../../util/errors.ts";
import { probe } from "../../util/exec.ts";

/** A file a series changed, relative to the top of the kernel tree. */
export interface TreeChange {
  path: string;
  kind: "modified" | "added" | "deleted";
}

/** Files and symlinks under `root`: relative path -> inode number (as text). */
async function inodes(root: string): Promise<Map<string, string>> {
  // probe, not run: run() splits output into lines, and this output has none
  const r = await probe("find", [root, "(", "-type", "f", "-o", "-type", "l", ")", "-printf", "%i %P\\0"]);
  if (r.exitCode !== 0) throw new HilError("cannot list the kernel tree", { where: root, detail: r.stderr });
  const out = new Map<string, string>();
  for (const rec of r.stdout.split("\0")) {
    const space = rec.indexOf(" ");
    if (space > 0) out.set(rec.slice(space + 1), rec.slice(0, space));
  }
  return out;
}

/**
 * What a series changed in a patched tree that is a hard-linked copy of `pristine` (apply.ts):
 * GNU patch writes every file it touches anew, so a changed file no longer shares its inode with
 * the pristine one. Sorted by path.
 */
export async function diffLinkedTrees(pristine: string, patched: string): Promise<TreeChange[]> {
  const [before, after] = await Promise.all([inodes(pristine), inodes(patched)]);
  const changes: TreeChange[] = [];
  for (const [path, ino] of after) {
    const old = before.get(path);
    if (old === undefined) changes.push({ path, kind: "added" });
    else if (old !== ino) changes.push({ path, kind: "modified" });
  }
  for (const path of before.keys()) if (!after.has(path)) changes.push({ path, kind: "deleted" });
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
