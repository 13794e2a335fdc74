/** What a suite run reports per scenario, and the check results (the table, the exit code) made of it. */
import type { ProfileJudgement } from "../oracle/judge.ts";
import type { PremiseResult } from "../oracle/premise.ts";
import type { Observation } from "../protocol/observations.ts";
import type { KnownBug, OracleProfile } from "../scenario/schema.ts";
import type { CheckResult, Verdict } from "../verdict.ts";
import { type Repetition, type RepetitionVerdict, type Stability, stabilityOf } from "./repeat.ts";

export type ScenarioReport = {
  /** the scenario's name; a repetition's is <scenario>#<k> (repeat > 1) */
  name: string;
  file: string;
  /** repeat > 1: the scenario this is a repetition of, and which one (1-based) */
  scenario?: string;
  repetition?: number;
  /** the rules the scenario covers */
  covers?: string[];
  /** the verdict per oracle profile */
  judgements: ProfileJudgement[];
  /** set when the scenario did not run (SKIP, MISS) or the run broke (ERROR) */
  outcome?: { verdict: Verdict; reason: string };
  trace?: string;
  /** the device's hardware trace of this scenario (traces/<name>.hw.jsonl) */
  hwTrace?: string;
  observations?: Observation[];
  /** the known driver bugs that applied to this run */
  knownBugs?: KnownBug[];
  /** whether the situation the scenario exists for happened, condition by condition */
  premise?: PremiseResult;
  durationMs: number;
};

export type SuiteReport = {
  driver: string;
  executor: string;
  deviceProfile?: string;
  /** each scenario's repetitions (set when > 1) */
  repeat?: number;
  scenarios: ScenarioReport[];
  /** the probe stage's checks, when there was one */
  probe?: CheckResult[];
  boots: number;
  timings: { bootMs: number; runMs: number; judgeMs: number };
  /** repeat > 1: per scenario and oracle profile, whether its repetitions' verdicts agree */
  stability?: Stability[];
};

/** The report's name of the run and, for a repetition of several, what it repeats. */
export function runName(r: Repetition): Pick<ScenarioReport, "name" | "scenario" | "repetition"> {
  return r.of > 1 ? { name: r.name, scenario: r.scenario.name, repetition: r.repetition } : { name: r.name };
}

export function notRun(
  r: Repetition,
  profiles: OracleProfile[],
  verdict: Verdict,
  reason: string,
): ScenarioReport {
  return {
    ...runName(r),
    file: r.scenario.file,
    judgements: profiles.map((profile) => ({ profile, verdict, rules: [] })),
    outcome: { verdict, reason },
    durationMs: 0,
  };
}

/**
 * The probe stage's checks, then one CheckResult per scenario and oracle profile, then one per
 * shared known-bug record that applied by pattern and described nothing: the table, the exit code.
 */
export function suiteResults(report: SuiteReport): CheckResult[] {
  return [...(report.probe ?? []), ...scenarioResults(report), ...staleRecordResults(report)];
}

/**
 * Whether a scenario run stopped before its last step: a call that never returned (the hang rule
 * failed, known bug or not) or a run that could not be judged. What its later steps would have
 * shown is unknown.
 */
function endedEarly(s: ScenarioReport): boolean {
  return (
    s.outcome !== undefined ||
    s.judgements.some((j) =>
      j.rules.some((r) => r.rule === "hang" && (r.verdict === "FAIL" || r.verdict === "XFAIL")),
    )
  );
}

/**
 * A shared record applied to scenarios by its pattern makes no XPASS in a scenario where its bug
 * does not show; over the run, one that applied somewhere and described no failure there (no
 * XFAIL, no rule it hid) is an XPASS of its own: the bug may be fixed and the record stale. A run
 * that ended early (a hang) is no application: the steps where the bug shows may never have run.
 */
export function staleRecordResults(report: SuiteReport): CheckResult[] {
  const applied = new Map<string, number>();
  const described = new Set<string>();
  for (const s of report.scenarios) {
    for (const b of s.knownBugs ?? [])
      if (b.implied && b.id && !b.intermittent && !endedEarly(s))
        applied.set(b.id, (applied.get(b.id) ?? 0) + 1);
    for (const j of s.judgements)
      for (const r of j.rules)
        if (r.knownBug?.id && (r.verdict === "XFAIL" || r.verdict === "SKIP")) described.add(r.knownBug.id);
  }
  return [...applied]
    .filter(([id]) => !described.has(id))
    .map(([id, n]) => ({
      id: `known-bug:${id}`,
      title: `the known bug ${id} shows`,
      verdict: "XPASS" as const,
      expectedBy: "known bug" as const,
      reason: `the record applied to ${n} scenario run(s) and described none of their failures: is the bug fixed? (fixtures/known-bugs.yaml)`,
    }));
}

function judgementResult(s: ScenarioReport, j: ProfileJudgement): CheckResult {
  const failing = j.rules.find((r) => r.verdict === j.verdict && r.verdict !== "PASS");
  const reason =
    s.outcome?.reason ??
    (failing
      ? failing.rule === "premise"
        ? failing.reason
        : `rule ${failing.rule}: ${failing.reason}`
      : "every rule holds");
  return {
    id: `${s.name}[${j.profile}]`,
    title: s.name,
    verdict: j.verdict,
    reason,
    ...(failing?.evidence ? { evidence: failing.evidence } : {}),
    ...(failing?.injectedFault ? { expectedBy: "injected fault" as const } : {}),
    ...(failing?.knownBug && (j.verdict === "XFAIL" || j.verdict === "XPASS")
      ? { expectedBy: "known bug" as const }
      : {}),
    ...(s.covers ? { exercised: exercisedRules(s.covers, j) } : {}),
  };
}

function exercisedRules(covers: readonly string[], j: ProfileJudgement): { rule: string; judged: number }[] {
  return covers.flatMap((rule) => {
    const r = j.rules.find((x) => String(x.rule) === rule);
    return r && r.applies !== false ? [{ rule, judged: r.judged ?? 0 }] : [];
  });
}

function scenarioResults(report: SuiteReport): CheckResult[] {
  return report.scenarios.flatMap((s) => s.judgements.map((j) => judgementResult(s, j)));
}

/** Per scenario and profile whether its repetitions agree (the reports' repetitions, in any order). */
export function suiteStability(scenarios: readonly ScenarioReport[]): Stability[] {
  return stabilityOf(
    scenarios.flatMap((s) =>
      s.judgements.map(
        (j): RepetitionVerdict => ({
          scenario: s.scenario ?? s.name,
          repetition: s.repetition ?? 1,
          profile: j.profile,
          verdict: j.verdict,
          reason: judgementResult(s, j).reason,
        }),
      ),
    ),
  );
}
