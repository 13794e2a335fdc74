/**
 * Which rules each step of a scenario is meant to exercise, read from the steps alone (the QP
 * states they lead to, what they post and how): what `hil scenarios --show` prints beside each
 * step, so a scenario's author sees whether its steps can exercise what it covers. Whether a
 * rule was exercised in a run is the oracle's (each rule counts the events it judged).
 */
import type { CompiledScenario, CompiledStep } from "./compile.ts";
import type { Step } from "./schema.ts";

type Side = "qp" | "peer" | "fanout";
/** a rule as the oracle names it ("1" .. "9") */
type RuleName = string;

function sideOf(step: Step): Side | undefined {
  for (const k of ["post_send", "post_recv", "modify", "drain", "query", "destroy"] as const)
    if (k in step) return (step as Record<typeof k, { on: Side }>)[k].on;
  return undefined;
}

function postRules(step: CompiledStep, spec: { bad?: number | undefined }, inError: boolean): RuleName[] {
  const rules: RuleName[] = [];
  if (inError) rules.push(step.kind === "post_send" ? "1" : "2");
  if (spec.bad !== undefined || step.expect === "error" || typeof step.expect === "number") rules.push("3");
  if (step.kind === "post_send" && step.posts && step.posts.signal !== "all") rules.push("6");
  return rules;
}

/** Per compiled step, the rules it is meant to exercise (in rule order). */
export function stepRules(c: CompiledScenario): RuleName[][] {
  const state: Record<Side, string> = { qp: "RTS", peer: "RTS", fanout: "RTS" };
  const faultRules = (c.scenario.expect_fail?.rules ?? []).map((r) => String(r) as RuleName);
  return c.steps.map((step) => {
    const spec = c.scenario.steps[step.index] as Step;
    const side = sideOf(spec);
    const inError = side !== undefined && state[side] === "ERR";
    let rules: RuleName[] = [];
    if ("post_send" in spec) rules = postRules(step, spec.post_send, inError);
    else if ("post_recv" in spec) rules = postRules(step, spec.post_recv, inError);
    else if ("drain" in spec)
      rules = ["1", "2", "4", "5", "9"].filter(
        (r) => r !== (spec.drain.which === "rq" ? "1" : spec.drain.which === "sq" ? "2" : ""),
      ) as RuleName[];
    else if ("poll" in spec) rules = ["4", "5", "7"];
    else if ("fault" in spec) rules = faultRules;
    if ("modify" in spec && side) state[side] = spec.modify.state;
    if ("drain" in spec && side) state[side] = "ERR";
    return [...new Set(rules)];
  });
}
