/**
 * The lock that serialises the builders of one cache entry: a file holding its owner's pid, as
 * every hil version has written it (older ones still share the cache). A lock file is created
 * with its pid already in it (written aside, then linked into place), so no one ever reads an
 * empty one; a lock whose owner died is moved aside and looked at again before it is dropped, so
 * two processes taking over one dead lock cannot both win.
 */
import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { onProcessExit } from "./cleanup.ts";
import { pidAlive } from "./pid-alive.ts";

/** An older hil opens the lock file and then writes its pid: an empty one this young is being made. */
const EMPTY_LOCK_GRACE_MS = 5_000;

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

function tryCreate(lockPath: string): boolean {
  const mine = `${lockPath}.new-${process.pid}`;
  writeFileSync(mine, String(process.pid));
  try {
    linkSync(mine, lockPath);
    return true;
  } catch (err) {
    if (errno(err) === "EEXIST") return false;
    throw err;
  } finally {
    rmSync(mine, { force: true });
  }
}

/** The owner's pid (0: none written yet) and the lock's age; undefined when the lock is gone. */
function readLock(path: string): { pid: number; ageMs: number } | undefined {
  try {
    const ageMs = Date.now() - statSync(path).mtimeMs;
    return { pid: Number.parseInt(readFileSync(path, "utf8") || "0", 10) || 0, ageMs };
  } catch (err) {
    if (errno(err) === "ENOENT") return undefined;
    throw err;
  }
}

function isDead(lock: { pid: number; ageMs: number }): boolean {
  return lock.pid === 0 ? lock.ageMs > EMPTY_LOCK_GRACE_MS : !pidAlive(lock.pid);
}

/**
 * Removes a lock judged dead. Another process may have removed it and made a new one since it was
 * looked at: the lock is moved aside first and looked at again, and one that turns out to be
 * alive is put back.
 */
function takeOver(lockPath: string): void {
  const aside = `${lockPath}.stale-${process.pid}`;
  try {
    renameSync(lockPath, aside);
  } catch (err) {
    if (errno(err) === "ENOENT") return;
    throw err;
  }
  const moved = readLock(aside);
  if (moved && !isDead(moved)) {
    try {
      linkSync(aside, lockPath);
    } catch (err) {
      if (errno(err) !== "EEXIST") throw err;
    }
  }
  rmSync(aside, { force: true });
}

/** Drops the lock if it is still ours. */
function release(lockPath: string): void {
  if (readLock(lockPath)?.pid === process.pid) rmSync(lockPath, { force: true });
}

/** An exclusive lock file holding the owner's pid; a lock whose owner died is taken over. */
export async function withLock<T>(lockPath: string, what: string, fn: () => Promise<T>): Promise<T> {
  let waitedMs = 0;
  while (!tryCreate(lockPath)) {
    const lock = readLock(lockPath);
    if (!lock) continue;
    if (isDead(lock)) {
      takeOver(lockPath);
      continue;
    }
    if (waitedMs % 30_000 === 0)
      process.stderr.write(`[cache] waiting for ${what} (pid ${lock.pid || "?"} holds it)\n`);
    await sleep(lock.pid === 0 ? 50 : 500);
    waitedMs += 500;
  }
  const unregister = onProcessExit(() => release(lockPath));
  try {
    return await fn();
  } finally {
    unregister();
    release(lockPath);
  }
}
