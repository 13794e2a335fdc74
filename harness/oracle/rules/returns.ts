/** Every verbs call of the scenario returns within its step's watchdog; a stuck one is a hang. */
import { fail, pass, type Rule } from "../rule.ts";

export const returnsRule: Rule = {
  id: "hang",
  title: "every verbs call returns (no hang)",
  citation:
    "IBTA Vol 1 ch. 11 (verbs return their result to the consumer); Linux verbs.c ib_drain_qp() waits with no timeout, so a hang is the driver's",
  judge({ model, observations }) {
    const watched = model.records.filter((r) => r.ev === "cmd").length;
    const stuck = observations.filter((o) => o.ev === "stuck");
    if (stuck.length === 0) return pass("every command returned within its watchdog", watched);
    return fail(
      stuck.map((s) => ({
        reason: `${s.op} (step ${s.step + 1}) did not return within ${s.ms} ms; the worker is ${s.state}`,
        evidence: [
          ...s.stack.split("\n").map((l) => `stack: ${l}`),
          ...(s.declared ? [`declared hung before its watchdog ran out: ${s.declared}`] : []),
        ],
      })),
      watched,
    );
  },
};
