/**
 * `hil cache prune`: the entries no run has used for a while, and their removal. Every kind hil
 * builds is a candidate (QEMU, kernels and their source trees, image layers, modules, cached base
 * runs); the apt package lists are not (they are refreshed, not rebuilt). An entry is removed under
 * its lock, and only if it is still unused then: moved aside under a name the next run sweeps if
 * this one dies half way, then deleted.
 */
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { discard } from "./cache.ts";
import { withLock } from "./cache-lock.ts";
import { APT_KIND, allEntries, type TransferEntry, treeBytes } from "./cache-transfer.ts";
import { lastUsed, lastUseMark } from "./cache-use.ts";
import { shortKey } from "./hash.ts";

export interface PruneCandidate extends TransferEntry {
  dir: string;
  /** when a run last used it (ms since the epoch) */
  lastUsedMs: number;
  bytes: number;
}

/** The entries under `root` unused for `unusedForMs` or longer at `now`, the longest unused first. */
export async function unusedEntries(
  root: string,
  unusedForMs: number,
  now = Date.now(),
): Promise<PruneCandidate[]> {
  const out: PruneCandidate[] = [];
  for (const e of await allEntries(root)) {
    if (e.kind === APT_KIND) continue;
    const dir = join(root, e.kind, e.key);
    const lastUsedMs = await lastUsed(root, e.kind, e.key, dir).catch(() => undefined);
    if (lastUsedMs === undefined || now - lastUsedMs < unusedForMs) continue;
    out.push({ ...e, dir, lastUsedMs, bytes: (await treeBytes(dir)).bytes });
  }
  return out.sort((a, b) => a.lastUsedMs - b.lastUsedMs || a.dir.localeCompare(b.dir));
}

/**
 * Removes the candidates, each under its lock after checking it is still unused (a run may have
 * taken it up since it was listed). Returns those removed.
 */
export async function removeEntries(
  root: string,
  candidates: readonly PruneCandidate[],
  unusedForMs: number,
): Promise<PruneCandidate[]> {
  const removed: PruneCandidate[] = [];
  for (const c of candidates) {
    const gone = await withLock(`${c.dir}.lock`, `${c.what} (${shortKey(c.key)})`, async () => {
      if (!existsSync(c.dir)) return false;
      const last = await lastUsed(root, c.kind, c.key, c.dir).catch(() => undefined);
      if (last === undefined || Date.now() - last < unusedForMs) return false;
      await discard(c.dir);
      await rm(lastUseMark(root, c.kind, c.key), { force: true });
      return true;
    });
    if (gone) removed.push(c);
  }
  return removed;
}
