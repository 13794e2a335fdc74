/**
 * When each cache entry was last used, for `hil cache prune`: a zero-byte file per entry under
 * `<cache>/.last-use/<kind>/<key>`, its mtime the time. Kept beside the entries, not in them, so
 * an entry's files stay what its manifest records and an export never reads a file a run is
 * touching. An entry with no mark (made before marks were kept) counts from when it was built.
 */
import { mkdir, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { COMPLETE_MARK } from "./cache-manifest.ts";

export const LAST_USE_DIR = ".last-use";

/** A mark younger than this is not written again: one write an hour per entry at most. */
const REFRESH_MS = 60 * 60 * 1000;

export function lastUseMark(root: string, kind: string, key: string): string {
  return join(root, LAST_USE_DIR, kind, key);
}

/**
 * Marks the entry used now. Bookkeeping only: a mark that cannot be written (a read-only or full
 * cache) does not fail the run that uses the entry; the entry then counts from its last mark.
 */
export async function markUsed(root: string, kind: string, key: string, now = Date.now()): Promise<void> {
  const mark = lastUseMark(root, kind, key);
  try {
    const s = await stat(mark).catch(() => undefined);
    if (s && now - s.mtimeMs < REFRESH_MS) return;
    if (!s) {
      await mkdir(dirname(mark), { recursive: true });
      await writeFile(mark, "");
    }
    await utimes(mark, new Date(now), new Date(now));
  } catch {
    // see above
  }
}

/** When the entry in `dir` was last used (ms since the epoch): its mark, else when it was built. */
export async function lastUsed(root: string, kind: string, key: string, dir: string): Promise<number> {
  const mark = await stat(lastUseMark(root, kind, key)).catch(() => undefined);
  if (mark) return mark.mtimeMs;
  return (await stat(join(dir, COMPLETE_MARK))).mtimeMs;
}
