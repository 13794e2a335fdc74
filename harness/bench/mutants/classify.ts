/**
 * Whether the drain suite caught a series: compared with the base run, a scenario verdict that was
 * PASS, XFAIL, XPASS or SKIP became a FAIL (caught by a rule), or an ERROR or MISS, or is missing
 * (the series broke the run itself). A series whose kernel was not built, or whose run judged
 * nothing (its selection left every scenario out), is invalid, neither caught
 * nor survived. For a benign series any such FAIL is a false FAIL.
 */
import type { RunRecord } from "../../rundir/schema.ts";
import { ruleEntriesOf, topLevelEntries } from "../../rundir/verdict-list.ts";
import type { ExecutorKind } from "../../scenario/schema.ts";
import { PASSING_VERDICTS, type Verdict } from "../../verdict.ts";
import type { SeriesKind } from "./manifest.ts";

export interface Catch {
  /** "<scenario>[<profile>]" or a probe check's id */
  key: string;
  scenario?: string;
  profile?: string;
  executor: ExecutorKind;
  base: Verdict;
  /** undefined: the patched run has no such verdict (its suite did not run) */
  patched?: Verdict;
  how: "fail" | "not-judged";
  /** the rules that FAIL with the series and did not on the base */
  rules: string[];
  reason: string;
}

export interface RunComparison {
  catches: Catch[];
  /** why the patched run says nothing about the driver (its kernel was not built, or it ran nothing) */
  invalid?: string;
}

const UNJUDGED: readonly Verdict[] = ["ERROR", "MISS"];

function failingRules(record: RunRecord, key: string): Map<string, Verdict> {
  return new Map([...ruleEntriesOf(record, key)].map(([rule, e]) => [rule, e.verdict]));
}

/**
 * The catches of one patched run against the base run of the same executor. With `scenarios`, the
 * patched run ran only those: the base's other scenarios are not compared (probe checks always are).
 */
export function compareRuns(
  base: RunRecord,
  patched: RunRecord,
  executor: ExecutorKind,
  scenarios?: ReadonlySet<string>,
): RunComparison {
  const kernel = patched.results.find((r) => r.id === "kernel" && r.verdict === "ERROR");
  if (kernel) return { catches: [], invalid: kernel.reason };
  // a run whose selection left every scenario out judged nothing: no verdict of it is missing
  if (patched.results.length === 0 && (patched.scenarios ?? []).length === 0)
    return { catches: [], invalid: "the run judged nothing: its selection left every scenario out" };
  const a = topLevelEntries(base);
  const b = topLevelEntries(patched);
  const suiteError = patched.results.find((r) => r.id === "suite" && UNJUDGED.includes(r.verdict));
  const catches: Catch[] = [];
  for (const [key, x] of a) {
    if (!PASSING_VERDICTS.includes(x.verdict)) continue;
    if (scenarios && x.scenario !== undefined && !scenarios.has(x.scenario)) continue;
    const y = b.get(key);
    const how =
      y?.verdict === "FAIL" ? "fail" : !y || UNJUDGED.includes(y.verdict) ? "not-judged" : undefined;
    if (!how) continue;
    const baseRules = failingRules(base, key);
    const rules = [...failingRules(patched, key)]
      .filter(([rule, v]) => v === "FAIL" && baseRules.get(rule) !== "FAIL")
      .map(([rule]) => rule);
    catches.push({
      key,
      ...(x.scenario ? { scenario: x.scenario, profile: x.profile } : {}),
      executor,
      base: x.verdict,
      ...(y ? { patched: y.verdict } : {}),
      how,
      rules,
      reason: y?.reason ?? suiteError?.reason ?? "no verdict with the series",
    });
  }
  return { catches };
}

export type Outcome =
  /** a mutant: some verdict the base passed became a FAIL, or could not be judged */
  | "caught"
  | "survived"
  /** a benign series with a new FAIL */
  | "false-fail"
  /** a benign series that broke a run (ERROR/MISS) without a FAIL */
  | "not-judged"
  | "clean"
  /** the kernel with the series was not built, or the run judged nothing */
  | "invalid";

export function outcomeOf(kind: SeriesKind, runs: readonly RunComparison[]): Outcome {
  if (runs.some((r) => r.invalid !== undefined)) return "invalid";
  const catches = runs.flatMap((r) => r.catches);
  if (kind === "mutant") return catches.length > 0 ? "caught" : "survived";
  if (catches.some((c) => c.how === "fail")) return "false-fail";
  return catches.length > 0 ? "not-judged" : "clean";
}

export interface CampaignSummary {
  mutants: number;
  caught: number;
  /** caught by a FAIL (not only by an ERROR or MISS) */
  caughtByRule: number;
  survived: number;
  invalid: number;
  /** caught / mutants written (undefined without mutants) */
  catchRate?: number;
  benign: number;
  falseFails: number;
  benignNotJudged: number;
}

export interface SeriesOutcome {
  kind: SeriesKind;
  outcome: Outcome;
  catches: readonly Catch[];
}

export function summarize(results: readonly SeriesOutcome[]): CampaignSummary {
  const mutants = results.filter((r) => r.kind === "mutant");
  const judged = mutants.filter((r) => r.outcome !== "invalid");
  const caught = judged.filter((r) => r.outcome === "caught");
  const benign = results.filter((r) => r.kind === "benign");
  return {
    mutants: mutants.length,
    caught: caught.length,
    caughtByRule: caught.filter((r) => r.catches.some((c) => c.how === "fail")).length,
    survived: judged.filter((r) => r.outcome === "survived").length,
    invalid: results.filter((r) => r.outcome === "invalid").length,
    ...(mutants.length > 0 ? { catchRate: caught.length / mutants.length } : {}),
    benign: benign.length,
    falseFails: benign.filter((r) => r.outcome === "false-fail").length,
    benignNotJudged: benign.filter((r) => r.outcome === "not-judged").length,
  };
}
