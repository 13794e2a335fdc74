/**
 * The base side of `hil validate`, cached: a base run whose every verdict was judged is kept in
 * the cache (kind "validate-base") under the key of what decided it (base-cache-key.ts), its run
 * directory whole, so a later validation against the same base copies it instead of booting the
 * base kernel again.
 *
 * What is not kept: a run with an ERROR or MISS (the harness could not run or judge something:
 * its fault, not the base's behaviour). What is not reused: a key whose fresh runs disagreed. A
 * fresh base run (--no-base-cache, or none cached) is compared with the run cached under its key;
 * if a verdict differs the key is marked unstable, for good: a cached verdict of a base that does
 * not repeat itself would make the next comparison say the series changed what it did not, so
 * every later validation under that key runs the base again and says why.
 */
import { cp, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { copyFileAtomic, isTempName, writeFileAtomic } from "../../../util/atomic-write.ts";
import { type EntryState, replaceEntry, withEntry } from "../../../util/cache.ts";
import { shortKey } from "../../../util/hash.ts";
import { claimRunDir, LOCK_FILE } from "../../rundir/claim.ts";
import { readRunRecord } from "../../rundir/read.ts";
import { type RunRecord, VERDICTS_FILE } from "../../rundir/schema.ts";
import { topLevelEntries, verdictEntries, verdictMap } from "../../rundir/verdict-list.ts";
import type { JobRecord } from "../job/job.ts";
import type { BaseKeyInputs } from "./base-cache-key.ts";

export const BASE_CACHE_KIND = "validate-base";
const META_FILE = "base.json";
const RUN_SUBDIR = "run";

/** A verdict that moved between two fresh runs under one key: its words, oldest first. */
const unstableVerdict = z.object({ key: z.string(), verdicts: z.array(z.string()).min(2) });
export type UnstableVerdict = z.infer<typeof unstableVerdict>;

const entryMeta = z.object({
  format: z.literal("hil-validate-base-entry/1"),
  key: z.string(),
  /** what decided the verdicts (for people reading the cache; the key is made of them) */
  inputs: z.unknown(),
  /** when the run kept here started, and how long it took */
  startedAt: z.string(),
  wallMs: z.number(),
  /** when it was stored */
  storedAt: z.string(),
  /** how many fresh runs were made under this key, this one included */
  runs: z.number().int().min(1),
  /** verdicts that differed between those runs: the key is not reused */
  unstable: z.array(unstableVerdict).optional(),
});
export type BaseEntryMeta = z.infer<typeof entryMeta>;

/** What the cache holds under a key. */
export type FoundBase =
  | { state: "absent" }
  | { state: "damaged"; problem: string }
  | { state: "intact"; meta: BaseEntryMeta; record: JobRecord };

export type ReuseDecision = { reuse: true } | { reuse: false; why: string };

/** "a[ib]: PASS, FAIL; b[linux]: ..." (at most `max`, then how many more). */
export function unstableText(list: readonly UnstableVerdict[], max = 3): string {
  const shown = list.slice(0, max).map((u) => `${u.key}: ${u.verdicts.join(", ")}`);
  return list.length > max ? `${shown.join("; ")}; ${list.length - max} more` : shown.join("; ");
}

/** Whether the base side is taken from the cache, and why not. */
export function reuseDecision(found: FoundBase, opts: { fresh: boolean }): ReuseDecision {
  if (opts.fresh) return { reuse: false, why: "--no-base-cache" };
  if (found.state === "absent") return { reuse: false, why: "no base run cached under this key" };
  if (found.state === "damaged")
    return { reuse: false, why: `the cached base run is damaged (${found.problem})` };
  if (found.meta.unstable?.length)
    return {
      reuse: false,
      why: `its verdicts differed between runs under this key (${unstableText(found.meta.unstable)}), so it runs every time`,
    };
  return { reuse: true };
}

export type StoreDecision =
  | { store: false; why: string }
  | {
      store: true;
      runs: number;
      unstable: UnstableVerdict[];
      /** the verdicts this run changed against the cached one */
      moved: UnstableVerdict[];
    };

/** The verdicts (rules included) that differ between two runs, as "old, new". */
export function movedVerdicts(before: RunRecord, after: RunRecord): UnstableVerdict[] {
  const a = verdictMap(before);
  const b = verdictMap(after);
  const keys = [...a.keys(), ...[...b.keys()].filter((k) => !a.has(k))];
  return keys
    .filter((k) => a.get(k) !== b.get(k))
    .map((k) => ({ key: k, verdicts: [a.get(k) ?? "-", b.get(k) ?? "-"] }));
}

function mergeUnstable(
  old: readonly UnstableVerdict[],
  moved: readonly UnstableVerdict[],
): UnstableVerdict[] {
  const out = new Map(old.map((u) => [u.key, [...u.verdicts]]));
  for (const m of moved) {
    const seen = out.get(m.key);
    if (!seen) out.set(m.key, [...m.verdicts]);
    else for (const v of m.verdicts) if (!seen.includes(v)) seen.push(v);
  }
  return [...out].map(([key, verdicts]) => ({ key, verdicts }));
}

/** Whether a fresh base run is kept, given what the cache held under its key before. */
export function storeDecision(fresh: RunRecord, previous: FoundBase): StoreDecision {
  const unjudged = verdictEntries(fresh).filter((e) => e.verdict === "ERROR" || e.verdict === "MISS");
  if (unjudged.length > 0) {
    const named = unjudged
      .slice(0, 3)
      .map((e) => `${e.key} ${e.verdict}`)
      .join(", ");
    return {
      store: false,
      why: `${unjudged.length} verdict(s) ERROR or MISS (${named}${unjudged.length > 3 ? ", ..." : ""}): a run the harness could not judge is not kept`,
    };
  }
  if (previous.state !== "intact") return { store: true, runs: 1, unstable: [], moved: [] };
  const moved = movedVerdicts(previous.record, fresh);
  return {
    store: true,
    runs: previous.meta.runs + 1,
    unstable: mergeUnstable(previous.meta.unstable ?? [], moved),
    moved,
  };
}

async function readFound(dir: string, state: EntryState): Promise<FoundBase> {
  if (state.state === "absent") return { state: "absent" };
  if (state.state === "damaged")
    return { state: "damaged", problem: `${state.problem.file} ${state.problem.what}` };
  if (state.state === "unrecorded") return { state: "damaged", problem: "its record is missing" };
  try {
    const meta = entryMeta.parse(JSON.parse(await readFile(join(dir, META_FILE), "utf8")));
    const record = (await readRunRecord(join(dir, RUN_SUBDIR))) as JobRecord;
    return { state: "intact", meta, record };
  } catch (err) {
    return { state: "damaged", problem: `${META_FILE}: ${(err as Error).message.split("\n")[0]}` };
  }
}

/** A run directory's files, the lock and interrupted writes left out. */
function runFile(src: string): boolean {
  const name = src.split("/").pop() ?? "";
  return name !== LOCK_FILE && !isTempName(name);
}

/** Copies a run directory (verdicts.json last, so the copy is a run only once whole) into a new one. */
async function copyRun(from: string, to: string): Promise<void> {
  const claim = await claimRunDir(to);
  try {
    await cp(from, to, {
      recursive: true,
      filter: (src) => runFile(src) && src !== join(from, VERDICTS_FILE),
    });
    await copyFileAtomic(join(from, VERDICTS_FILE), join(to, VERDICTS_FILE));
    await claim.release();
  } catch (err) {
    await claim.discard();
    throw err;
  }
}

export type BaseLookup = {
  key: string;
  found: FoundBase;
  decision: ReuseDecision;
  /** the record copied into the run directory, when reused */
  reused?: JobRecord;
};

/**
 * Looks the base run up under `key` and, if it is to be reused, copies it into `runDir` (made and
 * claimed like any run directory), all under the entry's lock.
 */
export async function lookupBase(key: string, runDir: string, opts: { fresh: boolean }): Promise<BaseLookup> {
  return withEntry(BASE_CACHE_KIND, key, "cached base run", async (dir, state) => {
    const found = await readFound(dir, state);
    const decision = reuseDecision(found, opts);
    if (!decision.reuse || found.state !== "intact") return { key, found, decision };
    await copyRun(join(dir, RUN_SUBDIR), runDir);
    return { key, found, decision, reused: found.record };
  });
}

/** Keeps a fresh base run (its run directory whole) under `key`, as `decision` says. */
export async function storeBase(
  key: string,
  inputs: BaseKeyInputs,
  runDir: string,
  record: JobRecord,
  decision: Extract<StoreDecision, { store: true }>,
): Promise<BaseEntryMeta> {
  const meta: BaseEntryMeta = {
    format: "hil-validate-base-entry/1",
    key,
    inputs,
    startedAt: record.startedAt ?? new Date(Date.now() - (record.wallMs ?? 0)).toISOString(),
    wallMs: record.wallMs ?? 0,
    storedAt: new Date().toISOString(),
    runs: decision.runs,
    ...(decision.unstable.length > 0 ? { unstable: decision.unstable } : {}),
  };
  await replaceEntry(BASE_CACHE_KIND, key, { what: "cached base run" }, async (work) => {
    await cp(runDir, join(work, RUN_SUBDIR), { recursive: true, filter: runFile });
    await writeFileAtomic(join(work, META_FILE), `${JSON.stringify(meta, null, 2)}\n`);
  });
  return meta;
}

/** How many verdicts above the rules a run holds (checks, scenario x rule set). */
export function verdictCount(record: RunRecord): number {
  return topLevelEntries(record).size;
}

/** "key 1a2b3c4d5e6f7a8b" as the output names an entry. */
export function keyText(key: string): string {
  return `key ${shortKey(key)}`;
}
