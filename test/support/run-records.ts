/** A verdicts.json record made of a few cells, for tests of what compares two runs. */
import type { RunRecord } from "../../harness/rundir/schema.ts";
import type { CheckResult, Verdict } from "../../harness/verdict.ts";

/** A scenario under an oracle profile: its verdict and, optionally, its rules' verdicts. */
export type Cell = [scenario: string, profile: string, verdict: Verdict, rules?: Record<string, Verdict>];

export type RecordOptions = {
  /** the probe stage's verdict; with it the record carries a probe list too */
  probe?: Verdict;
  /** results put between the probe and the scenarios */
  extra?: CheckResult[];
  /** a scenario result's reason */
  reason?: (scenario: string, profile: string, verdict: Verdict) => string;
};

export function runRecordOf(cells: readonly Cell[], opts: RecordOptions = {}): RunRecord {
  const names = [...new Set(cells.map((c) => c[0]))];
  const probe = { id: "erdma-probe", title: "probe", verdict: opts.probe ?? "PASS", reason: "-" };
  const reason = opts.reason ?? ((s, p, v) => `${s} ${p} ${v}`);
  return {
    kernel: "debian:6.12",
    ...(opts.probe ? { probe: [probe] } : {}),
    scenarios: names.map((name) => ({
      name,
      file: `${name}.yaml`,
      durationMs: 1,
      judgements: cells
        .filter((c) => c[0] === name)
        .map(([, profile, verdict, rules]) => ({
          profile: profile as "ib",
          verdict,
          rules: Object.entries(rules ?? {}).map(([rule, v]) => ({
            rule: rule as "1",
            title: "-",
            citation: "-",
            verdict: v,
            reason: `rule ${rule} ${v}`,
          })),
        })),
    })),
    results: [
      probe,
      ...(opts.extra ?? []),
      ...cells.map(([s, p, v]) => ({ id: `${s}[${p}]`, title: s, verdict: v, reason: reason(s, p, v) })),
    ],
  } as RunRecord;
}
