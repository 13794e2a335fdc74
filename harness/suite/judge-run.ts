/**
 * One scenario's run judged into its report fields: the oracle's rules, then its expected failures
 * and the known driver bugs that apply, the device's evidence beside FAILs, and ERROR when the run
 * broke without a FAIL to show for it (or the harness itself died). Shared by the suite and by
 * `hil judge` (traces a lab brought back).
 */
import { parseConsole } from "../console/parse.ts";
import { isSlowBootWait } from "../console/slow-boot.ts";
import {
  combineVerdicts,
  judgeTrace,
  type ProfileJudgement,
  type RuleVerdict,
  ULP_RULE_SET,
} from "../oracle/judge.ts";
import { applyExpectedFailures, applyKnownBugs, type BugTarget, knownBugsFor } from "../oracle/known-bugs.ts";
import { checkPremise, type PremiseResult, premiseRow } from "../oracle/premise.ts";
import { devicesNamed, deviceWr } from "../oracle/rules/hw-complete.ts";
import { type HwTraceEvent, isServerLine } from "../protocol/hw-trace.ts";
import type { Observation, WrRef } from "../protocol/observations.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { KnownBug, OracleProfile, Scenario } from "../scenario/schema.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import type { Verdict } from "../verdict.ts";
import { isNmiPanic } from "./freeze.ts";

export interface ScenarioRun {
  records: readonly TraceRecord[];
  observations: readonly Observation[];
  sent: readonly SentCommand[];
  /** why the run broke, if it did */
  error?: string;
  /** the device server or QEMU died meanwhile: nothing is said of the driver */
  harnessFault?: string;
  /** the device's hardware trace of the scenario (the emulated device) */
  hw?: readonly HwTraceEvent[];
}

export interface JudgedRun {
  judgements: ProfileJudgement[];
  outcome?: { verdict: Verdict; reason: string };
  knownBugs?: KnownBug[];
  /** whether the situation the scenario exists for happened (absent: it states none) */
  premise?: PremiseResult;
}

export function judgeScenarioRun(
  scenario: Scenario,
  profiles: readonly OracleProfile[],
  run: ScenarioRun,
  target: BugTarget,
  hwEvidence: readonly string[] = [],
): JudgedRun {
  const bugs = knownBugsFor(scenario.known_bugs, target);
  const judged = judgeTrace(
    {
      records: [...run.records],
      observations: [...run.observations],
      commands: [...run.sent],
      ...(run.hw ? { hw: run.hw } : {}),
    },
    [...profiles],
    { covers: scenario.covers, ...(scenario.workload !== "verbs" ? { rules: ULP_RULE_SET } : {}) },
  );
  const targets =
    scenario.workload === "verbs"
      ? run.observations.flatMap((o) => (o.ev === "fault" && o.wr ? [o.wr] : []))
      : firedOnWqes(run.hw ?? []);
  const premise = checkPremise(scenario.premise, {
    records: run.records,
    ...(run.hw ? { hw: run.hw } : {}),
    driver: target.driver,
    faults: scenario.steps.some((s) => "fault" in s),
  });
  const row = premise ? premiseRow(premise) : undefined;
  // a fault that never fired broke nothing: its scenario is a MISS, not an oracle that missed it
  const expected = row?.verdict === "MISS" ? undefined : scenario.expect_fail;
  const judgements = withHwEvidence(
    applyKnownBugs(applyExpectedFailures(withPremise(judged, row), expected, targets), bugs),
    hwEvidence,
  );
  const errored =
    run.harnessFault !== undefined ||
    (run.error !== undefined && !judgements.some((j) => j.verdict === "FAIL"));
  return {
    judgements: leanJudgements(errored ? judgements.map((j) => ({ ...j, verdict: "ERROR" })) : judgements),
    ...(errored ? { outcome: { verdict: "ERROR" as const, reason: run.error ?? "" } } : {}),
    ...(bugs.length > 0 ? { knownBugs: bugs } : {}),
    ...(premise ? { premise } : {}),
  };
}

/**
 * The premise's row first in each profile's rules (its MISS explains what a PASS would have claimed).
 * A step that hung ended the scenario before the steps that make its situation ran: the hang is the
 * verdict, and the premise is not known (SKIP), not missed.
 */
function withPremise(judged: readonly ProfileJudgement[], row: RuleVerdict | undefined): ProfileJudgement[] {
  if (!row) return [...judged];
  return judged.map((j) => {
    const hung = row.verdict === "MISS" && j.rules.some((r) => r.rule === "hang" && r.verdict === "FAIL");
    const premise: RuleVerdict = hung
      ? { ...row, verdict: "SKIP", reason: `not reached: a step hung first (${row.reason})`, judged: 0 }
      : row;
    const rules = [premise, ...j.rules];
    return { ...j, rules, verdict: combineVerdicts(rules.map((r) => r.verdict)) };
  });
}

/**
 * The WQEs the device's faults hit, from its trace (a ULP's WRs are known to the device only): the
 * WRs an expected failure must name.
 */
function firedOnWqes(hw: readonly HwTraceEvent[]): WrRef[] {
  const events = hw.filter((e) => !isServerLine(e));
  const named = devicesNamed(events);
  return events.flatMap((e) => {
    if (isServerLine(e) || e.kind !== "fault" || e.action !== "fired") return [];
    const c = e.context as { qpn?: unknown; queue?: unknown; index?: unknown } | undefined;
    return typeof c?.qpn === "number" && (c.queue === "sq" || c.queue === "rq") && typeof c.index === "number"
      ? [deviceWr(c.qpn, c.queue, c.index, named ? e.dev : undefined)]
      : [];
  });
}

/**
 * The judgements as verdicts.json keeps them: each problem's reason, its WRs and the completions it
 * judged wrong (its records are in the rule's evidence).
 */
export function leanJudgements(judgements: readonly ProfileJudgement[]): ProfileJudgement[] {
  return judgements.map((j) => ({
    ...j,
    rules: j.rules.map((r) =>
      r.problems
        ? {
            ...r,
            problems: r.problems.map((p) => ({
              reason: p.reason,
              evidence: [],
              ...(p.wrs ? { wrs: p.wrs } : {}),
              ...(p.cqes ? { cqes: p.cqes } : {}),
            })),
          }
        : r,
    ),
  }));
}

/** Adds the hardware events that explain it to each FAIL/XFAIL rule's evidence. */
export function withHwEvidence(judgements: ProfileJudgement[], hw: readonly string[]): ProfileJudgement[] {
  if (hw.length === 0) return judgements;
  return judgements.map((j) => ({
    ...j,
    rules: j.rules.map((r) =>
      r.verdict === "FAIL" || r.verdict === "XFAIL" ? { ...r, evidence: [...(r.evidence ?? []), ...hw] } : r,
    ),
  }));
}

/**
 * What the kernel log of a scenario shows, as the console rule reads it: an NMI's own panic left
 * out, and init's wait for a slowly unpacked initramfs (a slice that starts at a boot holds it).
 */
export function consoleObservations(text: string): Observation[] {
  return parseConsole(text).flatMap((e) =>
    isNmiPanic(e) || isSlowBootWait(e)
      ? []
      : [
          {
            ev: "console" as const,
            kind: e.kind,
            text: e.text,
            trace: e.trace,
            ...(e.memoryStacks ? { memoryStacks: e.memoryStacks } : {}),
          },
        ],
  );
}
