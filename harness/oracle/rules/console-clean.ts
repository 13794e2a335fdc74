/**
 * No WARN, BUG, oops, panic, hung task, lockdep report, KASAN or KFENCE report, sleep in atomic
 * context or RCU stall on the console during the scenario
 * (its slice ends at the scenario's barrier mark).
 */
import { fail, pass, type Rule } from "../rule.ts";

export const consoleRule: Rule = {
  id: "console",
  title: "the kernel console stays clean",
  citation:
    "Linux verbs.c __ib_drain_sq/__ib_drain_rq WARN_ONCE when the ERR transition or the marker post fails",
  judge({ observations }) {
    const events = observations.filter((o) => o.ev === "console");
    const cut = observations.find((o) => o.ev === "console-cut");
    if (events.length === 0 && cut)
      return {
        verdict: "ERROR",
        reason: `the scenario's console slice has no certain end: ${cut.reason}`,
        judged: 0,
        applies: true,
      };
    if (events.length === 0) return pass("no kernel warnings on the console", 1);
    return fail(
      events.map((e) => ({
        reason: `${e.kind}: ${e.text}`,
        evidence: [
          ...e.trace.slice(0, 10),
          // a use-after-free is told by where the object was freed as much as by where it was read
          ...(e.memoryStacks ?? []).flatMap((m) => [m.title, ...m.trace.slice(0, 8)]),
        ],
      })),
      1,
    );
  },
};
