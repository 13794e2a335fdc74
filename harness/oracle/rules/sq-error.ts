/**
 * Rule 8: in the Send Queue Error state the receive queue keeps working: receives post with 0
 * and are not flushed.
 */
import { WC_WR_FLUSH_ERR } from "../../protocol/trace.ts";
import { quote } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

export const rule8: Rule = {
  id: "8",
  title: "in SQ Error, receive WRs keep being processed",
  citation: "IBTA Vol 1 10.3.1 (QP states: Send Queue Error) and 11.4.1.2 Post Receive Request",
  judge({ model, profile }) {
    if (profile === "iwarp-rdmac") return skip("the RDMAC verbs have no SQ Error state");
    const problems: Problem[] = [];
    let judged = 0;
    for (const qp of model.qps.keys()) {
      for (const [from, to] of model.intervalsIn(qp, "SQE")) {
        for (const call of model.calls.filter(
          (c) => c.qp === qp && c.queue === "rq" && c.at > from && c.at < to,
        )) {
          judged++;
          if (call.rc !== 0)
            problems.push({
              reason: `receive post call ${call.call} on ${qp} in SQE returned ${call.rc}`,
              evidence: [
                quote(model.records, call.at),
                ...(call.retAt === undefined ? [] : [quote(model.records, call.retAt)]),
              ],
            });
        }
        for (const c of model.completions.filter(
          (x) => x.rec.qp === qp && x.rec.queue === "rq" && x.at > from && x.at < to,
        )) {
          judged++;
          if (c.rec.status === WC_WR_FLUSH_ERR)
            problems.push({
              reason: `receive WR ${c.rec.wr_id} on ${qp} was flushed while the QP was in SQE`,
              evidence: [quote(model.records, from), quote(model.records, c.at)],
            });
        }
      }
    }
    if (problems.length > 0) return fail(problems);
    if (judged === 0)
      return skip("no QP was in SQ Error with receive activity (an RC QP goes from a send error to ERR)");
    return pass(`${judged} receive post(s)/completion(s) in SQE: posted and not flushed`);
  },
};
