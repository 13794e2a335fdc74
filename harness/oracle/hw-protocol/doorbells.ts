/**
 * Checks (b) and (d) on one doorbell (contract.ts): an SQ/RQ producer index at most the queue's
 * depth past the device's consumer index; a CQ doorbell's consumer index neither past the CQEs the
 * device wrote nor more than the CQ's depth behind them. The device's view of the ring comes with
 * the doorbell event (`ring`, written by qemu/erdma/device.ts); a doorbell without it (a queue the
 * device does not have) is the device's warning's business.
 */
import { get64n } from "../../../qemu/erdma/bits.ts";
import { CqDb } from "../../../qemu/erdma/hw.ts";
import type { ErdmaTraceEvent, ErdmaTraceEventOf } from "../../protocol/hw-trace.ts";
import { fmt } from "./device-view.ts";

/** Entries from `from` forward to `to` on a ring of `bits`-bit indexes. */
export function ahead(to: number, from: number, bits: number): number {
  const mod = 2 ** bits;
  return (((to - from) % mod) + mod) % mod;
}

/** SQ/RQ producer indexes are 16 bits (erdma_qp.c kick_sq_db, erdma_rqe qe_idx); CQ indexes 24. */
const WQ_BITS = 16;
const CQ_BITS = 24;

function pending(e: ErdmaTraceEventOf<"doorbell">): number | undefined {
  const pi = e.detail?.pi;
  return typeof pi === "number" && Number.isInteger(pi) ? pi : undefined;
}

/** (b) The problem of an SQ or RQ doorbell, if it has one; undefined also when it cannot be judged. */
export function workQueueDoorbell(e: ErdmaTraceEventOf<"doorbell">): string | undefined {
  const pi = pending(e);
  const ci = e.ring?.ci;
  if (pi === undefined || ci === undefined || e.ring === undefined || e.id === undefined) return undefined;
  const depth = e.ring.depth;
  const over = ahead(pi, ci, WQ_BITS);
  if (over <= depth) return undefined;
  // a REFLUSH ahead of a doorbell still in flight can take the device's consumer index past it
  if (ahead(ci, pi, WQ_BITS) <= depth) return undefined;
  const q = e.db === "sq" ? "SQ" : "RQ";
  const unit = e.db === "sq" ? "WQEBBs" : "RQEs";
  return `${q} doorbell of QP ${e.id} moves the producer index to ${pi}, ${over} ${unit} past the device's consumer index ${ci}: the ${q} holds ${depth}, so ${over - depth} ${unit} the device had not read were overwritten (t=${fmt(e.t)})`;
}

/** Whether CQEs [from, to) of the CQ show as written after event `at` (writes in flight at the doorbell). */
function writtenLater(
  events: readonly ErdmaTraceEvent[],
  at: number,
  cqn: number,
  from: number,
  to: number,
): boolean {
  const dev = events[at]?.dev;
  const want = new Set<number>();
  for (let i = from; i !== to; i = (i + 1) % 2 ** CQ_BITS) want.add(i);
  for (let i = at + 1; i < events.length && want.size > 0; i++) {
    const e = events[i];
    if (e?.kind === "cqe" && e.dev === dev && e.cq === cqn) want.delete(e.index % 2 ** CQ_BITS);
  }
  return want.size === 0;
}

/** (d) The problem of a CQ doorbell (events[at]), if it has one. */
export function cqDoorbell(events: readonly ErdmaTraceEvent[], at: number): string | undefined {
  const e = events[at];
  if (e?.kind !== "doorbell" || e.db !== "cq" || e.ring?.pi === undefined || e.id === undefined)
    return undefined;
  const ci = get64n(BigInt(e.value), CqDb.CI);
  const pi = e.ring.pi % 2 ** CQ_BITS;
  const depth = e.ring.depth;
  const past = ahead(ci, pi, CQ_BITS);
  if (past > 0 && past < 2 ** (CQ_BITS - 1)) {
    if (writtenLater(events, at, e.id, pi, ci)) return undefined;
    return `CQ doorbell of CQ ${e.id} reports consumer index ${ci}, ${past} past the device's producer index ${pi}: the driver cannot have read CQEs the device never wrote (t=${fmt(e.t)})`;
  }
  const behind = ahead(pi, ci, CQ_BITS);
  if (behind <= depth) return undefined;
  return `CQ ${e.id} overrun: the device's producer index is ${pi} and the driver's consumer index (its arm doorbell) ${ci}, so ${behind - depth} CQE(s) were overwritten unread (the CQ holds ${depth}; t=${fmt(e.t)})`;
}
