/**
 * Rule 9: the Linux drain contract. ib_drain_sq/ib_drain_rq/ib_drain_qp move the QP to ERR,
 * post a marker and wait for it with no timeout; the marker completes after every WR posted
 * before it, so when the call returns every such WR has completed, and it must return.
 */
import { drainCovers, quote } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

const DRAIN_WARNING = /drain/i;

export const rule9: Rule = {
  id: "9",
  title: "ib_drain_* returns, after every earlier WR of the drained queue completed, without a warning",
  citation:
    "Linux drivers/infiniband/core/verbs.c ib_drain_qp(), __ib_drain_sq(), __ib_drain_rq() (ERR transition, marker post returns 0, WARN_ONCE on failure, wait for the marker's completion)",
  judge({ model, observations, profile }) {
    if (profile !== "linux") return skip("the Linux drain contract is judged under the linux profile");
    if (model.drains.length === 0) return skip("no ib_drain_* call");
    const problems: Problem[] = [];
    for (const d of model.drains) {
      const call = model.records[d.at];
      const failedMarkers = model.records.flatMap((m, at) =>
        m.ev === "drain_marker" && call?.ev === "drain" && m.call === call.call && m.rc !== 0
          ? [{ m, at }]
          : [],
      );
      if (failedMarkers.length > 0) {
        for (const { m, at } of failedMarkers)
          problems.push({
            reason: `the ${m.queue} drain marker of ${d.qp} was refused (post returned ${m.rc}): the drain cannot wait for it (__ib_drain_${m.queue} WARNs and returns)`,
            evidence: [quote(model.records, d.at), quote(model.records, at)],
          });
        continue;
      }
      if (d.retAt === undefined) {
        const stuck = observations.find((o) => o.ev === "stuck");
        problems.push({
          reason: `ib_drain_${d.which} on ${d.qp} did not return${stuck?.ev === "stuck" ? ` within ${stuck.ms} ms (worker ${stuck.state})` : ""}`,
          evidence: [
            quote(model.records, d.at),
            ...(stuck?.ev === "stuck" ? stuck.stack.split("\n").map((l) => `stack: ${l}`) : []),
          ],
        });
        continue;
      }
      const retAt = d.retAt;
      const before = model.wrs.filter((w) => w.qp === d.qp && drainCovers(d, w.queue) && w.at < d.at);
      for (const w of before) {
        const late = w.completions.filter((c) => c.at > retAt);
        if (late.length > 0)
          problems.push({
            reason: `${d.qp} ${w.queue} WR ${w.wrId} completed after ib_drain_${d.which} returned`,
            evidence: [
              quote(model.records, d.at),
              quote(model.records, retAt),
              ...late.map((c) => quote(model.records, c.at)),
            ],
          });
        else if (w.completions.length === 0 && model.owesCompletion(w))
          problems.push({
            reason: `${d.qp} ${w.queue} WR ${w.wrId} had not completed when ib_drain_${d.which} returned`,
            evidence: [quote(model.records, w.at), quote(model.records, retAt)],
          });
      }
      const stateAfter = model.stateAt(d.qp, retAt + 1);
      if (stateAfter !== "ERR" && stateAfter !== "UNKNOWN")
        problems.push({
          reason: `${d.qp} is in ${stateAfter} after ib_drain_${d.which}, not ERR`,
          evidence: [quote(model.records, retAt)],
        });
    }
    for (const o of observations) {
      if (o.ev === "console" && (DRAIN_WARNING.test(o.text) || o.trace.some((l) => DRAIN_WARNING.test(l))))
        problems.push({
          reason: `the kernel warned during a drain: ${o.text}`,
          evidence: o.trace.slice(0, 8),
        });
    }
    if (problems.length > 0) return fail(problems);
    return pass(
      `${model.drains.length} drain(s) returned after every earlier WR of the drained queue completed`,
    );
  },
};
