/**
 * Rule 5: every outstanding WR completes exactly once, on the CQ of its own queue (send_cq for
 * the SQ, recv_cq for the RQ), and nothing completes that was never posted.
 */
import { cqeRefs, quote, ref, wrName } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

export const rule5: Rule = {
  id: "5",
  title: "every outstanding WR is completed exactly once, on its own CQ",
  citation:
    "IBTA Vol 1 11.4.1.1/11.4.1.2 (each WR posted in Error completes with a flush error) and ch. 10.8 (a WQ's completions go to the CQ it was created with); Linux ib_drain_qp()",
  judge({ model }) {
    const problems: Problem[] = [];
    for (const c of model.completions) {
      if (!c.wr) {
        problems.push({
          reason: `a completion for ${c.rec.qp} ${c.rec.queue} WR ${c.rec.ev === "cqe" ? c.rec.wr_id : "(marker)"} that was never posted`,
          evidence: [quote(model.records, c.at)],
          cqes: cqeRefs([c]),
        });
        continue;
      }
      const want = model.cqOf(c.wr.qp, c.wr.queue);
      if (want !== undefined && c.rec.cq !== want)
        problems.push({
          reason: `${c.wr.qp} ${c.wr.queue} ${wrName(c.wr)} completed on ${c.rec.cq}, its queue's CQ is ${want}`,
          evidence: [quote(model.records, c.at)],
          wrs: [ref(c.wr)],
          cqes: cqeRefs([c]),
        });
    }
    let owed = 0;
    for (const w of model.wrs) {
      if (w.completions.length > 1)
        problems.push({
          reason: `${w.qp} ${w.queue} ${wrName(w)} completed ${w.completions.length} times`,
          evidence: w.completions.map((c) => quote(model.records, c.at)),
          wrs: [ref(w)],
          cqes: cqeRefs(w.completions),
        });
      if (model.deadline(w) === undefined) continue;
      owed++;
      if (w.completions.length === 0)
        problems.push({
          reason: `${w.qp} ${w.queue} ${wrName(w)} (posted in ${w.postedIn}) never completed though ${w.qp} ended in ERR`,
          evidence: [quote(model.records, w.at)],
          wrs: [ref(w)],
        });
    }
    const judged = model.completions.length + owed;
    if (problems.length > 0) return fail(problems, judged);
    if (judged === 0) return skip("no completion came and none was owed");
    return pass(
      `${model.completions.length} completion(s), each of a posted WR on its own CQ, none twice; ${owed} owed completion(s) all present`,
      judged,
    );
  },
};
