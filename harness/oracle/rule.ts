/** The shape of an oracle rule: a pure function of the trace model, the observations and the profile. */
import type { OracleProfile } from "../scenario/schema.ts";
import type { Verdict } from "../verdict.ts";
import type { TraceModel } from "./model.ts";
import type { Observation } from "./observations.ts";

export type RuleId = "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "hang" | "console";

export type RuleResult = {
  verdict: Verdict;
  reason: string;
  /** the offending trace records and observations, quoted */
  evidence?: string[];
};

export interface RuleInput {
  model: TraceModel;
  observations: readonly Observation[];
  profile: OracleProfile;
}

export interface Rule {
  id: RuleId;
  title: string;
  /** where the requirement is written */
  citation: string;
  judge(input: RuleInput): RuleResult;
}

/** At most this many quoted events per verdict. */
export const MAX_EVIDENCE = 12;

export function pass(reason: string): RuleResult {
  return { verdict: "PASS", reason };
}
export function skip(reason: string): RuleResult {
  return { verdict: "SKIP", reason };
}
export function fail(problems: readonly { reason: string; evidence: readonly string[] }[]): RuleResult {
  const first = problems[0];
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
  return {
    verdict: "FAIL",
    reason: `${first?.reason ?? "rule broken"}${more}`,
    evidence: problems
      .flatMap((p) => [`- ${p.reason}`, ...p.evidence.map((e) => `  ${e}`)])
      .slice(0, MAX_EVIDENCE),
  };
}

export type Problem = { reason: string; evidence: string[] };
