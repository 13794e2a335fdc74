/**
 * A suite run's verdicts (the verdicts.json `hil run` and every job write) as a flat list a
 * workflow compares: one entry per check of the probe stage, per scenario and oracle profile,
 * and per rule under it. validate diffs two of them, merge checks shards against each other,
 * repro matches a case's expectations against one.
 */

import type { CheckResult, Verdict } from "../verdict.ts";
import type { RunJudgement, RunRecord } from "./schema.ts";

export interface VerdictEntry {
  /** "<scenario>[<profile>]", "<scenario>[<profile>] rule <r>", or a check's id */
  key: string;
  scenario?: string;
  profile?: string;
  rule?: string;
  verdict: Verdict;
  reason: string;
  evidence?: string[];
  /** a rule's FAIL: each problem's reason */
  problems?: string[];
}

const SCENARIO_ID = /^(.*)\[([a-z-]+)\]$/;

function ruleEntries(name: string, j: RunJudgement): VerdictEntry[] {
  return j.rules.map((r) => ({
    key: `${name}[${j.profile}] rule ${r.rule}`,
    scenario: name,
    profile: j.profile,
    rule: r.rule,
    verdict: r.verdict,
    reason: r.reason,
    ...(r.evidence ? { evidence: r.evidence } : {}),
    ...(r.problems?.length ? { problems: r.problems.map((p) => p.reason) } : {}),
  }));
}

/** Every verdict of a record: checks and scenario/profile verdicts (results), then rules. */
export function verdictEntries(record: RunRecord): VerdictEntry[] {
  const out: VerdictEntry[] = [];
  const rulesOf = new Map<string, VerdictEntry[]>();
  for (const s of record.scenarios ?? [])
    for (const j of s.judgements) rulesOf.set(`${s.name}[${j.profile}]`, ruleEntries(s.name, j));
  for (const r of record.results) {
    const m = SCENARIO_ID.exec(r.id);
    out.push({
      key: r.id,
      ...(m ? { scenario: m[1], profile: m[2] } : {}),
      verdict: r.verdict,
      reason: r.reason,
      ...(r.evidence ? { evidence: r.evidence } : {}),
    });
    out.push(...(rulesOf.get(r.id) ?? []));
  }
  return out;
}

/** key -> verdict, the form two runs are compared in. */
export function verdictMap(record: RunRecord): Map<string, Verdict> {
  return new Map(verdictEntries(record).map((e) => [e.key, e.verdict]));
}

/** Counts of each verdict among the results (the checks and scenario/profile verdicts). */
export function verdictCounts(results: readonly CheckResult[]): Partial<Record<Verdict, number>> {
  const counts: Partial<Record<Verdict, number>> = {};
  for (const r of results) counts[r.verdict] = (counts[r.verdict] ?? 0) + 1;
  return counts;
}

export function countsText(counts: Partial<Record<Verdict, number>>): string {
  const order: Verdict[] = ["PASS", "FAIL", "XFAIL", "XPASS", "ERROR", "MISS", "SKIP"];
  return (
    order
      .filter((v) => (counts[v] ?? 0) > 0)
      .map((v) => `${counts[v]} ${v}`)
      .join(", ") || "no verdicts"
  );
}

/** A run's verdicts above the rules (probe checks, scenario x profile), by key. */
export function topLevelEntries(record: RunRecord): Map<string, VerdictEntry> {
  return new Map(
    verdictEntries(record)
      .filter((e) => e.rule === undefined)
      .map((e) => [e.key, e]),
  );
}

/** The rule verdicts under one scenario x profile key (`name[profile]`), by rule. */
export function ruleEntriesOf(record: RunRecord, key: string): Map<string, VerdictEntry> {
  return new Map(
    verdictEntries(record)
      .filter((e) => e.rule !== undefined && `${e.scenario}[${e.profile}]` === key)
      .map((e) => [e.rule as string, e]),
  );
}
