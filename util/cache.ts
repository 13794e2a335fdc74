/**
 * The cache: where it lives, and entries in it built once per key, checked on every use against
 * the manifest recorded when they were built (cache-manifest.ts), rebuilt when damaged, built by
 * one process at a time (cache-lock.ts).
 */
import { existsSync, rmSync } from "node:fs";
import { readdir, rename, rm, statfs } from "node:fs/promises";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { diskFullError } from "./atomic-write.ts";
import { withLock } from "./cache-lock.ts";
import {
  COMPLETE_MARK,
  describeEntry,
  type EntryProblem,
  type EntryState,
  inspectEntry,
  type ManifestPolicy,
  rememberChecked,
  writeMarker,
} from "./cache-manifest.ts";
import { markUsed } from "./cache-use.ts";
import { onProcessExit } from "./cleanup.ts";
import { ENVIRONMENT_EXIT, HilError } from "./errors.ts";
import { shortKey } from "./hash.ts";
import { makeDir } from "./make-dir.ts";
import { pidAlive } from "./pid-alive.ts";
import { progress } from "./progress.ts";

export { withLock } from "./cache-lock.ts";
export type { EntryProblem, EntryState } from "./cache-manifest.ts";

/** Where every cached artifact lives: $HIL_CACHE_DIR, else $XDG_CACHE_HOME/erdma-hil, else ~/.cache/erdma-hil. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HIL_CACHE_DIR) return resolve(env.HIL_CACHE_DIR);
  const xdg =
    env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.length > 0 ? env.XDG_CACHE_HOME : join(homedir(), ".cache");
  return join(xdg, "erdma-hil");
}

/**
 * Makes a directory of the cache (and its parents). One that cannot be made (HIL_CACHE_DIR under
 * /proc, on a read-only file system, a file in the way) is one HilError naming the cache, not a
 * stack.
 */
export async function makeCacheDir(path: string): Promise<void> {
  try {
    await makeDir(path);
  } catch (err) {
    throw new HilError("the cache's directories cannot be made", {
      where: cacheRoot(),
      detail: `${(err as Error).message}\nset HIL_CACHE_DIR to a directory hil can write, or make this one writable`,
      cause: err,
    });
  }
}

export function cachePath(kind: string, key: string): string {
  return join(cacheRoot(), kind, key);
}

/** Whether the entry was completed (its files are not looked at: see findIntactEntry). */
export function isComplete(dir: string): boolean {
  return existsSync(join(dir, COMPLETE_MARK));
}

/**
 * Whether the entry is complete and its files have their recorded sizes, without locking or
 * reading them (for questions that must stay fast, like `hil --version`). An entry made before
 * entries were recorded counts as intact: its first use records it.
 */
export async function findIntactEntry(dir: string): Promise<boolean> {
  const s = await inspectEntry(dir, { contents: false });
  return s.state === "intact" || s.state === "unrecorded";
}

export interface EntryOptions extends ManifestPolicy {
  /** A short label for messages, e.g. "kernel debian:6.12". */
  what: string;
  /**
   * Build in the final directory and mark it complete at the end, for artifacts that record
   * their own absolute path (a kernel build tree). Otherwise build in a temp dir and rename.
   */
  inPlace?: boolean;
  /**
   * What is wrong with an entry made before entries were recorded, if anything can be told from
   * its files (a kernel image shorter than its header says); run once, before it is adopted.
   */
  validate?: (dir: string) => Promise<EntryProblem | undefined>;
}

function entryLabel(kind: string, key: string, opts: EntryOptions): string {
  return `cache entry ${kind}/${shortKey(key)} (${opts.what})`;
}

function noticeDamage(label: string, problem: EntryProblem): void {
  progress.info(`[cache] ${label}: ${problem.file} ${problem.what}: rebuilding`);
}

/** Moves an entry out of its place in one step (and `successor` into it), then removes it. */
export async function discard(dir: string, successor?: string): Promise<void> {
  const aside = `${dir}.discard-${process.pid}`;
  await rm(aside, { recursive: true, force: true });
  await rename(dir, aside);
  if (successor) await rename(successor, dir);
  await rm(aside, { recursive: true, force: true });
}

