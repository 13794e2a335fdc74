/**
 * Before a scenario ends, its CQs are polled for the completions still owed (WRs of QPs in ERR
 * that have none yet), so that a late flush is seen and a missing one is known to be missing.
 */

import { TraceModel } from "../oracle/model.ts";
import { commandLine } from "../protocol/commands.ts";
import type { TraceRecord } from "../protocol/trace.ts";

/** How many completions each CQ still owes, as the trace so far tells. */
export function owedCompletions(records: readonly TraceRecord[]): Map<string, number> {
  const model = new TraceModel(records);
  const owed = new Map<string, number>();
  for (const w of model.wrs) {
    if (w.completions.length > 0 || model.deadline(w) === undefined) continue;
    const cq = model.cqOf(w.qp, w.queue);
    if (cq) owed.set(cq, (owed.get(cq) ?? 0) + 1);
  }
  return owed;
}

/** One poll per CQ: waits up to waitMs for what it owes, or makes one pass when it owes nothing. */
export function settleCommands(
  records: readonly TraceRecord[],
  cqs: readonly string[],
  waitMs: number,
): string[] {
  const owed = owedCompletions(records);
  return cqs.map((cq) => {
    const min = owed.get(cq) ?? 0;
    return commandLine("poll", { cq, min, timeout: min > 0 ? waitMs : 0 });
  });
}
