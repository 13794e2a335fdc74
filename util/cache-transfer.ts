/**
 * Cache entries carried between machines (the jobs of a CI pipeline): exported into a directory
 * as one tar archive per entry and an index (kind, key, what, the archive's size and sha256),
 * imported by checking each archive against the index and each entry against its own manifest
 * before anything is put in place.
 *
 * One tar per entry rather than a tree of hard links: a CI system moves a few big files well and
 * ninety thousand small ones badly (a kernel source tree), the archive's digest covers every byte
 * (the entry's manifest records its bulk trees by size alone), and the imported cache shares no
 * inode with the exporting one. An entry's own records name its files relative to its directory
 * (cache-record.ts), so an entry placed under another root works there.
 *
 * The apt package lists are carried too (kind "apt", keyed by suite): the keys of Debian kernel
 * bases and of the guest userspace are computed from them, so a machine with other lists would
 * compute other keys and build again.
 */

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, rmSync, statSync } from "node:fs";
import { lstat, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { diskFullError, writeFileAtomic } from "./atomic-write.ts";
import { cacheFullError, cacheRoot, DISK_FULL_WORDS, makeCacheDir, withLock } from "./cache.ts";
import { COMPLETE_MARK, type EntryState, inspectEntry } from "./cache-manifest.ts";
import { onProcessExit } from "./cleanup.ts";
import { HilError } from "./errors.ts";
import { shortKey } from "./hash.ts";
import { makeDir } from "./make-dir.ts";
import { progress, type Step } from "./progress.ts";

export const INDEX_FILE = "index.json";
const FORMAT = "hil-cache-export/1";
/** The kind of the apt package lists: the key is the suite, the entry apt/<suite>'s lists. */
export const APT_KIND = "apt";
/** What of apt/<suite> is carried: the lists and what apt reads with them; `updated` is placed last. */
const APT_PARTS = ["lists", "sources.list.d", "srcpkgcache.bin", "updated"] as const;
const APT_STAMP = "updated";

/** One entry to carry: its place in the cache and what it is, for people. */
export interface TransferEntry {
  /** "kernel", "image/userspace", "kmod/hil_kverbs", "apt", ... */
  kind: string;
  /** the entry's key (for apt: the suite) */
  key: string;
  what: string;
}

export interface IndexEntry extends TransferEntry {
  /** the archive, relative to the export directory */
  file: string;
  /** the archive's size and sha256 */
  size: number;
  sha256: string;
  /** the size of the files archived */
  contentBytes: number;
  /** recorded: the entry has a manifest; unrecorded: made before entries were recorded; lists: apt's */
  form: "recorded" | "unrecorded" | "lists";
}

export interface ExportIndex {
  format: typeof FORMAT;
  createdAt: string;
  /** what was asked for, e.g. "--kernel debian:6.12" */
  selection: string;
  entries: IndexEntry[];
}

function label(e: TransferEntry): string {
  return `${e.kind}/${e.kind === APT_KIND ? e.key : shortKey(e.key)} (${e.what})`;
}

function entryDir(root: string, e: TransferEntry): string {
  return join(root, e.kind, e.key);
}

function archiveName(e: TransferEntry): string {
  return `${e.kind.replaceAll("/", "+")}.${e.key}.tar`;
}

/** Bytes as "12.3 MB". */
export function megabytes(n: number): string {
  return `${(n / 1e6).toFixed(1)} MB`;
}

/**
 * The size of the regular files below `path`, and about what tar makes of them: a 512-byte header
 * per member, each file's data rounded up to 512 bytes (for the progress bar's total).
 */
export async function treeBytes(path: string): Promise<{ bytes: number; tarBytes: number }> {
  const s = await lstat(path);
  if (!s.isDirectory()) {
    const bytes = s.isFile() ? s.size : 0;
    return { bytes, tarBytes: 512 + Math.ceil(bytes / 512) * 512 };
  }
  const total = { bytes: 0, tarBytes: 512 };
  for (const name of await readdir(path)) {
    const sub = await treeBytes(join(path, name));
    total.bytes += sub.bytes;
    total.tarBytes += sub.tarBytes;
  }
  return total;
}

/** A pass-through that hashes and counts what flows through it, reporting progress. */
function meter(step: Step, total: number): { stream: Transform; digest: () => string; bytes: () => number } {
  const hash = createHash("sha256");
  let bytes = 0;
  let shown = -1;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      // redrawn once a megabyte, not once a chunk
      const mb = Math.round(bytes / 1e6);
      if (mb !== shown) {
        shown = mb;
        step.update(mb, Math.max(1, Math.round(total / 1e6)), "MB");
      }
      done(null, chunk);
    },
  });
  return { stream, digest: () => hash.digest("hex"), bytes: () => bytes };
}

