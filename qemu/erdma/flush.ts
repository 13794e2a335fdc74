/**
 * How far a QP in ERROR flushes, per behaviour profile (profile.ts ErrorFlushMode):
 * - "always" (IB 11.4.1.1 / C10-42): every WQE posted, including those posted in ERROR;
 * - "stop" (erdma hardware in 2022: "Our hardware will stop processing any new WRs if QP state is
 *   error", Cheng Xu on linux-rdma, "[PATCH for-next 0/2] RDMA/erdma: Introduce custom
 *   implementation of drain_sq and drain_rq", August 2022): up to the producer indices seen
 *   when the QP entered ERROR; later doorbells and REFLUSH change nothing;
 * - "reflush" (erdma since Linux 6.2, CMDQ_OPCODE_REFLUSH): as "stop", then up to the indices the
 *   last REFLUSH named (erdma_flush_worker sends the driver's sq_pi/rq_pi).
 * The queue engine decides (queue-engine.ts); this picks its inputs from the QP.
 */

import type { ErrorFlushMode } from "./profile.ts";
import type { QueuePair } from "./qp.ts";
import { type FlushReason, type QueueEngine, tsQueueEngine } from "./queue-engine.ts";

export interface FlushLimit {
  limit: number;
  reason: FlushReason;
}

export function flushLimit(
  mode: ErrorFlushMode,
  qp: QueuePair,
  queue: "sq" | "rq",
  engine: QueueEngine = tsQueueEngine,
): FlushLimit {
  const wq = queue === "sq" ? qp.sq : qp.rq;
  const pick = (at: { sqPi: number; rqPi: number } | undefined) =>
    at === undefined ? undefined : queue === "sq" ? at.sqPi : at.rqPi;
  const errorPi = pick(qp.errorAt);
  const reflushPi = pick(qp.reflushTo);
  return engine.flushLimit({
    mode,
    pi: wq.pi,
    ci: wq.ci,
    ...(errorPi !== undefined ? { errorPi } : {}),
    ...(reflushPi !== undefined ? { reflushPi } : {}),
  });
}
