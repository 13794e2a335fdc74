/**
 * After a hang the harness has judged (its evidence taken), the device lets the waiting drain go:
 * every QP in ERROR with work requests the device holds unflushed is flushed up to the producer
 * indexes its doorbells gave, as if the driver had sent the REFLUSH naming them (in every flush
 * mode: the indexes stand for the ERR transition's and the last REFLUSH's, flush.ts). The drain's
 * marker then completes, the guest's executor returns and its guest can run the next scenario
 * instead of being rebooted. A WR whose doorbell the device never took (an ignored doorbell) is
 * not known to it and stays; the harness then reboots as before. Traced as a reflush event whose
 * mode says the harness sent it.
 */
import { WQ_INDEX_BITS } from "./hw.ts";
import { errorState, type QueuePair } from "./qp.ts";
import { distance } from "./ring.ts";
import type { QpEvents } from "./state.ts";
import type { Tracer } from "./trace.ts";

export const RELEASE_MODE = "harness release after a judged hang";

function outstanding(qp: QueuePair): boolean {
  return distance(qp.sq.pi, qp.sq.ci, WQ_INDEX_BITS) > 0 || distance(qp.rq.pi, qp.rq.ci, WQ_INDEX_BITS) > 0;
}

/** Flushes what each QP in ERROR holds unflushed; returns the QP numbers it released. */
export function releaseErrorQps(
  qps: Iterable<QueuePair>,
  events: QpEvents | undefined,
  tracer: Tracer,
): number[] {
  const released: number[] = [];
  for (const qp of qps) {
    if (qp.state !== errorState(qp.proto) || !outstanding(qp)) continue;
    const to = { sqPi: qp.sq.pi, rqPi: qp.rq.pi };
    qp.errorAt = to;
    qp.reflushTo = to;
    tracer.emit({ kind: "reflush", qpn: qp.qpn, sqPi: to.sqPi, rqPi: to.rqPi, mode: RELEASE_MODE });
    events?.reflushed(qp);
    released.push(qp.qpn);
  }
  return released;
}
