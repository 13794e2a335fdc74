/**
 * `hil validate`'s base side: the run cached under its key copied into <runDir>/base, or a fresh
 * run, kept when it may be (base-cache.ts says when), and one line saying which and why.
 */
import { progress } from "../../../util/progress.ts";
import type { ChosenDevice } from "../../backend/registry.ts";
import type { PreparedGuest } from "../../boot.ts";
import type { Scenario } from "../../scenario/schema.ts";
import { describeJob, type JobRecord, type JobSpec, runJob } from "../job/job.ts";
import {
  type FoundBase,
  keyText,
  lookupBase,
  storeBase,
  storeDecision,
  unstableText,
  verdictCount,
} from "./base-cache.ts";
import { type BaseKeyInputs, baseCacheKey, baseKeyInputs } from "./base-cache-key.ts";

export type BaseCacheOutcome =
  | {
      reused: true;
      key: string;
      /** when the reused run started */
      from: string;
      verdicts: number;
    }
  | {
      reused: false;
      key: string;
      /** why the base ran */
      why: string;
      stored: boolean;
      /** why it was not kept, or what its run showed (verdicts that moved against the cached one) */
      note?: string;
    };

export interface BaseSide {
  record: JobRecord;
  cache: BaseCacheOutcome;
}

/** "2026-12-02 10:50:01 UTC" */
export function whenText(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** The output's line about the base side. */
export function baseCacheLine(c: BaseCacheOutcome): string {
  const key = keyText(c.key);
  if (c.reused)
    return `base: ${c.verdicts} verdicts reused from ${whenText(c.from)}, ${key} (--no-base-cache runs the base again)`;
  if (!c.stored) return `base: ran (${c.why}); not cached: ${c.note ?? "?"}, ${key}`;
  return `base: ran (${c.why}); cached, ${key}${c.note ? `; ${c.note}` : ""}`;
}

export interface BaseSideOptions {
  spec: JobSpec;
  prepared: PreparedGuest;
  scenarios: readonly Scenario[];
  runDir: string;
  meantOnly: boolean;
  /** run the base even when a run is cached (--no-base-cache) */
  fresh: boolean;
  /** guests for its suite (default: the job's default) */
  guests?: number;
  /** the device instead of the one the spec implies (--device-rtl) */
  device?: ChosenDevice;
}

/** The base side of a validation: reused (copied already), or to be run (and kept) by `run`. */
export type BaseSidePlan = { reused: BaseSide } | { run: () => Promise<BaseSide> };

/** Looks the base side up in the cache: reused, or what runs it. */
export async function planBaseSide(opts: BaseSideOptions): Promise<BaseSidePlan> {
  const inputs = await baseKeyInputs(opts.spec, opts.prepared, opts.scenarios, {
    meantOnly: opts.meantOnly,
    ...(opts.device ? { device: opts.device } : {}),
  });
  const key = baseCacheKey(inputs);
  const lookup = await lookupBase(key, opts.runDir, { fresh: opts.fresh });
  if (lookup.reused) {
    const cache: BaseCacheOutcome = {
      reused: true,
      key,
      from: lookup.reused.startedAt ?? (lookup.found.state === "intact" ? lookup.found.meta.startedAt : ""),
      verdicts: verdictCount(lookup.reused),
    };
    progress.info(`[validate] 1/2 ${baseCacheLine(cache)}`);
    return { reused: { record: lookup.reused, cache } };
  }
  const why = lookup.decision.reuse ? "" : lookup.decision.why;
  return { run: () => runBaseSide(opts, { key, inputs, found: lookup.found, why }) };
}

async function runBaseSide(
  opts: BaseSideOptions,
  ctx: { key: string; inputs: BaseKeyInputs; found: FoundBase; why: string },
): Promise<BaseSide> {
  const { key, inputs, why } = ctx;
  progress.info(`[validate] 1/2 base (${why}): ${describeJob(opts.spec)}`);
  const record = await runJob(opts.spec, {
    runDir: opts.runDir,
    id: "base",
    ...(opts.meantOnly ? { meantOnly: true } : {}),
    ...(opts.guests ? { guests: opts.guests } : {}),
    ...(opts.device ? { device: opts.device } : {}),
  });
  const decision = storeDecision(record, ctx.found);
  if (!decision.store)
    return { record, cache: { reused: false, key, why, stored: false, note: decision.why } };
  await storeBase(key, inputs, opts.runDir, record, decision);
  const note =
    decision.moved.length > 0
      ? `${decision.moved.length} verdict(s) differ from the run cached before under this key (${unstableText(decision.moved)}): the base does not repeat itself here, later validations run it again`
      : decision.unstable.length > 0
        ? `earlier runs under this key differed (${unstableText(decision.unstable)}): later validations run the base again`
        : decision.runs > 1
          ? `its verdicts agree with the ${decision.runs - 1} earlier run(s) under this key`
          : undefined;
  return { record, cache: { reused: false, key, why, stored: true, ...(note ? { note } : {}) } };
}
