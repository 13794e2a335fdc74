/**
 * The oracle: every rule judged on one scenario's trace under each oracle profile, and the
 * scenario's verdict per profile (a FAIL anywhere is a FAIL; all SKIP is a SKIP).
 */
import type { OracleProfile } from "../scenario/schema.ts";
import type { Verdict } from "../verdict.ts";
import { TraceModel } from "./model.ts";
import type { Rule, RuleId, RuleResult } from "./rule.ts";
import { rule4 } from "./rules/completion-order.ts";
import { consoleRule } from "./rules/console-clean.ts";
import { rule7 } from "./rules/defined-fields.ts";
import { rule9 } from "./rules/drain-contract.ts";
import { rule5 } from "./rules/flushed-once.ts";
import { hwCompleteRule } from "./rules/hw-complete.ts";
import { hwProtocolRule } from "./rules/hw-protocol.ts";
import { rule3 } from "./rules/partial-post.ts";
import { rule1, rule2 } from "./rules/post-in-error.ts";
import { returnsRule } from "./rules/returns.ts";
import { ulpDataRule, ulpLeakRule, ulpReturnsRule, ulpStepsRule } from "./rules/ulp.ts";
import { rule6 } from "./rules/unsignaled.ts";
import { commandsRule } from "./run-commands.ts";
import type { ScenarioTrace } from "./scenario-trace.ts";

/**
 * In the order a verdict's reason picks its first failing rule: a hang first, it explains the rest;
 * then the driver's misuse of the device (hw-protocol), which explains the completions it spoils.
 */
export const RULES: readonly Rule[] = [
  returnsRule,
  hwProtocolRule,
  rule1,
  rule2,
  rule3,
  rule4,
  rule5,
  rule6,
  rule7,
  rule9,
  consoleRule,
  commandsRule,
];

/** A ULP workload's rules (no verbs trace: rules 1-9 have nothing to judge), a hang first. */
export const ULP_RULE_SET: readonly Rule[] = [
  ulpReturnsRule,
  hwProtocolRule,
  ulpStepsRule,
  ulpDataRule,
  ulpLeakRule,
  hwCompleteRule,
  consoleRule,
];

export type RuleVerdict = RuleResult & {
  rule: RuleId;
  title: string;
  citation: string;
  /** the known driver bug that made this rule an XFAIL, XPASS or (hidden) SKIP; id: a shared record's */
  knownBug?: { reference: string; note: string; id?: string };
  /** an XFAIL the scenario's own injected device fault made (expect_fail): not a driver bug */
  injectedFault?: true;
};

export type ProfileJudgement = {
  profile: OracleProfile;
  verdict: Verdict;
  rules: RuleVerdict[];
};

const PRECEDENCE: readonly Verdict[] = ["FAIL", "ERROR", "MISS", "XFAIL", "XPASS", "PASS", "SKIP"];

/** The verdict of several: the first of FAIL, ERROR, MISS, XFAIL, XPASS, PASS, SKIP that occurs. */
export function combineVerdicts(verdicts: readonly Verdict[]): Verdict {
  return PRECEDENCE.find((v) => verdicts.includes(v)) ?? "SKIP";
}

/** Why the trace cannot be judged (records lost or refused), if it cannot. */
export function traceDefect(trace: ScenarioTrace): string | undefined {
  const lost = trace.records.filter((r) => r.ev === "overflow" || r.truncated).length;
  if (lost > 0) return `the executor's trace lost records (${lost} overflow/truncated)`;
  const rejected = trace.records.find((r) => r.ev === "reject");
  if (rejected?.ev === "reject") return `the executor refused a command: ${rejected.line}: ${rejected.why}`;
  return undefined;
}

export interface JudgeOptions {
  /** the rules the scenario covers: each must have judged something of this run, else MISS */
  covers?: readonly (string | number)[];
  /** the rules to judge (default RULES) */
  rules?: readonly Rule[];
}

/**
 * A covered rule that applies under the profile but found nothing to judge cannot vouch for the
 * scenario: it becomes a MISS naming what it did not see (never a PASS or a silent SKIP).
 */
export function requireCoverage(
  rules: readonly RuleVerdict[],
  covers: readonly (string | number)[],
): RuleVerdict[] {
  const wanted = new Set(covers.map(String));
  return rules.map((r) =>
    wanted.has(r.rule) && r.applies && r.judged === 0 && (r.verdict === "SKIP" || r.verdict === "PASS")
      ? { ...r, verdict: "MISS", reason: `rule ${r.rule} not exercised: ${r.reason}` }
      : r,
  );
}

export function judgeTrace(
  trace: ScenarioTrace,
  profiles: readonly OracleProfile[],
  opts: JudgeOptions = {},
): ProfileJudgement[] {
  const defect = traceDefect(trace);
  const model = defect ? undefined : new TraceModel(trace.records);
  return profiles.map((profile) => {
    const judged = (opts.rules ?? RULES).map((rule): RuleVerdict => {
      const head = { rule: rule.id, title: rule.title, citation: rule.citation };
      if (!model) return { ...head, verdict: "ERROR", reason: defect ?? "", judged: 0, applies: true };
      return {
        ...head,
        ...rule.judge({
          model,
          observations: trace.observations,
          profile,
          ...(trace.commands ? { commands: trace.commands } : {}),
          ...(trace.hw ? { hw: trace.hw } : {}),
        }),
      };
    });
    const rules = model ? requireCoverage(judged, opts.covers ?? []) : judged;
    return { profile, verdict: combineVerdicts(rules.map((r) => r.verdict)), rules };
  });
}
