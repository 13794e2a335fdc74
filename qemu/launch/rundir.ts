import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { mkdtemp, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pidAlive } from "../../util/pid-alive.ts";

const OWNER_FILE = "owner.pid";
/** A run dir without an owner file is a half-made one; leave it alone this long before sweeping it. */
const UNOWNED_GRACE_MS = 10 * 60 * 1000;

function readOwner(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, OWNER_FILE), "utf8");
  } catch {
    return undefined;
  }
}

/** A fresh temp dir for one run, marked with this process's pid. */
export async function createRunDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  // renamed into place: a sweep running meanwhile (another guest booting beside this one) must
  // never read a half-written owner file
  const partial = join(dir, `${OWNER_FILE}.partial`);
  await writeFile(partial, `${process.pid}\n`);
  await rename(partial, join(dir, OWNER_FILE));
  return dir;
}

/**
 * Removes run dirs left by processes that died without cleaning up (SIGKILL, a crash of Node):
 * their owner pid is gone. Returns the removed paths.
 */
export function sweepStaleRunDirs(prefix: string, root = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => n.startsWith(prefix));
  } catch {
    return removed;
  }
  for (const name of names) {
    const dir = join(root, name);
    try {
      const owner = Number.parseInt(readOwner(dir) ?? "", 10);
      const stale = owner > 0 ? !pidAlive(owner) : Date.now() - statSync(dir).mtimeMs > UNOWNED_GRACE_MS;
      if (stale) {
        rmSync(dir, { recursive: true, force: true });
        removed.push(dir);
      }
    } catch {
      // vanished meanwhile, or not ours to remove
    }
  }
  return removed;
}
