/**
 * `hil diff --traces` as text, JSON, KTAP and JUnit (the HTML page is trace-diff-html.ts). Every
 * line that says where two runs disagree reads `<what>: <reference>: <its facts> | <candidate>:
 * <its facts>`; WRs of consecutive wr_ids that differ the same way are one line (`qp sq wr
 * 1000-1003`), and so are the rule sets whose verdicts moved alike. KTAP has a test per scenario
 * (per candidate when there are several), not ok where the runs differ; JUnit a testsuite per
 * candidate and a <failure> per differing scenario.
 */

import type {
  CandidateDiff,
  ItemDiff,
  OrderDiff,
  ScenarioTraceDiff,
  TraceDiff,
} from "../workflows/trace-diff/trace-diff.ts";
import { diffFiles, sideProperties } from "./diff-report.ts";
import { type JCase, type JSuite, renderJunitSuites } from "./junit.ts";
import { type KtapCase, renderKtapCases } from "./ktap.ts";

/** The file `--out-dir` writes each format (hil diff's: DIFF_FORMATS) to. */
export const TRACE_DIFF_FILES = diffFiles("trace-diff");

/** How many WRs of a CQ's order a line shows around the first place the runs disagree. */
const ORDER_WINDOW = 8;

function wrRange(key: string): { prefix: string; id: number } | undefined {
  const m = /^(.* wr )(\d+)$/.exec(key);
  return m ? { prefix: m[1] as string, id: Number(m[2]) } : undefined;
}

/** Consecutive wr_ids of one queue that differ the same way, as one line's subject. */
export function groupItems(
  items: readonly ItemDiff[],
): Array<{ what: string; reference: string; candidate: string }> {
  const out: Array<{
    what: string;
    reference: string;
    candidate: string;
    prefix?: string;
    from?: number;
    to?: number;
  }> = [];
  for (const it of items) {
    const r = wrRange(it.key);
    const last = out.at(-1);
    if (
      r &&
      last?.prefix === r.prefix &&
      last.to === r.id - 1 &&
      last.reference === it.reference &&
      last.candidate === it.candidate
    ) {
      last.to = r.id;
      last.what = `${r.prefix}${last.from}-${r.id}`;
      continue;
    }
    out.push({
      what: it.key,
      reference: it.reference,
      candidate: it.candidate,
      ...(r ? { prefix: r.prefix, from: r.id, to: r.id } : {}),
    });
  }
  return out.map(({ what, reference, candidate }) => ({ what, reference, candidate }));
}

function orderWindow(keys: readonly string[], from: number): string {
  const shown = keys.slice(from, from + ORDER_WINDOW).join(", ");
  return `${from > 0 ? "..., " : ""}${shown}${from + ORDER_WINDOW < keys.length ? ", ..." : ""}`;
}

function orderLine(o: OrderDiff, ref: string, cand: string): string {
  const first = Math.max(
    0,
    o.reference.findIndex((k, i) => o.candidate[i] !== k),
  );
  return `order of ${o.queue}: ${ref}: ${orderWindow(o.reference, first)} | ${cand}: ${orderWindow(o.candidate, first)}`;
}

/** What differs in one scenario, a line each (empty when nothing does). */
export function scenarioLines(s: ScenarioTraceDiff, ref: string, cand: string): string[] {
  if (s.only) return [`only in ${s.only === "reference" ? ref : cand}`];
  const lines: string[] = [];
  for (const side of s.noTrace)
    lines.push(`no verbs trace in ${side === "reference" ? ref : cand}: the scenario did not run there`);
  for (const g of groupItems(s.items))
    lines.push(`${g.what}: ${ref}: ${g.reference} | ${cand}: ${g.candidate}`);
  for (const o of s.order) lines.push(orderLine(o, ref, cand));
  const verdicts = new Map<string, string[]>();
  for (const v of s.verdicts) {
    const moved = `${ref}: ${v.reference ?? "none"} | ${cand}: ${v.candidate ?? "none"}`;
    verdicts.set(moved, [...(verdicts.get(moved) ?? []), v.profile]);
  }
  for (const [moved, profiles] of verdicts) lines.push(`verdict ${profiles.join(", ")}: ${moved}`);
  return lines;
}

