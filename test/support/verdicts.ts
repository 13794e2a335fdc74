/** A run directory's verdicts.json as the integration tests read it, and lookups into it. */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface RuleVerdict {
  rule: string;
  verdict: string;
  reason: string;
  evidence?: string[];
}

export interface ScenarioVerdict {
  name: string;
  judgements: { profile: string; verdict: string; rules: RuleVerdict[] }[];
  outcome?: { verdict: string; reason: string };
  trace?: string;
  hwTrace?: string;
  observations?: Array<{ ev: string; step?: number; kind?: string; spec?: Record<string, unknown> }>;
  knownBugs?: { reference: string }[];
}

export function loadVerdicts(dir: string): {
  scenarios: ScenarioVerdict[];
  probe?: { id: string; verdict: string }[];
} {
  return JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
}

export function scenarioOf(dir: string, name: string): ScenarioVerdict {
  const s = loadVerdicts(dir).scenarios.find((x) => x.name === name);
  if (!s) throw new Error(`no ${name} in ${dir}`);
  return s;
}

/** "<profile> <verdict>" per oracle profile */
export const verdictsOf = (s: ScenarioVerdict) => s.judgements.map((j) => `${j.profile} ${j.verdict}`);

export const ruleOf = (s: ScenarioVerdict, profile: string, rule: string) =>
  s.judgements.find((j) => j.profile === profile)?.rules.find((r) => r.rule === rule);
