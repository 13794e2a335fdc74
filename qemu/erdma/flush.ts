/**
 * How far a QP in ERROR flushes, per behaviour profile (profile.ts ErrorFlushMode):
 * - "always" (IB 11.4.1.1 / C10-42): every WQE posted, including those posted in ERROR;
 * - "stop" (erdma hardware in 2022: "Our hardware will stop processing any new WRs if QP state is
 *   error", Cheng Xu on linux-rdma, "[PATCH for-next 0/2] RDMA/erdma: Introduce custom
 *   implementation of drain_sq and drain_rq", August 2022): up to the producer indices seen
 *   when the QP entered ERROR; later doorbells and REFLUSH change nothing;
 * - "reflush" (erdma since Linux 6.2, CMDQ_OPCODE_REFLUSH): as "stop", then up to the indices the
 *   last REFLUSH named (erdma_flush_worker sends the driver's sq_pi/rq_pi).
 */

import { WQ_INDEX_BITS } from "./hw.ts";
import type { ErrorFlushMode } from "./profile.ts";
import type { QueuePair } from "./qp.ts";
import { distance } from "./ring.ts";

export interface FlushLimit {
  limit: number;
  reason: "pi" | "error" | "reflush";
}

export function flushLimit(mode: ErrorFlushMode, qp: QueuePair, queue: "sq" | "rq"): FlushLimit {
  const wq = queue === "sq" ? qp.sq : qp.rq;
  const pick = (at: { sqPi: number; rqPi: number }) => (queue === "sq" ? at.sqPi : at.rqPi);
  let result: FlushLimit = { limit: wq.pi, reason: "pi" };
  if (mode !== "always" && qp.errorAt) result = { limit: pick(qp.errorAt), reason: "error" };
  if (mode === "reflush" && qp.reflushTo) result = { limit: pick(qp.reflushTo), reason: "reflush" };
  // an index behind the consumer index names nothing to flush; one ahead is taken as the hardware
  // takes a doorbell, even past a full ring (a driver that overfills its queue gets what it wrote)
  if (distance(result.limit, wq.ci, WQ_INDEX_BITS) >= 2 ** (WQ_INDEX_BITS - 1)) {
    return { limit: wq.ci, reason: result.reason };
  }
  return result;
}
