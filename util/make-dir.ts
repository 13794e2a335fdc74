/**
 * `mkdir -p` that always ends. Node 20's `mkdir(path, { recursive: true })` spins at 100 % CPU
 * forever when mkdir(2) says ENOENT for a child of a directory that exists, as procfs and sysfs do
 * for any new name (`/proc/nope`): its MKDirpSync/MKDirpAsync (src/node_file.cc) push the path and
 * its dirname back on ENOENT, the dirname's mkdir says EEXIST, and the child is tried again (strace here: mkdir("/proc/nope") ENOENT, mkdir("/proc") EEXIST,
 * over and over). This walks up with stat(2) to the first ancestor that exists, then creates each
 * missing directory once, top down: every error of mkdir(2) is final.
 */
import { mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";

function errnoError(code: string, syscall: string, path: string, text: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: ${text}, ${syscall} '${path}'`);
  err.code = code;
  err.syscall = syscall;
  err.path = path;
  return err;
}

async function statOrNothing(path: string) {
  try {
    return await stat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Creates `path` and its missing parents (mode 0777 & ~umask, as mkdir -p); throws the first error. */
export async function makeDir(path: string, mode?: number): Promise<void> {
  const missing: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    const info = await statOrNothing(dir);
    if (info) {
      if (!info.isDirectory()) throw errnoError("ENOTDIR", "mkdir", dir, "not a directory");
      break;
    }
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    try {
      await mkdir(dir, mode);
    } catch (err) {
      // created meanwhile by someone else: fine if it is a directory now
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || !(await statOrNothing(dir))?.isDirectory())
        throw err;
    }
  }
}
