/**
 * The drain suite's verdict table: one row a scenario, one column an oracle profile, then the
 * reason of the row's worst verdict, then the summary line a CI log shows.
 */
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

export function renderScenarioTable(results: readonly CheckResult[]): string {
  const isScenario = (r: CheckResult) => /^(.*)\[([a-z-]+)\]$/.test(r.id);
  const rows = scenarioRows(results.filter(isScenario));
  const profiles = ORACLE_PROFILES.filter((p) => rows.some((r) => r.verdicts[p]));
  const nameWidth = Math.max(8, ...rows.map((r) => r.name.length));
  const widths = profiles.map((p) => Math.max(p.length, 5));
  const head = ["scenario".padEnd(nameWidth), ...profiles.map((p, i) => p.padEnd(widths[i] ?? 5)), "reason"];
  const lines = [...stageLines(results.filter((r) => !isScenario(r))), head.join("  ")];
  for (const row of rows) {
    const cells = profiles.map((p, i) => (row.verdicts[p]?.verdict ?? "-").padEnd(widths[i] ?? 5));
    const worst = Object.values(row.verdicts).sort(
      (a, b) => RANK.indexOf(a.verdict) - RANK.indexOf(b.verdict),
    )[0];
    lines.push([row.name.padEnd(nameWidth), ...cells, worst?.reason ?? ""].join("  "));
  }
  lines.push(summaryLine(results));
  return `${lines.join("\n")}\n`;
}
