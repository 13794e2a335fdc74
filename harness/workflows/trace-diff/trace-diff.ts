/**
 * `hil diff --traces <reference> <candidate>...`: model vs hardware, or one device profile vs
 * another. Each candidate run is compared with the reference run scenario by scenario: the
 * verdicts per rule set, and per WR (facts.ts) its post's fate, its completions' status and
 * CQ, each drain's return and the order each work queue's WRs completed in. The order is compared
 * over the WRs whose completions agree otherwise, so a missing completion is said once, on its WR.
 * The closest candidate is the one with the fewest differing WRs, then the fewest scenarios whose
 * completions differ.
 */
import type { RunScenario } from "../../rundir/schema.ts";
import type { Verdict } from "../../verdict.ts";
import { describeItem, type ScenarioFacts } from "./facts.ts";
import { factsOf, type TraceRun } from "./runs.ts";

export type Side = "reference" | "candidate";

/** A WR or drain whose facts differ: each side's in words. */
export interface ItemDiff {
  key: string;
  kind: "wr" | "drain";
  reference: string;
  candidate: string;
}

/** A work queue whose WRs (those that agree otherwise) completed in another order on a CQ. */
export interface OrderDiff {
  /** the work queue and the CQ: "qp rq on rcq" */
  queue: string;
  reference: string[];
  candidate: string[];
  /** the WRs whose place differs */
  moved: string[];
}

export interface VerdictDiff {
  /** the rule set (ib, iwarp-rdmac, linux), or "outcome" for a scenario's own verdict */
  profile: string;
  reference?: Verdict;
  candidate?: Verdict;
}

export interface ScenarioTraceDiff {
  scenario: string;
  /** a scenario only one run has */
  only?: Side;
  /** the sides without a verbs trace (the scenario did not run there) */
  noTrace: Side[];
  verdicts: VerdictDiff[];
  items: ItemDiff[];
  order: OrderDiff[];
  /** WRs and drains compared (the union of both sides') */
  compared: number;
  /** differing WRs: their facts or their place on a CQ */
  wrs: number;
  drains: number;
  completionsDiffer: boolean;
  differs: boolean;
}

export interface TraceDiffCounts {
  scenarios: number;
  completionsDiffer: number;
  wrs: number;
  drains: number;
  verdicts: number;
  onlyReference: number;
  onlyCandidate: number;
  /** WRs and drains compared */
  items: number;
}

export interface RunSummary {
  dir: string;
  name: string;
  device: string;
  label: string;
  repetitions: number;
}

export interface CandidateDiff {
  candidate: RunSummary;
  scenarios: ScenarioTraceDiff[];
  counts: TraceDiffCounts;
  same: boolean;
}

export interface TraceDiff {
  reference: RunSummary;
  candidates: CandidateDiff[];
  /** the index in candidates of the closest one (with two candidates or more) */
  closest?: number;
  exitCode: number;
}

function summary(t: TraceRun): RunSummary {
  return { dir: t.run.dir, name: t.name, device: t.device, label: t.label, repetitions: t.repetitions };
}

function verdictDiffs(a: RunScenario | undefined, b: RunScenario | undefined): VerdictDiff[] {
  const profiles = [...new Set([...(a?.judgements ?? []), ...(b?.judgements ?? [])].map((j) => j.profile))];
  const out: VerdictDiff[] = [];
  const push = (profile: string, x: Verdict | undefined, y: Verdict | undefined) => {
    if (x !== y)
      out.push({
        profile,
        ...(x !== undefined ? { reference: x } : {}),
        ...(y !== undefined ? { candidate: y } : {}),
      });
  };
  for (const p of profiles)
    push(
      p,
      a?.judgements.find((j) => j.profile === p)?.verdict,
      b?.judgements.find((j) => j.profile === p)?.verdict,
    );
  push("outcome", a?.outcome?.verdict, b?.outcome?.verdict);
  return out;
}

function orderDiffs(ref: ScenarioFacts, cand: ScenarioFacts, agreeing: ReadonlySet<string>): OrderDiff[] {
  const out: OrderDiff[] = [];
  for (const queue of new Set([...ref.order.keys(), ...cand.order.keys()])) {
    const r = (ref.order.get(queue) ?? []).filter((k) => agreeing.has(k));
    const c = (cand.order.get(queue) ?? []).filter((k) => agreeing.has(k));
    const moved = new Set(r.filter((k, i) => c[i] !== k));
    if (moved.size > 0) out.push({ queue, reference: r, candidate: c, moved: [...moved] });
  }
  return out;
}

