/**
 * Flushing a queue of a QP in ERROR: the queue engine (queue-engine.ts) says how far (flush.ts) and,
 * WQE by WQE, how far the consumer index moves and whether the WQE gets a flush completion; the
 * data path reads the SQE headers (their block counts and opcodes) and writes the completions.
 */
import { flushLimit } from "./flush.ts";
import { DmaFault } from "./host.ts";
import { SQEBB_SIZE, WQ_INDEX_BITS, WqeOp } from "./hw.ts";
import type { QueuePair } from "./qp.ts";
import { depthLog2 } from "./queue-engine.ts";
import { distance, slot } from "./ring.ts";
import type { DeviceState } from "./state.ts";
import type { Tracer } from "./trace.ts";
import { sqeWqebbs } from "./wqe.ts";

export interface FlushIo {
  tracer: Tracer;
  /** writes the flush CQE of the WQE at `index` (through the CQE faults) */
  complete(st: DeviceState, qp: QueuePair, queue: "sq" | "rq", index: number, opcode: number): Promise<void>;
  /** the WQEs of the queue whose completions are still on their way to the CQ (completion.ts) */
  pending(qp: QueuePair, queue: "sq" | "rq"): readonly number[];
  /** the flush reached a WQE behind the pending completions: those that may come early come now */
  reached(qp: QueuePair, queue: "sq" | "rq"): void;
}

/** An SQE's size and opcode, for its flush CQE; an SQE the device cannot read counts as one WQEBB. */
async function readSqeHeader(st: DeviceState, qp: QueuePair, index: number) {
  let first: Uint8Array;
  try {
    first = await st.dma.read(
      qp.sq.buffer.address(slot(index, qp.sq.depth) * SQEBB_SIZE),
      8,
      `QP ${qp.qpn} SQE`,
    );
  } catch (err) {
    if (!(err instanceof DmaFault)) throw err;
    return { wqebbs: 1, opcode: 0 };
  }
  const hdr = new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true);
  return { wqebbs: sqeWqebbs(hdr), opcode: Number((hdr >> 27n) & 0x1fn) };
}

/**
 * Flushes the queue up to its limit, in order; a flush trace event lists the WQEs completed. While
 * a completion of an earlier WQE is still on its way to the CQ the engine holds the flush (a wait
 * event says so); the device flushes again once it is written (datapath.ts). A flush completion
 * the engine grants while one is pending overtakes it: the flush event names them and the engine
 * signal that granted it; a WQE the engine stepped over without one is named with the signal that
 * withheld it.
 */
export async function flushQueue(
  io: FlushIo,
  st: DeviceState,
  qp: QueuePair,
  queue: "sq" | "rq",
): Promise<void> {
  const engine = st.p.engine;
  const wq = queue === "sq" ? qp.sq : qp.rq;
  const { limit, reason } = flushLimit(st.profile.errorFlush, qp, queue, engine);
  const from = wq.ci;
  const log2 = depthLog2(wq.depth);
  const wqes: number[] = [];
  const blocks: number[] = [];
  const overtook = { wqes: [] as number[], pending: new Set<number>() };
  const skipped: number[] = [];
  let held = false;
  while (distance(limit, wq.ci, WQ_INDEX_BITS) > 0) {
    const index = wq.ci;
    const { wqebbs, opcode } =
      queue === "sq" ? await readSqeHeader(st, qp, index) : { wqebbs: 1, opcode: WqeOp.RECEIVE };
    const pending = io.pending(qp, queue);
    const step = engine.flushStep(index, limit, wqebbs, log2, pending.length > 0);
    if (step.hold) {
      io.tracer.emit({
        kind: "wait",
        qpn: qp.qpn,
        queue,
        index,
        reason: `flush held (${engine.origins.flushHold}): the completion of WQE ${pending.join(", ")} is not written yet`,
      });
      io.reached(qp, queue);
      held = true;
      break;
    }
    wq.ci = step.next;
    if (!step.complete) {
      skipped.push(index);
      continue;
    }
    await io.complete(st, qp, queue, index, opcode);
    wqes.push(index);
    blocks.push(step.taken);
    if (pending.length > 0) {
      io.reached(qp, queue);
      overtook.wqes.push(index);
      for (const p of pending) overtook.pending.add(p);
    }
  }
  if (
    wqes.length > 0 ||
    skipped.length > 0 ||
    (queue === "sq" && from !== limit && !(held && wq.ci === from))
  ) {
    io.tracer.emit({
      kind: "flush",
      qpn: qp.qpn,
      queue,
      from,
      to: wq.ci,
      count: wqes.length,
      limit: reason,
      wqes,
      ...(queue === "sq" ? { blocks } : {}),
      ...(overtook.wqes.length > 0
        ? {
            overtook: {
              wqes: overtook.wqes,
              pending: [...overtook.pending],
              origin: engine.origins.flushComplete,
            },
          }
        : {}),
      ...(skipped.length > 0 ? { skipped: { wqes: skipped, origin: engine.origins.flushComplete } } : {}),
    });
  }
}