/** Why tar failed, in its own words (its first line). */
class TarFailure extends Error {
  constructor(
    readonly code: number,
    readonly said: string,
    readonly args: readonly string[],
  ) {
    super(`tar ${args[0]} exited with status ${code}: ${said.trim().split("\n")[0]}`);
  }
}

/** Runs tar with one end of its data on a stream; rejects with tar's own words when it fails. */
function tar(
  args: readonly string[],
  connect: (child: ReturnType<typeof spawn>) => Promise<void>,
): Promise<void> {
  const child = spawn("tar", args, { stdio: ["pipe", "pipe", "pipe"] });
  let said = "";
  child.stderr?.on("data", (d: Buffer) => {
    said += d.toString();
  });
  const exited = new Promise<number>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve(code ?? 1));
  });
  return Promise.all([connect(child), exited]).then(
    ([, code]) => {
      if (code !== 0) throw new TarFailure(code, said, args);
    },
    async (err: unknown) => {
      child.kill();
      await exited.catch(() => 1);
      throw new Error(`${(err as Error).message}${said ? `; tar said: ${said.trim().split("\n")[0]}` : ""}`, {
        cause: err,
      });
    },
  );
}

const CHANGED_AS_READ = /^tar: (.+): file changed as we read it$/;

/**
 * The files tar said changed while it read them, if that is all it said (GNU tar exits 1 for it).
 * tar compares a file's ctime before and after reading it, and a hard link made to the file (a
 * patched kernel tree made with `cp -al` from a cached base) changes the ctime, not the bytes.
 */
function changedAsRead(failure: TarFailure): string[] | undefined {
  if (failure.code !== 1) return undefined;
  const lines = failure.said.trim().split("\n").filter(Boolean);
  const files = lines.map((l) => CHANGED_AS_READ.exec(l)?.[1]);
  return files.length > 0 && files.every((f) => f !== undefined) ? (files as string[]) : undefined;
}

/**
 * Of the files tar saw change, those whose content changed since `since` (ms): written (a newer
 * mtime) or gone. The others only gained or lost a link, or changed mode or owner: the bytes tar
 * archived are the entry's.
 */
export async function contentChangedSince(
  dir: string,
  files: readonly string[],
  since: number,
): Promise<string[]> {
  const changed: string[] = [];
  for (const f of files) {
    const s = await lstat(join(dir, f)).catch(() => undefined);
    if (!s || s.mtimeMs >= since) changed.push(f);
  }
  return changed;
}

/** The state of an entry as an export or import sees it (apt lists: there when their stamp is). */
async function entryState(root: string, e: TransferEntry): Promise<EntryState> {
  const dir = entryDir(root, e);
  if (e.kind === APT_KIND)
    return existsSync(join(dir, APT_STAMP)) ? { state: "unrecorded" } : { state: "absent" };
  return inspectEntry(dir, { contents: true });
}

/** The entry's lock: the builders' own (apt: the lists' lock, as aptContext takes it). */
function lockOf(root: string, e: TransferEntry): string {
  const dir = entryDir(root, e);
  return e.kind === APT_KIND ? join(dir, "lock") : `${dir}.lock`;
}

/** What of the entry goes into its archive, relative to the directory of its kind. */
function members(e: TransferEntry): string[] {
  return e.kind === APT_KIND ? APT_PARTS.map((p) => `${e.key}/${p}`) : [e.key];
}

/**
 * Writes the archive of one entry into `out`, under the entry's lock (no builder replaces it
 * meanwhile). An entry that is missing or damaged is an error naming it.
 */
