/**
 * The device's queue engine: the part of the hardware that decides what CQE to write (header with
 * its owner bit, the ring slot, the CQ producer index after it) and what to flush (how far a queue
 * in ERROR flushes, and per WQE how many blocks the consumer index moves and whether it gets a
 * flush completion). The rest of the device model (PCI, DMA, commands, the data path) asks it per
 * transaction. Two implementations: the TypeScript one here (the reference) and the RTL under
 * qemu/erdma/rtl co-simulated with Verilator (rtl-engine.ts).
 */
import { CqeHdr, WQ_INDEX_BITS } from "./hw.ts";
import type { ErrorFlushMode } from "./profile.ts";
import { distance, inc32, ownerBit, slot } from "./ring.ts";

export type FlushReason = "pi" | "error" | "reflush";

export interface CqeSlot {
  /** the CQE's header word, owner bit (31) set as the engine decided */
  header: number;
  /** the ring slot the CQE goes to */
  slot: number;
  /** the CQ's producer index after this CQE */
  nextPi: number;
}

export interface FlushLimitInput {
  mode: ErrorFlushMode;
  pi: number;
  ci: number;
  /** the queue's producer index when the QP entered ERROR */
  errorPi?: number;
  /** the producer index the last REFLUSH named */
  reflushPi?: number;
}

export interface FlushStep {
  /** the consumer index after this WQE */
  next: number;
  /** how many blocks the WQE took (its own count, cut at the limit) */
  taken: number;
  /** whether the WQE gets a flush completion */
  complete: boolean;
  /**
   * the flush holds at `ci` (nothing taken, no completion) because a completion of an earlier WQE
   * of the queue is still on its way to the CQ: the flush CQE must not overtake it
   */
  hold?: true;
}

/** The names, in the engine, of what decides: quoted by the hardware trace. */
export interface EngineOrigins {
  /** what grants a flushed WQE its flush completion */
  flushComplete: string;
  /** what holds the flush behind a pending completion */
  flushHold: string;
}

export interface QueueEngine {
  readonly name: string;
  /** where in the engine its decisions come from (the RTL's module.signal names) */
  readonly origins: EngineOrigins;
  /** the CQE at the CQ's producer index `pi` (ring of 2**depthLog2 entries), from its header word */
  cqe(pi: number, depthLog2: number, header: number): CqeSlot;
  /** how far a queue in ERROR flushes */
  flushLimit(input: FlushLimitInput): { limit: number; reason: FlushReason };
  /**
   * the WQE at `ci` (of `wqebbs` blocks) flushed toward `limit` on a ring of 2**depthLog2 blocks;
   * `ci` short of `limit`; `pending`: a completion of an earlier WQE of the queue has not reached
   * its CQ yet (the flush holds until it has: the queue's completions keep their posting order)
   */
  flushStep(ci: number, limit: number, wqebbs: number, depthLog2: number, pending?: boolean): FlushStep;
}

const WQ_MASK = 2 ** WQ_INDEX_BITS - 1;

/** The reference engine (erdma_hw.h layouts as hw.ts cites them; flush limits as flush.ts explains). */
export const tsQueueEngine: QueueEngine = {
  name: "ts",
  origins: {
    flushComplete: "queue-engine.ts tsQueueEngine.flushStep",
    flushHold: "queue-engine.ts tsQueueEngine.flushStep (pending)",
  },
  cqe(pi, depthLog2, header) {
    const depth = 2 ** depthLog2;
    const owner = ownerBit(pi, depth);
    const hdr = ((header & 0x7fff_ffff) | (owner << CqeHdr.OWNER[0])) >>> 0;
    return { header: hdr, slot: slot(pi, depth), nextPi: inc32(pi) };
  },
  flushLimit({ mode, pi, ci, errorPi, reflushPi }) {
    let result: { limit: number; reason: FlushReason } = { limit: pi, reason: "pi" };
    if (mode !== "always" && errorPi !== undefined) result = { limit: errorPi, reason: "error" };
    if (mode === "reflush" && reflushPi !== undefined) result = { limit: reflushPi, reason: "reflush" };
    // an index behind the consumer index names nothing to flush; one ahead is taken as the hardware
    // takes a doorbell, even past a full ring (a driver that overfills its queue gets what it wrote)
    if (distance(result.limit, ci, WQ_INDEX_BITS) >= 2 ** (WQ_INDEX_BITS - 1)) {
      return { limit: ci, reason: result.reason };
    }
    return result;
  },
  flushStep(ci, limit, wqebbs, _depthLog2, pending = false) {
    // IBTA Vol 1 10.8: an RC queue's WQEs complete in the order posted, so a flush completion waits
    // for the completion of an earlier WQE still on its way
    if (pending && distance(limit, ci, WQ_INDEX_BITS) > 0)
      return { next: ci, taken: 0, complete: false, hold: true };
    // a header claiming WQEBBs past the limit ends the flush there: stepping over the limit would
    // make the distance wrap and the flush run on for up to 2^16 entries
    const taken = Math.min(wqebbs, distance(limit, ci, WQ_INDEX_BITS));
    return { next: (ci + taken) & WQ_MASK, taken, complete: true };
  },
};

/** log2 of a ring's (power of two) depth. */
export function depthLog2(depth: number): number {
  return Math.round(Math.log2(depth));
}