/**
 * Records the manifest of an entry made before entries were recorded: its files are trusted as
 * they are, once (unless `validate` finds something wrong). Returns the problem found, if any.
 */
async function adopt(dir: string, label: string, opts: EntryOptions): Promise<EntryProblem | undefined> {
  const wrong = await opts.validate?.(dir);
  if (wrong) return wrong;
  progress.info(
    `[cache] ${label}: made before cache entries were recorded; recording its files as they are (trusted once)`,
  );
  const manifest = { ...(await describeEntry(dir, opts)), adopted: true as const };
  await writeMarker(dir, manifest);
  rememberChecked(dir, manifest);
  return undefined;
}

/**
 * Returns the directory of a complete cache entry, building it with `build(dir)` if missing or
 * damaged (a file of another size or digest than recorded: one notice line names it). A failed
 * or interrupted build leaves nothing behind: its directory is removed.
 */
export async function ensureEntry(
  kind: string,
  key: string,
  opts: EntryOptions,
  build: (dir: string) => Promise<void>,
): Promise<{ dir: string; built: boolean }> {
  const parent = join(cacheRoot(), kind);
  const dir = join(parent, key);
  const label = entryLabel(kind, key, opts);
  if ((await inspectEntry(dir, { contents: true })).state === "intact") {
    await markUsed(cacheRoot(), kind, key);
    return { dir, built: false };
  }
  await makeCacheDir(parent);
  const result = await withLock(`${dir}.lock`, `${opts.what} (${shortKey(key)})`, async () => {
    // another process may have built, rebuilt or adopted it meanwhile
    const now = await inspectEntry(dir, { contents: true });
    if (now.state === "intact") return { dir, built: false };
    let damage = now.state === "damaged" ? now.problem : undefined;
    if (now.state === "unrecorded") {
      damage = await adopt(dir, label, opts);
      if (!damage) return { dir, built: false };
    }
    if (damage) {
      noticeDamage(label, damage);
      await discard(dir);
    } else await rm(dir, { recursive: true, force: true });
    const work = opts.inPlace ? dir : `${dir}.tmp-${process.pid}`;
    await buildRecorded(work, dir, parent, label, opts, build, async () => {
      if (!opts.inPlace) await rename(work, dir);
    });
    return { dir, built: true };
  });
  await markUsed(cacheRoot(), kind, key);
  return result;
}

/**
 * Builds an entry in `work` and records it (manifest and marker), then `place` puts it at `dir`.
 * A failed build leaves nothing of `work`, and one that failed on a full file system is the one
 * error saying so.
 */
async function buildRecorded(
  work: string,
  dir: string,
  parent: string,
  label: string,
  opts: EntryOptions,
  build: (dir: string) => Promise<void>,
  place: () => Promise<void>,
): Promise<void> {
  await rm(work, { recursive: true, force: true });
  await makeDir(work);
  const unregister = onProcessExit(() => rmSync(work, { recursive: true, force: true }));
  try {
    await build(work);
    const manifest = await describeEntry(work, opts);
    await writeMarker(work, manifest);
    await place();
    rememberChecked(dir, manifest);
  } catch (err) {
    // asked before the half-built entry goes, which frees the space again
    const full = await cacheFull(parent, label, err);
    await rm(work, { recursive: true, force: true });
    throw full ?? err;
  } finally {
    unregister();
  }
}

/**
 * Builds the entry anew and puts it in place of the one there (if any), under the entry's lock:
 * for entries that record an observation rather than a build, which a newer observation replaces.
 * The new entry is built and recorded aside, then swapped in (the old one moved aside first, then
 * removed), so a reader holding the lock finds the old entry or the new one, complete.
 */
