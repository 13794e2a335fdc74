/**
 * Rule 9: the Linux drain contract, judged on what the executor observed of the drain itself.
 * ib_drain_sq/ib_drain_rq (ib_drain_qp: both) move the QP to ERR, post a marker WR and wait, with
 * no timeout, for the marker's completion; the marker completes after every WR posted before it,
 * so when the call returns each of those has completed. Per drained queue this checks: the ERR
 * transition was made and returned 0 before the marker; the marker post returned 0; the marker's
 * completion came, and came after the completions of every WR posted ahead of it; the drain
 * returned; the QP is in ERR after it; the kernel did not warn. A part the executor could not
 * observe (no marker seen for a queue the drain covers) makes the rule an ERROR, never a PASS.
 */

import type { Observation } from "../../protocol/observations.ts";
import {
  cqeRefs,
  type Drain,
  type DrainQueue,
  drainCovers,
  quote,
  ref,
  type TraceModel,
  type Wr,
} from "../model.ts";
import { notUnder, type Problem, pass, type Rule, type RuleResult, skip, summarise } from "../rule.ts";

const DRAIN_WARNING = /drain/i;

function drainName(d: Drain, q?: DrainQueue): string {
  return `ib_drain_${q ? q.queue : d.which} on ${d.qp}`;
}

/** The stuck evidence of a drain that did not return. */
function hangProblem(model: TraceModel, d: Drain, observations: readonly Observation[]): Problem {
  const stuck = observations.find((o) => o.ev === "stuck");
  const pending = d.queues.map((q) => q.marker).find((m) => m !== undefined && m.completions.length === 0);
  return {
    reason: `ib_drain_${d.which} on ${d.qp} did not return${stuck ? ` within ${stuck.ms} ms (worker ${stuck.state})` : ""}${pending ? `: its ${pending.queue} marker never completed` : ""}`,
    evidence: [
      quote(model.records, d.at),
      ...(pending ? [quote(model.records, pending.at)] : []),
      ...(stuck?.declared ? [`declared hung at ${stuck.ms} ms: ${stuck.declared}`] : []),
      ...(stuck ? stuck.stack.split("\n").map((l) => `stack: ${l}`) : []),
    ],
    ...(pending ? { wrs: [ref(pending)] } : {}),
  };
}

/** The problems of one drained queue whose marker was seen. */
function queueProblems(model: TraceModel, d: Drain, q: DrainQueue, marker: Wr): Problem[] {
  const name = drainName(d, q);
  const modify = q.modify;
  if (!modify || modify.rc === undefined)
    return [
      {
        reason: `${name} posted its marker without an ERR transition the trace shows`,
        evidence: [quote(model.records, d.at), quote(model.records, marker.at)],
        wrs: [ref(marker)],
      },
    ];
  if (modify.rc !== 0)
    return [
      {
        reason: `${name} posted its marker though moving ${d.qp} to ERR returned ${modify.rc}`,
        evidence: [quote(model.records, modify.at), quote(model.records, marker.at)],
        wrs: [ref(marker)],
      },
    ];
  if (marker.rc !== 0)
    return [
      {
        reason: `the ${q.queue} drain marker of ${d.qp} was refused (post returned ${marker.rc}): the drain cannot wait for it (__ib_drain_${q.queue} WARNs and returns)`,
        evidence: [quote(model.records, d.at), quote(model.records, marker.at)],
        wrs: [ref(marker)],
      },
    ];
  const done = marker.completions[0];
  if (!done) return [];
  const problems: Problem[] = [];
  for (const w of model.queueWrs(d.qp, q.queue).filter((x) => x.seq < marker.seq)) {
    const late = w.completions.filter((c) => c.at > done.at);
    if (late.length > 0)
      problems.push({
        reason: `${d.qp} ${q.queue} WR ${w.wrId} completed after the drain's marker (${name} returns before it)`,
        evidence: [quote(model.records, done.at), ...late.map((c) => quote(model.records, c.at))],
        wrs: [ref(w), ref(marker)],
        cqes: cqeRefs([done, ...late]),
      });
  }
  return problems;
}

