/**
 * No WARN, BUG, oops, panic, hung task, lockdep report, KASAN or KFENCE report, sleep in atomic
 * context or RCU stall on the console during the scenario
 * (its slice ends at the scenario's barrier mark).
 */
import type { MemoryStack } from "../../console/parse.ts";
import { fail, MAX_EVIDENCE, pass, type Rule } from "../rule.ts";

/** A stack line that is a call: "fn+0x1/0x2 [mod]", not a stale "? fn+..." word or a RIP line. */
const CALL_FRAME = /^[\w.$]+\+0x[0-9a-f]+\/0x[0-9a-f]+\b/;
/**
 * How the kernel printed the report, not where the bug is: dump_stack (lib/dump_stack.c), KASAN's
 * and KFENCE's reporters (mm/kasan/report.c, mm/kasan/common.c, mm/kfence/report.c) and lockdep's
 * (kernel/locking/lockdep.c: check_prev_add finds the cycle, print_circular_bug prints it).
 */
const CHECKER_FRAME =
  /^(dump_stack(_lvl)?|print_report|_*kasan_\w+|_*kfence_\w+|print_circular_bug|check_noncircular|check_prevs?_add|validate_chain)\+/;
/** A word the unwinder found on the stack that is not a call ("? fn+0x1/0x2"). */
const STALE_FRAME = /^\? /;
/**
 * Calls quoted per stack of a memory report: its reason, the access stack, and the allocation and
 * free stacks with their titles fit the rule's MAX_EVIDENCE lines (1 + 3 + 2 x (1 + 3) = 12).
 */
const MEMORY_STACK_FRAMES = Math.floor((MAX_EVIDENCE - 3) / 3);

function callFrames(trace: readonly string[]): string[] {
  return trace.filter((l) => CALL_FRAME.test(l) && !CHECKER_FRAME.test(l)).slice(0, MEMORY_STACK_FRAMES);
}

/**
 * A KASAN or KFENCE report's evidence: a use-after-free is told by where the object was allocated
 * and freed as much as by where it was read, so each of the three stacks gets its first calls.
 */
function memoryReportEvidence(trace: readonly string[], stacks: readonly MemoryStack[]): string[] {
  return [...callFrames(trace), ...stacks.flatMap((m) => [m.title, ...callFrames(m.trace)])];
}

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
        evidence: e.memoryStacks?.length
          ? memoryReportEvidence(e.trace, e.memoryStacks)
          : e.trace.filter((l) => !STALE_FRAME.test(l) && !CHECKER_FRAME.test(l)).slice(0, 10),
      })),
      1,
    );
  },
};