async function exportOne(root: string, e: TransferEntry, out: string): Promise<IndexEntry> {
  const dir = entryDir(root, e);
  if (!existsSync(dir)) throw new HilError(`cache entry ${label(e)} is not in the cache`, { where: dir });
  return withLock(
    lockOf(root, e),
    `${e.what} (${e.kind === APT_KIND ? e.key : shortKey(e.key)})`,
    async () => {
      const state = await entryState(root, e);
      if (state.state === "absent")
        throw new HilError(`cache entry ${label(e)} is not in the cache`, { where: dir });
      if (state.state === "damaged")
        throw new HilError(
          `cache entry ${label(e)} is damaged: ${state.problem.file} ${state.problem.what}`,
          {
            where: dir,
            detail: "a hil command that uses it rebuilds it; export after that",
          },
        );
      const parts = members(e).filter((m) => existsSync(join(root, e.kind, m)));
      let contentBytes = 0;
      let tarBytes = 0;
      for (const m of parts) {
        const sizes = await treeBytes(join(root, e.kind, m));
        contentBytes += sizes.bytes;
        tarBytes += sizes.tarBytes;
      }
      const file = archiveName(e);
      const path = join(out, file);
      const step = progress.step(`[cache] exporting ${label(e)}`);
      const m = meter(step, tarBytes);
      const kindDir = join(root, e.kind);
      // a whole millisecond earlier: mtimes are finer than Date.now()
      const since = Date.now() - 1;
      let relinked: string[] = [];
      try {
        const excludes =
          e.kind === APT_KIND ? [`--exclude=${e.key}/lists/partial`, `--exclude=${e.key}/lists/lock`] : [];
        await tar(["-c", "-C", kindDir, ...excludes, "-f", "-", ...parts], async (child) => {
          if (!child.stdout) throw new Error("tar has no stdout");
          await pipeline(child.stdout, m.stream, createWriteStream(path));
        }).catch(async (err: unknown) => {
          const seen = err instanceof TarFailure ? changedAsRead(err) : undefined;
          if (!seen) throw err;
          const written = await contentChangedSince(kindDir, seen, since);
          if (written.length > 0)
            throw new Error(
              `${written.length} file(s) written while they were archived, first ${written[0]?.replace(`${e.key}/`, "")} (another process writes into a finished entry)`,
            );
          relinked = seen;
        });
      } catch (err) {
        step.fail();
        throw (
          diskFull(err, `the archive of ${label(e)}`) ??
          new HilError(`cache entry ${label(e)} cannot be exported: ${(err as Error).message}`, {
            where: dir,
            exitCode: 3,
            cause: err,
          })
        );
      }
      step.succeed(
        `${megabytes(m.bytes())}${relinked.length > 0 ? ` (${relinked.length} file(s) gained or lost a hard link meanwhile; their bytes did not change)` : ""}`,
      );
      return {
        ...e,
        file,
        size: m.bytes(),
        sha256: m.digest(),
        contentBytes,
        form: e.kind === APT_KIND ? "lists" : state.state === "intact" ? "recorded" : "unrecorded",
      };
    },
  );
}

function diskFull(err: unknown, what: string): HilError | undefined {
  const errno = diskFullError(err);
  if (errno === undefined && !DISK_FULL_WORDS.test(String(err))) return undefined;
  return new HilError(`no space is left for ${what}`, {
    detail: String((err as Error).message ?? err),
    exitCode: 3,
    cause: err,
  });
}

/** An output directory that does not exist or is empty, made; anything else is an error naming it. */
async function claimOut(out: string): Promise<boolean> {
  if (!existsSync(out)) {
    try {
      await makeDir(out);
    } catch (err) {
      throw new HilError("the export directory cannot be made", {
        where: out,
        detail: (err as Error).message,
      });
    }
    return true;
  }
  if (!statSync(out).isDirectory())
    throw new HilError("the export directory is not a directory", { where: out });
  if ((await readdir(out)).length > 0)
    throw new HilError("the export directory is not empty (an export goes into a new or empty directory)", {
      where: out,
    });
  return false;
}

/**
 * Exports `entries` of the cache into `out` (which must not exist, or be empty): an archive per
 * entry, then the index, written last. A failed export removes what it wrote.
 */
export async function exportEntries(
  entries: readonly TransferEntry[],
  out: string,
  selection: string,
): Promise<ExportIndex> {
  const root = cacheRoot();
  const made = await claimOut(out);
  const written: string[] = [];
  const unregister = onProcessExit(() => {
    // an interrupted export leaves nothing of itself
    for (const f of written) rmSync(join(out, f), { force: true });
  });
  try {
    const done: IndexEntry[] = [];
    for (const e of entries) {
      written.push(archiveName(e));
      done.push(await exportOne(root, e, out));
    }
    const index: ExportIndex = {
      format: FORMAT,
      createdAt: new Date().toISOString(),
      selection,
      entries: done,
    };
    await writeFileAtomic(join(out, INDEX_FILE), `${JSON.stringify(index, null, 2)}\n`);
    return index;
  } catch (err) {
    for (const f of written) await rm(join(out, f), { force: true });
    if (made) await rm(out, { recursive: true, force: true });
    throw err;
  } finally {
    unregister();
  }
}