/** Problems after the drain returned: earlier WRs not complete, completions after it, the state. */
function afterReturn(model: TraceModel, d: Drain, retAt: number): Problem[] {
  const problems: Problem[] = [];
  const before = model.wrs.filter(
    (w) => !w.marker && w.qp === d.qp && drainCovers(d, w.queue) && w.at < d.at,
  );
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
        wrs: [ref(w)],
        cqes: cqeRefs(late),
      });
    else if (w.completions.length === 0 && model.owesCompletion(w))
      problems.push({
        reason: `${d.qp} ${w.queue} WR ${w.wrId} had not completed when ib_drain_${d.which} returned`,
        evidence: [quote(model.records, w.at), quote(model.records, retAt)],
        wrs: [ref(w)],
      });
  }
  if (d.stateAfter !== undefined && d.stateAfter !== "ERR")
    problems.push({
      reason: `${d.qp} is in ${d.stateAfter} after ib_drain_${d.which}, not ERR`,
      evidence: [quote(model.records, retAt)],
    });
  return problems;
}

/** What the executor did not observe of a drain that returned (the rule cannot judge it then). */
function unobserved(d: Drain): string[] {
  const gaps = d.queues.flatMap((q) =>
    !q.marker
      ? [`the ${q.queue} marker of ${drainName(d)} was not observed`]
      : q.marker.accepted && q.marker.completions.length === 0
        ? [`the completion of the ${q.queue} marker of ${drainName(d)} was not observed`]
        : [],
  );
  if (d.stateAfter === undefined) gaps.push(`the state of ${d.qp} after ${drainName(d)} was not observed`);
  return gaps;
}

export const rule9: Rule = {
  id: "9",
  title:
    "ib_drain_* moves the QP to ERR, its marker is accepted and completes last on its queue, and it returns without a warning",
  citation:
    "Linux drivers/infiniband/core/verbs.c ib_drain_qp(), __ib_drain_sq(), __ib_drain_rq() (ERR transition, marker post returns 0, WARN_ONCE on failure, wait for the marker's completion)",
  judge({ model, observations, profile }): RuleResult {
    if (profile !== "linux") return notUnder("the Linux drain contract is judged under the linux profile");
    if (model.drains.length === 0) return skip("no ib_drain_* call");
    const problems: Problem[] = [];
    const gaps: string[] = [];
    for (const d of model.drains) {
      const refused = d.queues.find((q) => q.marker && !q.marker.accepted);
      const failedModify = d.queues.find((q) => !q.marker && q.modify?.rc !== undefined && q.modify.rc !== 0);
      for (const q of d.queues) if (q.marker) problems.push(...queueProblems(model, d, q, q.marker));
      if (failedModify?.modify)
        problems.push({
          reason: `${drainName(d, failedModify)} could not move ${d.qp} to ERR (ib_modify_qp returned ${failedModify.modify.rc}): it WARNs and returns without draining`,
          evidence: [quote(model.records, failedModify.modify.at)],
        });
      if (refused || failedModify) continue;
      if (d.retAt === undefined) {
        problems.push(hangProblem(model, d, observations));
        continue;
      }
      problems.push(...afterReturn(model, d, d.retAt));
      gaps.push(...unobserved(d));
    }
    for (const o of observations) {
      if (o.ev === "console" && (DRAIN_WARNING.test(o.text) || o.trace.some((l) => DRAIN_WARNING.test(l))))
        problems.push({
          reason: `the kernel warned during a drain: ${o.text}`,
          evidence: o.trace.slice(0, 8),
        });
    }
    const judged = model.drains.length;
    if (problems.length > 0)
      return { ...summarise(problems), verdict: "FAIL", problems, judged, applies: true };
    if (gaps.length > 0)
      return {
        verdict: "ERROR",
        reason: `${gaps[0]}${gaps.length > 1 ? ` (and ${gaps.length - 1} more)` : ""}: the drain cannot be judged`,
        evidence: gaps.slice(0, 12),
        judged: 0,
        applies: true,
      };
    return pass(
      `${judged} drain(s): ERR first, marker accepted and completed after every earlier WR of its queue, returned, QP in ERR`,
      judged,
    );
  },
};
