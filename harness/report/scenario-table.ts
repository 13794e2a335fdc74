/**
 * The drain suite's verdict table: one row a scenario, one column an oracle profile, then the
 * reason of the row's worst verdict, then the summary line a CI log shows. A repeated run
 * (--repeat n) has one row a scenario too, its cells saying whether the repetitions agree.
 */
import { combineVerdicts } from "../oracle/judge.ts";
import type { RunStability as Stability } from "../rundir/schema.ts";
import { flakyScenarios, stabilityCell } from "../rundir/stability.ts";
import { ORACLE_PROFILES } from "../scenario/schema.ts";
import type { CheckResult } from "../verdict.ts";
import { summaryLine } from "./table.ts";

export interface ScenarioRow {
  name: string;
  /** verdict per oracle profile judged */
  verdicts: Partial<Record<(typeof ORACLE_PROFILES)[number], CheckResult>>;
}

const RANK = ["FAIL", "ERROR", "MISS", "XPASS", "XFAIL", "PASS", "SKIP"];

export function scenarioRows(results: readonly CheckResult[]): ScenarioRow[] {
  const rows = new Map<string, ScenarioRow>();
  for (const r of results) {
    const m = /^(.*)\[([a-z-]+)\]$/.exec(r.id);
    const name = m?.[1] ?? r.id;
    const profile = m?.[2] as (typeof ORACLE_PROFILES)[number] | undefined;
    const row = rows.get(name) ?? { name, verdicts: {} };
    if (profile) row.verdicts[profile] = r;
    rows.set(name, row);
  }
  return [...rows.values()];
}

/** Checks that are not a scenario under a profile (the probe stage): one line when all pass. */
function stageLines(checks: readonly CheckResult[]): string[] {
  if (checks.length === 0) return [];
  if (checks.every((c) => c.verdict === "PASS" || c.verdict === "SKIP"))
    return [`the device probes: ${checks.map((c) => `${c.id} ${c.verdict}`).join(", ")}`, ""];
  const width = Math.max(...checks.map((c) => c.id.length));
  return [
    "the device probes:",
    ...checks.map((c) => `  ${c.id.padEnd(width)}  ${c.verdict.padEnd(5)}  ${c.reason}`),
    "",
  ];
}

const isScenarioResult = (r: CheckResult) => /^(.*)\[([a-z-]+)\]$/.test(r.id);
/** A run-level check of a shared known-bug record (suite.ts staleRecordResults). */
export const isRecordCheck = (r: CheckResult) => r.id.startsWith("known-bug:");

/** The shared known-bug records that described nothing in the run: one line each. */
function recordLines(results: readonly CheckResult[]): string[] {
  return results.filter(isRecordCheck).map((r) => `${r.id}  ${r.verdict}  ${r.reason}`);
}

/**
 * How many events each covered rule judged, the most under any oracle profile: "3:2 4:8 5:12"
 * (rule 3 judged 2 events...), "-" when the scenario did not run.
 */
export function exercisedCell(row: ScenarioRow): string {
  const most = new Map<string, number>();
  for (const r of Object.values(row.verdicts))
    for (const e of r.exercised ?? []) most.set(e.rule, Math.max(most.get(e.rule) ?? 0, e.judged));
  return [...most].map(([rule, n]) => `${rule}:${n}`).join(" ") || "-";
}

export function renderScenarioTable(results: readonly CheckResult[]): string {
  const rows = scenarioRows(results.filter(isScenarioResult));
  const profiles = ORACLE_PROFILES.filter((p) => rows.some((r) => r.verdicts[p]));
  const nameWidth = Math.max(8, ...rows.map((r) => r.name.length));
  const widths = profiles.map((p) => Math.max(p.length, 5));
  const judged = rows.map(exercisedCell);
  const judgedWidth = Math.max("judged (rule:events)".length, ...judged.map((j) => j.length));
  const head = [
    "scenario".padEnd(nameWidth),
    ...profiles.map((p, i) => p.padEnd(widths[i] ?? 5)),
    "judged (rule:events)".padEnd(judgedWidth),
    "reason",
  ];
  const lines = [
    ...stageLines(results.filter((r) => !isScenarioResult(r) && !isRecordCheck(r))),
    head.join("  "),
  ];
  rows.forEach((row, k) => {
    const cells = profiles.map((p, i) => (row.verdicts[p]?.verdict ?? "-").padEnd(widths[i] ?? 5));
    const worst = Object.values(row.verdicts).sort(
      (a, b) => RANK.indexOf(a.verdict) - RANK.indexOf(b.verdict),
    )[0];
    lines.push(
      [
        row.name.padEnd(nameWidth),
        ...cells,
        (judged[k] ?? "-").padEnd(judgedWidth),
        worst?.reason ?? "",
      ].join("  "),
    );
  });
  lines.push(...recordLines(results), summaryLine(results));
  return `${lines.join("\n")}\n`;
}

/**
 * Why a repeated scenario's row is what it is: the first repetition that differs from the first
 * one and its reason (and the first one's, when that is the worse verdict); when every
 * repetition agrees, the first repetition's reason for the row's worst verdict.
 */
export function repeatedReason(entries: readonly Stability[]): string {
  const flaky = entries
    .filter((e) => e.flaky && e.differs)
    .sort((a, b) => (a.differs?.repetition ?? 0) - (b.differs?.repetition ?? 0))[0];
  if (flaky?.differs) {
    const d = flaky.differs;
    const f = flaky.first;
    const firstWorse = combineVerdicts([f.verdict, d.verdict]) === f.verdict;
    return `#${d.repetition} ${d.verdict}: ${d.reason}${firstWorse ? `; #1 ${f.verdict}: ${f.reason}` : ""}`;
  }
  const worst = [...entries].sort((a, b) => RANK.indexOf(a.worst) - RANK.indexOf(b.worst))[0];
  return worst?.first.reason ?? "";
}

/**
 * The table of a repeated run: per scenario and profile the verdict when every repetition agrees,
 * else `FLAKY <count>/<n> <worst verdict>`; the summary line counts every repetition's verdicts
 * and then the scenarios that were flaky.
 */
export function renderRepeatedTable(
  results: readonly CheckResult[],
  stability: readonly Stability[],
): string {
  const rows = new Map<string, Stability[]>();
  for (const s of stability) rows.set(s.scenario, [...(rows.get(s.scenario) ?? []), s]);
  const profiles = ORACLE_PROFILES.filter((p) => stability.some((s) => s.profile === p));
  const cell = (entries: readonly Stability[], p: string) => {
    const e = entries.find((x) => x.profile === p);
    return e ? stabilityCell(e) : "-";
  };
  const nameWidth = Math.max(8, ...[...rows.keys()].map((n) => n.length));
  const widths = profiles.map((p) =>
    Math.max(p.length, 5, ...[...rows.values()].map((entries) => cell(entries, p).length)),
  );
  const head = ["scenario".padEnd(nameWidth), ...profiles.map((p, i) => p.padEnd(widths[i] ?? 5)), "reason"];
  const lines = [...stageLines(results.filter((r) => !isScenarioResult(r))), head.join("  ")];
  for (const [name, entries] of rows) {
    const cells = profiles.map((p, i) => cell(entries, p).padEnd(widths[i] ?? 5));
    lines.push([name.padEnd(nameWidth), ...cells, repeatedReason(entries)].join("  "));
  }
  lines.push(`${summaryLine(results)}, ${flakyScenarios(stability).length} flaky`);
  return `${lines.join("\n")}\n`;
}
