/**
 * Rule 3: a post call that fails names the WR it stopped at (*bad_wr); the WRs before it were
 * posted and complete like any other, the WR at *bad_wr and those after it were not and never do.
 */
import { cqeRefs, quote, quoteCall, ref } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

export const rule3: Rule = {
  id: "3",
  title: "a partial post counts: WRs before *bad_wr were posted and complete, the rest never do",
  citation:
    "Linux include/rdma/ib_verbs.h ib_post_send()/ib_post_recv(): on an immediate failure *bad_wr references the WR that failed to be posted",
  judge({ model }) {
    const failed = model.calls.filter((c) => c.rc !== 0 && !c.marker);
    // a call that hands back *bad_wr yet returns 0 tells its caller every WR was posted
    const contradicted = model.calls.filter((c) => c.rc === 0 && c.bad !== null && !c.marker);
    if (failed.length === 0 && contradicted.length === 0) return skip("no post call failed");
    const problems: Problem[] = contradicted.map((call) => ({
      reason: `post call ${call.call} on ${call.qp} returned 0 with *bad_wr at index ${call.bad}: the WRs from there on count as posted`,
      evidence: quoteCall(model.records, call),
      wrs: call.wrs.slice(call.bad ?? 0).map(ref),
    }));
    for (const call of failed) {
      const ev = quoteCall(model.records, call);
      if (call.bad === null) {
        problems.push({
          reason: `post call ${call.call} on ${call.qp} returned ${call.rc} without *bad_wr`,
          evidence: ev,
          wrs: call.wrs.map(ref),
        });
        continue;
      }
      for (const w of call.wrs) {
        if (!w.accepted && w.completions.length > 0)
          problems.push({
            reason: `WR ${w.wrId} at or after *bad_wr (index ${call.bad}) of call ${call.call} was not posted but completed`,
            evidence: [...ev, ...w.completions.map((c) => quote(model.records, c.at))],
            wrs: [ref(w)],
            cqes: cqeRefs(w.completions),
          });
        if (w.accepted && w.completions.length === 0 && model.deadline(w) !== undefined)
          problems.push({
            reason: `WR ${w.wrId} before *bad_wr (index ${call.bad}) of call ${call.call}, posted to ${w.qp} in ${w.postedIn}, never completed`,
            evidence: ev,
            wrs: [ref(w)],
          });
      }
    }
    if (problems.length > 0) return fail(problems, failed.length + contradicted.length);
    const before = failed.reduce((n, c) => n + c.wrs.filter((w) => w.accepted).length, 0);
    return pass(
      `${failed.length} partial post(s): ${before} WR(s) before *bad_wr completed, none after`,
      failed.length,
    );
  },
};