/** One scenario of both runs compared; ref/cand undefined: the scenario has no trace there. */
export function compareScenario(
  scenario: string,
  sides: { reference?: RunScenario; candidate?: RunScenario },
  ref: ScenarioFacts | undefined,
  cand: ScenarioFacts | undefined,
): ScenarioTraceDiff {
  const verdicts = verdictDiffs(sides.reference, sides.candidate);
  const only: Side | undefined =
    sides.reference === undefined ? "candidate" : sides.candidate === undefined ? "reference" : undefined;
  const noTrace: Side[] =
    only !== undefined
      ? []
      : [
          ...(ref === undefined ? ["reference" as const] : []),
          ...(cand === undefined ? ["candidate" as const] : []),
        ];
  const items: ItemDiff[] = [];
  const agreeing = new Set<string>();
  let order: OrderDiff[] = [];
  let compared = 0;
  if (ref && cand) {
    const keys = [...new Set([...ref.items.keys(), ...cand.items.keys()])];
    compared = keys.length;
    for (const key of keys) {
      const a = ref.items.get(key);
      const b = cand.items.get(key);
      const reference = describeItem(a);
      const candidate = describeItem(b);
      if (reference === candidate) agreeing.add(key);
      else items.push({ key, kind: (a ?? b)?.kind ?? "wr", reference, candidate });
    }
    order = orderDiffs(ref, cand, agreeing);
  }
  const moved = new Set(order.flatMap((o) => o.moved));
  const wrs = items.filter((i) => i.kind === "wr").length + moved.size;
  const drains = items.filter((i) => i.kind === "drain").length;
  const completionsDiffer = items.length > 0 || order.length > 0 || noTrace.length === 1;
  return {
    scenario,
    ...(only ? { only } : {}),
    noTrace,
    verdicts,
    items,
    order,
    compared,
    wrs,
    drains,
    completionsDiffer,
    differs: completionsDiffer || verdicts.length > 0 || only !== undefined,
  };
}

function countsOf(scenarios: readonly ScenarioTraceDiff[]): TraceDiffCounts {
  const both = scenarios.filter((s) => s.only === undefined);
  const sum = (f: (s: ScenarioTraceDiff) => number) => both.reduce((n, s) => n + f(s), 0);
  return {
    scenarios: both.length,
    completionsDiffer: both.filter((s) => s.completionsDiffer).length,
    wrs: sum((s) => s.wrs),
    drains: sum((s) => s.drains),
    verdicts: sum((s) => s.verdicts.length),
    onlyReference: scenarios.filter((s) => s.only === "reference").length,
    onlyCandidate: scenarios.filter((s) => s.only === "candidate").length,
    items: sum((s) => s.compared),
  };
}

/** The candidate closest to the reference: fewest differing WRs, then scenarios, then drains, then verdicts. */
export function closestCandidate(candidates: readonly CandidateDiff[]): number | undefined {
  if (candidates.length < 2) return undefined;
  const rank = (c: TraceDiffCounts) => [
    c.wrs,
    c.completionsDiffer + c.onlyReference + c.onlyCandidate,
    c.drains,
    c.verdicts,
  ];
  let best = 0;
  candidates.forEach((c, i) => {
    const x = rank(c.counts);
    const y = rank((candidates[best] as CandidateDiff).counts);
    const k = x.findIndex((v, j) => v !== y[j]);
    if (k >= 0 && (x[k] as number) < (y[k] as number)) best = i;
  });
  return best;
}

/** Compares every candidate with the reference (runs[0]). */
export async function diffTraces(runs: readonly TraceRun[]): Promise<TraceDiff> {
  const [reference, ...candidates] = runs as [TraceRun, ...TraceRun[]];
  const refFacts = new Map<string, Promise<ScenarioFacts | undefined>>();
  const factsOfRef = (name: string, s: RunScenario) => {
    let f = refFacts.get(name);
    if (!f) {
      f = factsOf(reference, s);
      refFacts.set(name, f);
    }
    return f;
  };
  const diffs: CandidateDiff[] = [];
  for (const cand of candidates) {
    const names = [
      ...reference.scenarios.keys(),
      ...[...cand.scenarios.keys()].filter((n) => !reference.scenarios.has(n)),
    ];
    const scenarios: ScenarioTraceDiff[] = [];
    for (const name of names) {
      const a = reference.scenarios.get(name);
      const b = cand.scenarios.get(name);
      const fa = a && b ? await factsOfRef(name, a) : undefined;
      const fb = a && b ? await factsOf(cand, b) : undefined;
      scenarios.push(
        compareScenario(name, { ...(a ? { reference: a } : {}), ...(b ? { candidate: b } : {}) }, fa, fb),
      );
    }
    diffs.push({
      candidate: summary(cand),
      scenarios,
      counts: countsOf(scenarios),
      same: scenarios.every((s) => !s.differs),
    });
  }
  const closest = closestCandidate(diffs);
  return {
    reference: summary(reference),
    candidates: diffs,
    ...(closest !== undefined ? { closest } : {}),
    exitCode: diffs.every((d) => d.same) ? 0 : 1,
  };
}
