import { closeSync, existsSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { onProcessExit } from "./cleanup.ts";
import { HilError } from "./errors.ts";
import { shortKey } from "./hash.ts";

/** Where every cached artifact lives: $HIL_CACHE_DIR, else $XDG_CACHE_HOME/erdma-hil, else ~/.cache/erdma-hil. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HIL_CACHE_DIR) return env.HIL_CACHE_DIR;
  const xdg =
    env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.length > 0 ? env.XDG_CACHE_HOME : join(homedir(), ".cache");
  return join(xdg, "erdma-hil");
}

export function cachePath(kind: string, key: string): string {
  return join(cacheRoot(), kind, key);
}

const COMPLETE_MARK = ".complete";

export function isComplete(dir: string): boolean {
  return existsSync(join(dir, COMPLETE_MARK));
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** An exclusive lock file holding the owner's pid; a lock whose owner died is taken over. */
export async function withLock<T>(lockPath: string, what: string, fn: () => Promise<T>): Promise<T> {
  let waitedMs = 0;
  for (;;) {
    try {
      const fd = openSync(lockPath, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number.parseInt(readFileSync(lockPath, "utf8") || "0", 10);
      if (!owner || !pidAlive(owner)) {
        rmSync(lockPath, { force: true });
        continue;
      }
      if (waitedMs % 30_000 === 0)
        process.stderr.write(`[cache] waiting for ${what} (pid ${owner} holds it)\n`);
      await sleep(500);
      waitedMs += 500;
    }
  }
  const unregister = onProcessExit(() => rmSync(lockPath, { force: true }));
  try {
    return await fn();
  } finally {
    unregister();
    rmSync(lockPath, { force: true });
  }
}

export interface EntryOptions {
  /** A short label for messages, e.g. "kernel debian:6.12". */
  what: string;
  /**
   * Build in the final directory and mark it complete at the end, for artifacts that record
   * their own absolute path (a kernel build tree). Otherwise build in a temp dir and rename.
   */
  inPlace?: boolean;
}

/**
 * Returns the directory of a complete cache entry, building it with `build(dir)` if missing.
 * A failed or interrupted build leaves nothing behind: its directory is removed.
 */
export async function ensureEntry(
  kind: string,
  key: string,
  opts: EntryOptions,
  build: (dir: string) => Promise<void>,
): Promise<{ dir: string; built: boolean }> {
  const parent = join(cacheRoot(), kind);
  const dir = join(parent, key);
  if (isComplete(dir)) return { dir, built: false };
  await mkdir(parent, { recursive: true });
  return withLock(`${dir}.lock`, `${opts.what} (${shortKey(key)})`, async () => {
    if (isComplete(dir)) return { dir, built: false };
    await rm(dir, { recursive: true, force: true });
    const work = opts.inPlace ? dir : `${dir}.tmp-${process.pid}`;
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true });
    const unregister = onProcessExit(() => rmSync(work, { recursive: true, force: true }));
    try {
      await build(work);
      await writeFile(join(work, COMPLETE_MARK), `${new Date().toISOString()}\n`);
      if (!opts.inPlace) await rename(work, dir);
    } catch (err) {
      await rm(work, { recursive: true, force: true });
      throw err;
    } finally {
      unregister();
    }
    return { dir, built: true };
  });
}

/** Removes leftovers of interrupted builds (".tmp-<pid>" dirs whose pid is gone). */
export async function sweepStale(kind: string): Promise<void> {
  const parent = join(cacheRoot(), kind);
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /\.tmp-(\d+)$/.exec(name);
    if (m && !pidAlive(Number(m[1]))) await rm(join(parent, name), { recursive: true, force: true });
  }
}

export function requireComplete(dir: string, what: string): string {
  if (!isComplete(dir)) throw new HilError(`${what} is not built`, { where: dir });
  return dir;
}
