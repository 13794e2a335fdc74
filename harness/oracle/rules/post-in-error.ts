/**
 * Rules 1 and 2: a post to a QP in ERROR (or a send to one in SQE) returns 0 and each of its WRs
 * completes with a flush error. The iWARP RDMAC verbs (6.2.4) allow an immediate error "at some
 * point" of the flush: that profile tolerates a failed call, never a WR that vanishes.
 */
import { WC_WR_FLUSH_ERR } from "../../protocol/trace.ts";
import { cqeRefs, type Queue, quote, quoteCall, ref, wrName } from "../model.ts";
import { fail, type Problem, pass, type Rule, type RuleInput, type RuleResult, skip } from "../rule.ts";

function judgePostsIn(queue: Queue, { model, profile }: RuleInput): RuleResult {
  const inError = model.calls.filter(
    (c) => c.queue === queue && (c.postedIn === "ERR" || (queue === "sq" && c.postedIn === "SQE")),
  );
  if (inError.length === 0) return skip(`no ${queue === "sq" ? "send" : "receive"} posted in ERROR`);
  const problems: Problem[] = [];
  let tolerated = 0;
  for (const call of inError) {
    const callEvidence = quoteCall(model.records, call);
    // a WR made invalid on purpose (bad=) is refused in any state: that is rule 3's
    const refusedInvalid = call.wrs.some((w) => w.invalid && w.indexInCall === call.bad);
    if (call.rc !== 0 && !refusedInvalid) {
      if (profile === "iwarp-rdmac") tolerated++;
      else
        problems.push({
          reason: `${call.marker ? `the drain's ${queue} marker post` : `post call ${call.call}`} to ${call.qp} in ${call.postedIn} returned ${call.rc}, not 0`,
          evidence: callEvidence,
          wrs: call.wrs.map(ref),
        });
    }
    for (const w of call.wrs.filter((x) => x.accepted)) {
      const bad = w.completions.filter((c) => c.rec.status !== WC_WR_FLUSH_ERR);
      const [firstBad] = bad;
      if (firstBad)
        problems.push({
          reason: `${wrName(w)} posted to ${w.qp} in ${w.postedIn} completed with ${firstBad.rec.status_name}, not WR_FLUSH_ERR`,
          evidence: [...callEvidence, ...bad.map((c) => quote(model.records, c.at))],
          wrs: [ref(w)],
          cqes: cqeRefs(bad),
        });
      else if (w.completions.length === 0 && model.deadline(w) !== undefined)
        problems.push({
          reason: `${wrName(w)} posted to ${w.qp} in ${w.postedIn} was accepted but never completed`,
          evidence: callEvidence,
          wrs: [ref(w)],
        });
    }
  }
  const wrs = inError.reduce((n, c) => n + c.wrs.length, 0);
  if (problems.length > 0) return fail(problems, wrs);
  return pass(
    `${inError.length} post call(s), ${wrs} WR(s) in ERROR: returned 0 and flushed` +
      (tolerated ? `; ${tolerated} immediate error(s) tolerated (RDMAC 6.2.4)` : ""),
    wrs,
  );
}

export const rule1: Rule = {
  id: "1",
  title: "a send posted in ERROR/SQE returns 0 and completes with a flush error",
  citation:
    "IBTA Vol 1 11.4.1.1 Post Send Request (Invalid QP state is not returned in Error/SQE; such WRs are completed with a flush error); iWARP RDMAC verbs 6.2.4 under iwarp-rdmac",
  judge: (input) => judgePostsIn("sq", input),
};

export const rule2: Rule = {
  id: "2",
  title: "a receive posted in ERROR returns 0 and completes with a flush error",
  citation:
    "IBTA Vol 1 11.4.1.2 Post Receive Request, C10-42, C10-97.2.1; iWARP RDMAC verbs 6.2.4 under iwarp-rdmac",
  judge: (input) => judgePostsIn("rq", input),
};
