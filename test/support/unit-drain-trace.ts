import { pair, type TraceBuilder } from "./oracle-trace.ts";

/**
 * `count` receives posted to qp from `wrId`, then ib_drain_qp (the SQ's marker completes first) or
 * ib_drain_rq: the receives flushed, the RQ's marker completed after them, the drain returned with
 * qp in ERR. The trace of a drain that did what the Linux contract asks.
 */
export function drainedReceives(wrId: number, count: number, which: "qp" | "rq" = "qp"): TraceBuilder {
  const b = pair().post("qp", "rq", wrId, count).drain("qp", which);
  if (which === "qp") b.markerDone();
  return b.flush("qp", "rq", wrId, count).markerDone().drained("ERR");
}