export async function replaceEntry(
  kind: string,
  key: string,
  opts: EntryOptions,
  build: (dir: string) => Promise<void>,
): Promise<{ dir: string }> {
  const parent = join(cacheRoot(), kind);
  const dir = join(parent, key);
  await makeCacheDir(parent);
  return withLock(`${dir}.lock`, `${opts.what} (${shortKey(key)})`, async () => {
    const work = `${dir}.tmp-${process.pid}`;
    await buildRecorded(work, dir, parent, entryLabel(kind, key, opts), opts, build, async () => {
      if (existsSync(dir)) await discard(dir, work);
      else await rename(work, dir);
    });
    await markUsed(cacheRoot(), kind, key);
    return { dir };
  });
}

/**
 * The state of a cache entry (its files' digests checked once per process), with `use` run on it
 * under the entry's lock, so no builder replaces it meanwhile.
 */
export async function withEntry<T>(
  kind: string,
  key: string,
  what: string,
  use: (dir: string, state: EntryState) => Promise<T>,
): Promise<T> {
  const parent = join(cacheRoot(), kind);
  const dir = join(parent, key);
  await makeCacheDir(parent);
  return withLock(`${dir}.lock`, `${what} (${shortKey(key)})`, async () => {
    const state = await inspectEntry(dir, { contents: true });
    if (state.state === "intact") await markUsed(cacheRoot(), kind, key);
    return use(dir, state);
  });
}

/** Free space under which a failed build is put down to a full file system (a tool's message may not say). */
const NEARLY_FULL_BYTES = 1024 * 1024;

/**
 * The one error a build that failed on a full file system becomes: an ENOSPC/EDQUOT error in its
 * chain, a tool that said "No space left on device", or a file system with (nearly) nothing left.
 * Undefined for any other failure.
 */
async function cacheFull(parent: string, label: string, err: unknown): Promise<HilError | undefined> {
  const errno = diskFullError(err);
  let full = errno !== undefined || DISK_FULL_WORDS.test(String(err));
  if (!full) {
    const fs = await statfs(parent).catch(() => undefined);
    full = fs !== undefined && fs.bavail * fs.bsize < NEARLY_FULL_BYTES;
  }
  if (!full) return undefined;
  return cacheFullError(`${label} could not be built`, {
    quota: errno?.code === "EDQUOT" || /Disk quota exceeded/.test(String(err)),
    said: `the build said: ${(err instanceof Error ? err.message : String(err)).split("\n")[0]}`,
    halfBuilt: true,
    cause: err,
  });
}

/** How tools (apt, tar, cp, gzip) say ENOSPC or EDQUOT: strerror's words. */
export const DISK_FULL_WORDS = /No space left on device|Disk quota exceeded/;

/**
 * The one error a full file system under the cache is: `what` (what could not be written) on the
 * cache's file system, exit 3 (the machine's, not the input's).
 */
export function cacheFullError(
  what: string,
  opts: { quota?: boolean; said?: string; halfBuilt?: boolean; cause?: unknown } = {},
): HilError {
  return new HilError(
    `${opts.quota ? "the disk quota is exceeded" : "no space is left"} on the cache's file system: ${what}`,
    {
      where: cacheRoot(),
      detail: [
        `(${opts.quota ? "EDQUOT" : "ENOSPC"}) free space there, or set HIL_CACHE_DIR to a directory on a larger file system${opts.halfBuilt ? "; what was half built is removed" : ""}`,
        ...(opts.said ? [opts.said] : []),
      ].join("\n"),
      exitCode: ENVIRONMENT_EXIT,
      ...(opts.cause === undefined ? {} : { cause: opts.cause }),
    },
  );
}

/** Leftovers of interrupted builds, discards and lock takeovers, named after the process that made them. */
const LEFTOVER = /\.(tmp|discard|lock\.new|lock\.stale)-(\d+)$/;

/** Removes leftovers of interrupted builds (".tmp-<pid>" dirs whose pid is gone, and the like). */
export async function sweepStale(kind: string): Promise<void> {
  const parent = join(cacheRoot(), kind);
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const m = LEFTOVER.exec(name);
    if (m && !pidAlive(Number(m[2]))) await rm(join(parent, name), { recursive: true, force: true });
  }
}

export function requireComplete(dir: string, what: string): string {
  if (!isComplete(dir)) throw new HilError(`${what} is not built`, { where: dir });
  return dir;
}
