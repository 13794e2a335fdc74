/**
 * Rule 6: an unsignaled WR that does not execute still completes, in error; one that executes
 * successfully produces no completion.
 */
import { WC_SUCCESS } from "../../protocol/trace.ts";
import { cqeRefs, quote, ref, wrName } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

export const rule6: Rule = {
  id: "6",
  title: "unsignaled WRs get error completions, never success completions",
  citation:
    "IBTA Vol 1 10.7.3.1 (unsignaled completions: a WR completing in error always generates a completion); Linux IB_SEND_SIGNALED / IB_SIGNAL_REQ_WR",
  judge({ model }) {
    const unsignaled = model.wrs.filter((w) => !w.signaled && w.accepted); // sends: a receive is signaled
    if (unsignaled.length === 0) return skip("no unsignaled send WR");
    const problems: Problem[] = [];
    for (const w of unsignaled) {
      const success = w.completions.filter((c) => c.rec.status === WC_SUCCESS);
      if (success.length > 0)
        problems.push({
          reason: `unsignaled WR ${w.wrId} on ${w.qp} has a SUCCESS completion`,
          evidence: [quote(model.records, w.at), ...success.map((c) => quote(model.records, c.at))],
          wrs: [ref(w)],
          cqes: cqeRefs(success),
        });
      else if (w.completions.length === 0 && model.deadline(w) !== undefined)
        problems.push({
          reason: `unsignaled ${wrName(w)} posted to ${w.qp} in ${w.postedIn} got no error completion`,
          evidence: [quote(model.records, w.at)],
          wrs: [ref(w)],
        });
    }
    if (problems.length > 0) return fail(problems, unsignaled.length);
    const flushed = unsignaled.filter((w) => w.completions.length > 0).length;
    return pass(
      `${unsignaled.length} unsignaled WR(s): ${flushed} completed in error, none with SUCCESS`,
      unsignaled.length,
    );
  },
};
