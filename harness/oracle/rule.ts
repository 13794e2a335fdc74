/** The shape of an oracle rule: a pure function of the trace model, the observations and the profile. */
import type { HwTraceEvent } from "../protocol/hw-trace.ts";
import type { Observation, WrRef } from "../protocol/observations.ts";
import type { OracleProfile } from "../scenario/schema.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import type { Verdict } from "../verdict.ts";
import type { TraceModel } from "./model.ts";

export type RuleId =
  | "1"
  | "2"
  | "3"
  | "4"
  | "5"
  | "6"
  | "7"
  | "9"
  | "hang"
  | "console"
  | "commands"
  | "ulp-data"
  | "ulp-steps"
  | "ulp-leak"
  | "hw-complete"
  | "hw-protocol"
  | "premise";

/**
 * One way the rule was broken: the records that show it, the WRs it is about and, by their index
 * in the trace, the completions it judged wrong (a completion out of order, twice, on the wrong
 * CQ, with the wrong status or fields); a WR that never completed has none.
 */
export type Problem = { reason: string; evidence: string[]; wrs?: WrRef[]; cqes?: number[] };

export type RuleResult = {
  verdict: Verdict;
  reason: string;
  /** the offending trace records and observations, quoted */
  evidence?: string[];
  /** a FAIL's problems, each on its own (known bugs and expected faults are matched per problem) */
  problems?: Problem[];
  /** how many events of this run the rule was applied to (0: it found nothing to judge) */
  judged: number;
  /** false when the oracle profile does not judge this rule at all (rule 9 outside linux) */
  applies: boolean;
};

export type RuleInput = {
  model: TraceModel;
  observations: readonly Observation[];
  profile: OracleProfile;
  /** the command lines the executor was given, with their steps (the commands rule) */
  commands?: readonly SentCommand[];
  /** the device's hardware trace of the scenario (the emulated device only) */
  hw?: readonly HwTraceEvent[];
};

export type Rule = {
  id: RuleId;
  title: string;
  /** where the requirement is written */
  citation: string;
  judge(input: RuleInput): RuleResult;
};

/** At most this many quoted events per verdict. */
export const MAX_EVIDENCE = 12;

export function pass(reason: string, judged: number): RuleResult {
  return { verdict: "PASS", reason, judged, applies: true };
}

/** The rule applies, but this run gave it nothing to judge. */
export function skip(reason: string): RuleResult {
  return { verdict: "SKIP", reason, judged: 0, applies: true };
}

/** The oracle profile does not judge this rule. */
export function notUnder(reason: string): RuleResult {
  return { verdict: "SKIP", reason, judged: 0, applies: false };
}

export function fail(problems: readonly Problem[], judged: number): RuleResult {
  return { ...summarise(problems), verdict: "FAIL", problems: [...problems], judged, applies: true };
}

/** A rule's one-line reason and its evidence, from its problems. */
export function summarise(problems: readonly Problem[]): { reason: string; evidence: string[] } {
  const first = problems[0];
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
  return {
    reason: `${first?.reason ?? "rule broken"}${more}`,
    evidence: problems
      .flatMap((p) => [`- ${p.reason}`, ...p.evidence.map((e) => `  ${e}`)])
      .slice(0, MAX_EVIDENCE),
  };
}
