/**
 * What a complete cache entry holds, recorded when it is completed: each regular file's path
 * (relative to the entry), size and sha256; the files of trees an entry names as bulk (a kernel
 * build tree, an unpacked source tree) by size alone. The record is the entry's completion marker,
 * written last and atomically (a temp file renamed into place), so an entry is either complete and
 * described or not complete.
 *
 * On use the entry is checked against it: the sizes of the hashed files on every use (a stat
 * each), their digests and the sizes of the bulk files once per process (memoized per entry and
 * marker). Symbolic links and directories are not recorded.
 */
import { createHash } from "node:crypto";
import { type Dirent, readFileSync, statSync } from "node:fs";
import { readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { hashFile } from "./hash.ts";

export const COMPLETE_MARK = ".complete";
const FORMAT = "hil-cache-entry/1";

export interface EntryManifest {
  format: typeof FORMAT;
  /** when the entry was completed, or adopted */
  at: string;
  /** set on an entry made before entries were recorded: its files were trusted as they were */
  adopted?: true;
  /** path -> [size, sha256] */
  hashed: Record<string, [number, string]>;
  /** path -> size: the files below the entry's bulk directories */
  sized: Record<string, number>;
}

export interface ManifestPolicy {
  /**
   * Directories of the entry (relative paths) whose files are recorded by size alone: big trees
   * that feed later builds and are never booted (a kernel's O= build tree, an unpacked source).
   */
  bulk?: readonly string[];
}

function isBulk(path: string, bulk: readonly string[]): boolean {
  return bulk.some((d) => path === d || path.startsWith(`${d}/`));
}

/** The regular files below `dir` (relative paths, sorted), the marker and its temp files aside. */
async function entryFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(rel: string): Promise<void> {
    const entries: Dirent[] = await readdir(join(dir, rel), { withFileTypes: true });
    for (const e of entries) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (!rel && e.name.startsWith(COMPLETE_MARK)) continue;
      if (e.isDirectory()) await walk(path);
      else if (e.isFile()) out.push(path);
    }
  }
  await walk("");
  return out.sort();
}

/** Files up to this size are read whole to be hashed: one read, not a stream's many. */
const READ_WHOLE = 4 * 1024 * 1024;

async function digest(file: string, size: number): Promise<string> {
  if (size > READ_WHOLE) return hashFile(file);
  return createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
}

/** Reads every file of the entry: what its marker will record. */
export async function describeEntry(dir: string, policy: ManifestPolicy = {}): Promise<EntryManifest> {
  const hashed: EntryManifest["hashed"] = {};
  const sized: EntryManifest["sized"] = {};
  for (const path of await entryFiles(dir)) {
    const file = join(dir, path);
    const size = statSync(file).size;
    if (isBulk(path, policy.bulk ?? [])) sized[path] = size;
    else hashed[path] = [size, await digest(file, size)];
  }
  return { format: FORMAT, at: new Date().toISOString(), hashed, sized };
}

/** Writes the marker: aside first, then renamed into place. */
export async function writeMarker(dir: string, manifest: EntryManifest): Promise<void> {
  const aside = join(dir, `${COMPLETE_MARK}.tmp-${process.pid}`);
  await writeFile(aside, `${JSON.stringify(manifest)}\n`);
  await rename(aside, join(dir, COMPLETE_MARK));
}

/** One thing wrong with an entry: the file, and what is wrong with it ("is missing", ...). */
export interface EntryProblem {
  file: string;
  what: string;
}

export type EntryState =
  | { state: "absent" }
  /** complete, with a marker older hil versions wrote (a date, no manifest) */
  | { state: "unrecorded" }
  | { state: "intact"; manifest: EntryManifest }
  | { state: "damaged"; problem: EntryProblem };

function megabytes(n: number): string {
  return n < 10 * 1024 ? `${n} bytes` : `${(n / 1024 / 1024).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MB`;
}

/** "is 3 MB, recorded 11 MB"; in bytes when rounding would hide the difference. */
export function sizeDifference(found: number, expected: number, source = "recorded"): string {
  const [a, b] = [megabytes(found), megabytes(expected)];
  return a === b ? `is ${found} bytes, ${source} ${expected}` : `is ${a}, ${source} ${b}`;
}

function sizeProblem(dir: string, path: string, recorded: number): EntryProblem | undefined {
  let size: number;
  try {
    const s = statSync(join(dir, path));
    if (!s.isFile()) return { file: path, what: "is not a file" };
    size = s.size;
  } catch {
    return { file: path, what: "is missing" };
  }
  return size === recorded ? undefined : { file: path, what: sizeDifference(size, recorded) };
}

/** Manifests read, and whether their contents were checked, per marker: the file's identity and time. */
const seen = new Map<string, { manifest: EntryManifest; contentsChecked: boolean }>();

function markerIdentity(marker: string): string | undefined {
  try {
    const s = statSync(marker);
    return `${marker}\0${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return undefined;
  }
}

function parseMarker(text: string): EntryManifest | "unrecorded" | "malformed" {
  if (!text.trimStart().startsWith("{")) return "unrecorded";
  try {
    const m = JSON.parse(text) as Partial<EntryManifest>;
    if (m.format === FORMAT && m.hashed && m.sized) return m as EntryManifest;
  } catch {
    // a marker cut short
  }
  return "malformed";
}

async function contentsProblem(dir: string, m: EntryManifest): Promise<EntryProblem | undefined> {
  for (const [path, size] of Object.entries(m.sized)) {
    const p = sizeProblem(dir, path, size);
    if (p) return p;
  }
  for (const [path, [size, sha256]] of Object.entries(m.hashed))
    if ((await digest(join(dir, path), size)) !== sha256)
      return { file: path, what: "differs from its recorded sha256" };
  return undefined;
}

/**
 * The state of the entry in `dir`: the sizes of its hashed files are checked on every call; with
 * `contents`, the digests of those files and the sizes of its bulk files too, once per process.
 */
export async function inspectEntry(dir: string, opts: { contents: boolean }): Promise<EntryState> {
  const marker = join(dir, COMPLETE_MARK);
  const identity = markerIdentity(marker);
  if (!identity) return { state: "absent" };
  let known = seen.get(identity);
  if (!known) {
    let text: string;
    try {
      text = readFileSync(marker, "utf8");
    } catch {
      return { state: "absent" };
    }
    const parsed = parseMarker(text);
    if (parsed === "unrecorded") return { state: "unrecorded" };
    if (parsed === "malformed")
      return { state: "damaged", problem: { file: COMPLETE_MARK, what: "is not a manifest" } };
    known = { manifest: parsed, contentsChecked: false };
    seen.set(identity, known);
  }
  for (const [path, [size]] of Object.entries(known.manifest.hashed)) {
    const problem = sizeProblem(dir, path, size);
    if (problem) return { state: "damaged", problem };
  }
  if (opts.contents && !known.contentsChecked) {
    const problem = await contentsProblem(dir, known.manifest);
    if (problem) return { state: "damaged", problem };
    known.contentsChecked = true;
  }
  return { state: "intact", manifest: known.manifest };
}

/** Records that `manifest`, just written into `dir`'s marker, describes files read this moment. */
export function rememberChecked(dir: string, manifest: EntryManifest): void {
  const identity = markerIdentity(join(dir, COMPLETE_MARK));
  if (identity) seen.set(identity, { manifest, contentsChecked: true });
}
