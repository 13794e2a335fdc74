/**
 * `hil cache prune`: the entries no run has used for a while, and their removal. Every kind hil
 * builds is a candidate (QEMU, kernels and their source trees, image layers, modules, cached base
 * runs); the apt package lists are not (they are refreshed, not rebuilt). An entry another one
 * needs (a kernel's source tree, which its module and patched builds read) counts as used when
 * that one is. An entry is removed under its lock, and only if it is still unused then: moved
 * aside under a name the next run sweeps if this one dies half way, then deleted.
 */
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { discard } from "./cache.ts";
import { withLock } from "./cache-lock.ts";
import { APT_KIND, allEntries, type TransferEntry, treeBytes } from "./cache-transfer.ts";
import { lastUsed, lastUseMark } from "./cache-use.ts";
import { shortKey } from "./hash.ts";

/** The entries an entry needs to be used again (none when it names none or cannot be read). */
export type DependenciesOf = (entry: TransferEntry, dir: string) => Promise<TransferEntry[]>;

export interface PruneCandidate extends TransferEntry {
  dir: string;
  /** when a run last used it, or an entry that needs it (ms since the epoch) */
  lastUsedMs: number;
  bytes: number;
}

const idOf = (e: TransferEntry) => `${e.kind}/${e.key}`;

/** Every prunable entry under `root` with when it was last used, itself or through one that needs it. */
async function lastUses(
  root: string,
  dependenciesOf: DependenciesOf,
): Promise<Map<string, { entry: TransferEntry; dir: string; lastUsedMs: number }>> {
  const uses = new Map<string, { entry: TransferEntry; dir: string; lastUsedMs: number }>();
  for (const entry of await allEntries(root)) {
    if (entry.kind === APT_KIND) continue;
    const dir = join(root, entry.kind, entry.key);
    const lastUsedMs = await lastUsed(root, entry.kind, entry.key, dir).catch(() => undefined);
    if (lastUsedMs !== undefined) uses.set(idOf(entry), { entry, dir, lastUsedMs });
  }
  for (const { entry, dir, lastUsedMs } of [...uses.values()]) {
    for (const dep of await dependenciesOf(entry, dir).catch(() => [])) {
      const needed = uses.get(idOf(dep));
      if (needed && needed.lastUsedMs < lastUsedMs) needed.lastUsedMs = lastUsedMs;
    }
  }
  return uses;
}

const noDependencies: DependenciesOf = async () => [];

/** The entries under `root` unused for `unusedForMs` or longer at `now`, the longest unused first. */
export async function unusedEntries(
  root: string,
  unusedForMs: number,
  now = Date.now(),
  dependenciesOf: DependenciesOf = noDependencies,
): Promise<PruneCandidate[]> {
  const out: PruneCandidate[] = [];
  for (const { entry, dir, lastUsedMs } of (await lastUses(root, dependenciesOf)).values()) {
    if (now - lastUsedMs < unusedForMs) continue;
    out.push({ ...entry, dir, lastUsedMs, bytes: (await treeBytes(dir)).bytes });
  }
  return out.sort((a, b) => a.lastUsedMs - b.lastUsedMs || a.dir.localeCompare(b.dir));
}

/**
 * Removes the candidates, each under its lock after checking it is still unused (a run may have
 * taken it, or an entry that needs it, up since it was listed). Returns those removed.
 */
export async function removeEntries(
  root: string,
  candidates: readonly PruneCandidate[],
  unusedForMs: number,
  dependenciesOf: DependenciesOf = noDependencies,
): Promise<PruneCandidate[]> {
  const removed: PruneCandidate[] = [];
  for (const c of candidates) {
    const gone = await withLock(`${c.dir}.lock`, `${c.what} (${shortKey(c.key)})`, async () => {
      if (!existsSync(c.dir)) return false;
      const last = (await lastUses(root, dependenciesOf)).get(idOf(c))?.lastUsedMs;
      if (last === undefined || Date.now() - last < unusedForMs) return false;
      await discard(c.dir);
      await rm(lastUseMark(root, c.kind, c.key), { force: true });
      return true;
    });
    if (gone) removed.push(c);
  }
  return removed;
}
