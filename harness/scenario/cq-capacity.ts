/**
 * Whether a scenario's CQs can overrun. Sizing a CQ for every completion its queues can hold is
 * the consumer's duty (ib_drain_sq/_rq/_qp, drivers/infiniband/core/verbs.c: "ensure there is room
 * in the CQ and SQ for the drain work request and completion"); a scenario that overruns its CQ
 * loses completions that would then be blamed on the driver, so the file is refused instead.
 *
 * A CQ can hold at most, unpolled, the smaller of two bounds: the depths of the queues that
 * complete on it (what the consumer asked for), and every completion the steps can make on it
 * (their WRs, one drain marker per drained queue, and the extra CQEs of duplicate-cqe faults). The
 * second bound matters where a driver accepts more WRs than asked (erdma rounds its SQ up).
 */
import { countOn, type ScenarioSpec, type Step } from "./schema.ts";

type Side = "qp" | "peer";
type Queue = "sq" | "rq";
type CqRole = "send" | "recv";

export interface CqCapacityProblem {
  path: (string | number)[];
  message: string;
}

/**
 * The CQ of the QP under test that a queue of a side completes on, if it is one of them (a fanout
 * pair's CQs are sized for its queues when they are made, so they cannot overrun).
 */
function cqOf(s: ScenarioSpec, side: Side | "fanout", queue: Queue): CqRole | undefined {
  if (side === "fanout") return undefined;
  if (side === "peer" && s.peer.cq === "own") return undefined;
  return queue === "sq" ? "send" : "recv";
}

function drainedQueues(which: string): Queue[] {
  return which === "qp" ? ["sq", "rq"] : which === "sq" ? ["sq"] : ["rq"];
}

/** Completions each step can put on the QP's CQs, by the CQ they land on. */
function stepCompletions(s: ScenarioSpec, step: Step): { role: CqRole; n: number }[] {
  if ("post_send" in step) {
    const role = cqOf(s, step.post_send.on, "sq");
    return role ? [{ role, n: countOn(step.post_send.count) }] : [];
  }
  if ("post_recv" in step) {
    const role = cqOf(s, step.post_recv.on, "rq");
    return role ? [{ role, n: countOn(step.post_recv.count) }] : [];
  }
  if ("drain" in step)
    return drainedQueues(step.drain.which).flatMap((q) => {
      const role = cqOf(s, step.drain.on, q);
      return role ? [{ role, n: 1 }] : [];
    });
  if ("fault" in step && step.fault.kind === "duplicate-cqe") {
    const queues: Queue[] =
      step.fault.queue === "sq" || step.fault.queue === "rq" ? [step.fault.queue] : ["sq", "rq"];
    const role = cqOf(s, step.fault.on, queues[0] as Queue);
    return role ? [{ role, n: step.fault.count ?? 1 }] : [];
  }
  return [];
}

function queueDepth(s: ScenarioSpec, side: Side, queue: Queue): number {
  return side === "qp" ? s.qp[queue] : s.peer[queue];
}

/** The CQs a scenario's QP under test has, each with the roles completing on it. */
function cqsOf(s: ScenarioSpec): { name: string; roles: CqRole[] }[] {
  return s.qp.cq === "shared"
    ? [{ name: "the QP's CQ", roles: ["send", "recv"] }]
    : [
        { name: "the QP's send CQ", roles: ["send"] },
        { name: "the QP's receive CQ", roles: ["recv"] },
      ];
}

export function cqCapacityProblems(s: ScenarioSpec): CqCapacityProblem[] {
  const problems: CqCapacityProblem[] = [];
  for (const cq of cqsOf(s)) {
    const queues: { side: Side; queue: Queue }[] = [];
    for (const side of ["qp", "peer"] as const)
      for (const queue of ["sq", "rq"] as const) {
        const role = cqOf(s, side, queue);
        if (role && cq.roles.includes(role)) queues.push({ side, queue });
      }
    const byDepth = queues.reduce((sum, q) => sum + queueDepth(s, q.side, q.queue), 0);
    const bySteps = s.steps
      .flatMap((step) => stepCompletions(s, step))
      .filter((c) => cq.roles.includes(c.role))
      .reduce((sum, c) => sum + c.n, 0);
    const most = Math.min(byDepth, bySteps);
    if (most > s.qp.cq_depth) {
      const depths = queues.map(
        (q) => `${q.side === "qp" ? "" : "peer."}${q.queue} ${queueDepth(s, q.side, q.queue)}`,
      );
      problems.push({
        path: ["qp", "cq_depth"],
        message:
          `cq_depth ${s.qp.cq_depth} is smaller than the ${most} completions ${cq.name} can hold unpolled ` +
          `(its queues: ${depths.join(" + ")} = ${byDepth}; its steps: ${bySteps} WRs, drain markers and duplicated CQEs): ` +
          "the CQ could overrun and lose completions that would be blamed on the driver",
      });
    }
  }
  return problems;
}