const HEX64 = /^[0-9a-f]{64}$/;
const SAFE_KIND = /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9_-]*)?$/i;
const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The index of an export directory, checked field by field; anything wrong is an error naming it. */
export async function readExportIndex(dir: string): Promise<ExportIndex> {
  if (!existsSync(dir)) throw new HilError("the export directory does not exist", { where: dir });
  if (!statSync(dir).isDirectory())
    throw new HilError("the export directory is not a directory", { where: dir });
  const file = join(dir, INDEX_FILE);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    throw new HilError(
      existsSync(file)
        ? "the export's index is not JSON"
        : `no ${INDEX_FILE}: not a directory written by hil cache export`,
      { where: existsSync(file) ? file : dir, detail: existsSync(file) ? (err as Error).message : undefined },
    );
  }
  const index = parsed as Partial<ExportIndex>;
  if (index.format !== FORMAT || !Array.isArray(index.entries))
    throw new HilError(`the export's index is not a ${FORMAT} index`, { where: file });
  index.entries.forEach((e: Partial<IndexEntry>, i) => {
    const ok =
      typeof e.kind === "string" &&
      SAFE_KIND.test(e.kind) &&
      typeof e.key === "string" &&
      SAFE_KEY.test(e.key) &&
      typeof e.what === "string" &&
      typeof e.file === "string" &&
      e.file === archiveName(e as TransferEntry) &&
      Number.isSafeInteger(e.size) &&
      typeof e.sha256 === "string" &&
      HEX64.test(e.sha256) &&
      (e.form === "recorded" || e.form === "unrecorded" || e.form === "lists") &&
      (e.form === "lists") === (e.kind === APT_KIND);
    if (!ok) throw new HilError(`entry ${i + 1} of the export's index is malformed`, { where: file });
  });
  return index as ExportIndex;
}

export interface ImportOutcome {
  placed: IndexEntry[];
  /** already in the cache and intact */
  skipped: IndexEntry[];
}

/** A staging directory for an entry, beside its place (one rename away), named for sweepStale. */
function stagingDir(root: string, e: TransferEntry): string {
  return `${entryDir(root, e)}.tmp-${process.pid}`;
}

/**
 * Extracts one archive into its staging directory while hashing what is read, then checks the
 * digest against the index and the extracted entry against its own manifest.
 */
async function stageOne(dir: string, root: string, e: IndexEntry): Promise<string> {
  const archive = join(dir, e.file);
  const corrupt = (what: string, detail?: string) =>
    new HilError(`the export is corrupt: the archive of ${label(e)} ${what}`, {
      where: archive,
      detail: `${detail ? `${detail}\n` : ""}nothing was placed in the cache; export it again`,
    });
  const staging = stagingDir(root, e);
  await rm(staging, { recursive: true, force: true });
  await makeCacheDir(staging);
  const step = progress.step(`[cache] importing ${label(e)}`);
  const m = meter(step, e.size);
  try {
    await tar(["-x", "--ignore-zeros", "-C", staging, "-f", "-"], async (child) => {
      if (!child.stdin) throw new Error("tar has no stdin");
      await pipeline(createReadStream(archive), m.stream, child.stdin);
    });
  } catch (err) {
    step.fail();
    throw diskFull(err, `${label(e)} in the cache`) ?? corrupt("cannot be unpacked", (err as Error).message);
  }
  if (m.digest() !== e.sha256) {
    step.fail();
    throw corrupt("differs from its sha256 in the index");
  }
  const unpacked = join(staging, e.key);
  if (e.form === "lists") {
    if (!existsSync(join(unpacked, APT_STAMP))) throw corrupt(`holds no ${APT_STAMP} stamp`);
  } else {
    const state = await inspectEntry(unpacked, { contents: true });
    const expected = e.form === "recorded" ? "intact" : "unrecorded";
    if (state.state !== expected) {
      step.fail();
      const why =
        state.state === "damaged"
          ? `${state.problem.file} ${state.problem.what}`
          : state.state === "absent"
            ? `no ${COMPLETE_MARK} marker`
            : "its marker is not a manifest";
      throw corrupt(`holds an entry that does not match its manifest: ${why}`);
    }
  }
  step.succeed(megabytes(e.size));
  return unpacked;
}