function scenarioState(s: ScenarioTraceDiff): string {
  if (s.only) return "only one run has it";
  if (s.completionsDiffer) return "completions differ";
  if (s.verdicts.length > 0) return "verdicts differ (the same completions)";
  return "the same";
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

/** One candidate against the reference in one line: how close it is. */
export function candidateSummary(d: TraceDiff, c: CandidateDiff): string {
  const n = c.counts;
  const head = `${c.candidate.name} vs ${d.reference.name}`;
  if (c.same)
    return `${head}: no difference (${count(n.scenarios, "scenario")}, ${n.items} WRs and drains compared)`;
  const parts = [
    `${n.completionsDiffer} of ${count(n.scenarios, "scenario")} with different completions (${count(n.wrs, "WR")}, ${count(n.drains, "drain")} differ)`,
    `${count(n.verdicts, "verdict")} differ`,
  ];
  if (n.onlyReference > 0) parts.push(`${count(n.onlyReference, "scenario")} only in ${d.reference.name}`);
  if (n.onlyCandidate > 0) parts.push(`${count(n.onlyCandidate, "scenario")} only in ${c.candidate.name}`);
  return `${head}: ${parts.join(", ")}`;
}

export function closestLine(d: TraceDiff): string | undefined {
  if (d.closest === undefined) return undefined;
  const c = (d.candidates[d.closest] as CandidateDiff).candidate;
  return `closest: ${c.name}${c.name !== c.device ? ` (${c.device})` : ""}`;
}

/** The CI log's line(s): each candidate's summary, then the closest. */
export function traceDiffSummary(d: TraceDiff): string {
  const lines = d.candidates.map((c) => `hil diff --traces: ${candidateSummary(d, c)}`);
  const closest = closestLine(d);
  if (closest) lines.push(`hil diff --traces: ${closest}`);
  return lines.join("\n");
}

export function renderTraceDiffText(d: TraceDiff): string {
  const runLine = (what: string, r: TraceDiff["reference"]) => `${what}: ${r.name}: ${r.dir} (${r.label})`;
  const out = [
    runLine("reference", d.reference),
    ...d.candidates.map((c) => runLine("candidate", c.candidate)),
  ];
  if ([d.reference, ...d.candidates.map((c) => c.candidate)].some((r) => r.repetitions > 1))
    out.push("(a repeated run: the first repetition of each scenario is compared)");
  for (const c of d.candidates) {
    const ref = d.reference.name;
    const cand = c.candidate.name;
    out.push("", `${cand} vs ${ref}:`);
    const same: string[] = [];
    for (const s of c.scenarios) {
      if (!s.differs) {
        same.push(s.scenario);
        continue;
      }
      out.push(`${s.scenario}: ${scenarioState(s)}`, ...scenarioLines(s, ref, cand).map((l) => `  ${l}`));
    }
    if (same.length > 0) out.push(`the same: ${same.join(", ")}`);
  }
  out.push("", ...d.candidates.map((c) => candidateSummary(d, c)));
  const closest = closestLine(d);
  if (closest) out.push(closest);
  return `${out.join("\n")}\n`;
}

export function traceDiffJson(d: TraceDiff): unknown {
  return {
    reference: d.reference,
    candidates: d.candidates.map((c) => ({
      candidate: c.candidate,
      same: c.same,
      counts: c.counts,
      scenarios: c.scenarios,
    })),
    ...(d.closest !== undefined ? { closest: d.candidates[d.closest]?.candidate.name } : {}),
    ignored: ["seq", "ns", "qp_num", "vendor_err", "opcode", "byte_len", "imm", "inv", "sum"],
    exitCode: d.exitCode,
  };
}

function scenarioCase(s: ScenarioTraceDiff, ref: string, cand: string, name: string): KtapCase {
  const notes = scenarioLines(s, ref, cand);
  return s.differs
    ? { name, verdict: "FAIL", reason: scenarioState(s), notes }
    : { name, verdict: "PASS", reason: "" };
}

export function renderTraceDiffKtap(d: TraceDiff): string {
  const ref = d.reference.name;
  const perScenario = (c: CandidateDiff) =>
    c.scenarios.map((s) => scenarioCase(s, ref, c.candidate.name, s.scenario));
  const only = d.candidates.length === 1 ? (d.candidates[0] as CandidateDiff) : undefined;
  const cases: KtapCase[] = only
    ? perScenario(only)
    : d.candidates.map((c) => ({
        name: `${c.candidate.name} vs ${ref}`,
        verdict: c.same ? "PASS" : "FAIL",
        reason: c.same ? "" : "the traces differ",
        children: perScenario(c),
      }));
  return renderKtapCases(
    [
      `erdma-hil diff --traces: reference ${ref} ${d.reference.dir} (${d.reference.label})`,
      ...d.candidates.map((c) => `candidate ${c.candidate.name} ${c.candidate.dir} (${c.candidate.label})`),
    ],
    cases,
    traceDiffSummary(d).split("\n"),
  );
}

export function renderTraceDiffJunit(d: TraceDiff, when = new Date()): string {
  const ref = d.reference.name;
  const suites = d.candidates.map((c): JSuite => {
    const cand = c.candidate.name;
    const cases = c.scenarios.map((s): JCase => {
      const text = scenarioLines(s, ref, cand).join("\n");
      return {
        classname: s.scenario,
        name: `${cand} vs ${ref}`,
        outcome: s.differs
          ? { kind: "failure", type: "TRACES DIFFER", message: scenarioState(s), text }
          : { kind: "pass" },
      };
    });
    return {
      name: `${cand} vs ${ref}`,
      timeSec: 0,
      properties: [...sideProperties("reference", d.reference), ...sideProperties("candidate", c.candidate)],
      cases,
      out: candidateSummary(d, c),
    };
  });
  return renderJunitSuites("erdma-hil diff --traces", suites, when);
}
