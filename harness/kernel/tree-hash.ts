import { createHash } from "node:crypto";
import { lstat, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { hashFile } from "../../util/hash.ts";

/** Relative paths of every entry under `root` (files, symlinks, empty dirs), sorted bytewise. */
async function listTree(root: string, rel = ""): Promise<string[]> {
  const entries = await readdir(join(root, rel), { withFileTypes: true });
  const out: string[] = [];
  for (const e of entries) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      const below = await listTree(root, path);
      out.push(...(below.length > 0 ? below : [`${path}/`]));
    } else out.push(path);
  }
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A content hash of a directory: every path, its executable bit, and its bytes or link target. */
export async function hashTree(root: string): Promise<string> {
  const h = createHash("sha256");
  for (const rel of await listTree(root)) {
    const full = join(root, rel);
    const st = await lstat(full);
    let content: string;
    if (st.isSymbolicLink()) content = `link:${await readlink(full)}`;
    else if (st.isFile()) content = `file:${st.mode & 0o111 ? "x" : "-"}:${await hashFile(full)}`;
    else content = st.isDirectory() ? "dir" : "other";
    h.update(`${rel}\0${content}\n`);
  }
  return h.digest("hex");
}