/** Moves a staged entry into its place under the entry's lock, unless an intact one got there first. */
async function placeOne(root: string, e: IndexEntry, unpacked: string): Promise<boolean> {
  const dir = entryDir(root, e);
  // the lists' lock lies in their directory
  if (e.kind === APT_KIND) await makeCacheDir(dir);
  return withLock(
    lockOf(root, e),
    `${e.what} (${e.kind === APT_KIND ? e.key : shortKey(e.key)})`,
    async () => {
      const now = await entryState(root, e);
      if (e.kind === APT_KIND) {
        if (now.state !== "absent") return false;
        for (const part of APT_PARTS) {
          if (!existsSync(join(unpacked, part))) continue;
          await rm(join(dir, part), { recursive: true, force: true });
          await rename(join(unpacked, part), join(dir, part));
        }
        return true;
      }
      if (now.state === "intact") return false;
      if (existsSync(dir)) {
        // a damaged or unrecorded entry: moved aside in one step, then removed
        const aside = `${dir}.discard-${process.pid}`;
        await rename(dir, aside);
        await rename(unpacked, dir);
        await rm(aside, { recursive: true, force: true });
      } else await rename(unpacked, dir);
      return true;
    },
  );
}

/**
 * Imports an export directory into the cache: entries already there and intact are skipped; the
 * others are unpacked beside their places and checked (archive digest, entry manifest), all of
 * them before any is placed, so a corrupt or truncated export is one error naming the entry and
 * places nothing. Each entry is then renamed into place under its lock.
 */
export async function importEntries(dir: string): Promise<ImportOutcome> {
  const index = await readExportIndex(dir);
  const root = cacheRoot();
  const skipped: IndexEntry[] = [];
  const wanted: IndexEntry[] = [];
  for (const e of index.entries) {
    const state = await entryState(root, e);
    if (state.state === "intact" || (e.kind === APT_KIND && state.state !== "absent")) skipped.push(e);
    else wanted.push(e);
  }
  // a truncated or missing archive is found before anything is unpacked
  for (const e of wanted) {
    const archive = join(dir, e.file);
    const size = await stat(archive).then(
      (s) => s.size,
      () => undefined,
    );
    if (size !== e.size)
      throw new HilError(
        `the export is corrupt: the archive of ${label(e)} ${size === undefined ? "is missing" : `is ${size} bytes, the index says ${e.size}`}`,
        { where: archive, detail: "nothing was placed in the cache; export it again" },
      );
  }
  const staged: Array<[IndexEntry, string]> = [];
  const cleanup = () =>
    Promise.all(wanted.map((e) => rm(stagingDir(root, e), { recursive: true, force: true })));
  const unregister = onProcessExit(() => {
    for (const e of wanted) rmSync(stagingDir(root, e), { recursive: true, force: true });
  });
  const placed: IndexEntry[] = [];
  try {
    for (const e of wanted) staged.push([e, await stageOne(dir, root, e)]);
    for (const [e, unpacked] of staged) {
      if (await placeOne(root, e, unpacked)) placed.push(e);
      else skipped.push(e);
    }
  } catch (err) {
    if (diskFullError(err)) throw cacheFullError("an imported entry could not be unpacked", { cause: err });
    throw err;
  } finally {
    await cleanup();
    unregister();
  }
  return { placed, skipped };
}

/** Never entries: leftovers of interrupted builds, locks, and hidden bookkeeping (cache-use.ts's .last-use). */
const NOT_AN_ENTRY = /\.(tmp|discard|lock|new|stale)(-\d+)?$|\.lock\.(new|stale)-\d+$|^\./;

async function subdirs(dir: string): Promise<string[]> {
  const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return names
    .filter((d) => d.isDirectory() && !NOT_AN_ENTRY.test(d.name))
    .map((d) => d.name)
    .sort();
}

/**
 * Every entry of the cache: each complete entry of each kind (a kind may be nested one level,
 * e.g. image/userspace), and the package lists of each suite.
 */
export async function allEntries(root = cacheRoot()): Promise<TransferEntry[]> {
  const out: TransferEntry[] = [];
  for (const top of await subdirs(root)) {
    if (top === APT_KIND) {
      for (const suite of await subdirs(join(root, top)))
        if (existsSync(join(root, top, suite, APT_STAMP)))
          out.push({ kind: APT_KIND, key: suite, what: `package lists of Debian ${suite}` });
      continue;
    }
    for (const name of await subdirs(join(root, top))) {
      if (existsSync(join(root, top, name, COMPLETE_MARK))) {
        out.push({ kind: top, key: name, what: `${top} entry` });
        continue;
      }
      for (const key of await subdirs(join(root, top, name)))
        if (existsSync(join(root, top, name, key, COMPLETE_MARK)))
          out.push({ kind: `${top}/${name}`, key, what: `${top}/${name} entry` });
    }
  }
  return out;
}
