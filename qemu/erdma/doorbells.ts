/**
 * The doorbell space of BAR0: which queue a write lands on, and what ringing it does (a producer
 * index moved, an EQ or CQ armed). Called from the register write; anything slow is queued as a job.
 */
import { get64n, hex } from "./bits.ts";
import type { CommandQueue } from "./cmdq.ts";
import type { WorkQueue } from "./engine.ts";
import type { FaultPlan } from "./faults.ts";
import { BAR0_SIZE, CQDB_SPACE_OFFSET, HW_PAGE_SHIFT, RQDB_SPACE_OFFSET } from "./hw.ts";
import type { QueuePair } from "./qp.ts";
import type { DoorbellSlot } from "./registers.ts";
import type { DeviceState } from "./state.ts";
import type { DoorbellRing, Tracer } from "./trace.ts";

export interface DataPathHooks {
  /** an SQ doorbell moved `qp.sq.pi` (called from the register write; defer any DMA) */
  sqDoorbell?(qp: QueuePair): void;
  rqDoorbell?(qp: QueuePair): void;
}

/** What a doorbell reaches: the command queue (absent before INIT_DONE), the objects, the data path. */
export interface DoorbellTargets {
  cmdq: CommandQueue | undefined;
  st: DeviceState;
  tracer: Tracer;
  jobs: WorkQueue;
  faults: FaultPlan;
  dataPath: DataPathHooks;
}

/** The SQ, RQ and CQ doorbell pages past the fixed slots. */
export function doorbellSpace(offset: number): DoorbellSlot | undefined {
  const page = offset >> HW_PAGE_SHIFT;
  if (offset < RQDB_SPACE_OFFSET) return { kind: "sq", page };
  if (offset < CQDB_SPACE_OFFSET) return { kind: "rq", page };
  if (offset < BAR0_SIZE) return { kind: "cq", page };
  return undefined;
}

export function ringDoorbell(to: DoorbellTargets, slot: DoorbellSlot, value: bigint): void {
  const { cmdq, st, tracer, jobs } = to;
  const trace = (id?: number, detail?: Record<string, unknown>, ring?: DoorbellRing) =>
    tracer.emit({
      kind: "doorbell",
      db: slot.kind,
      value: hex(value),
      ...(id === undefined ? {} : { id }),
      ...(detail === undefined ? {} : { detail }),
      ...(ring === undefined ? {} : { ring }),
    });
  if (!cmdq) {
    trace();
    tracer.warn("doorbell before INIT_DONE ignored", { db: slot.kind });
    return;
  }
  switch (slot.kind) {
    case "cmdq-sq":
      trace();
      cmdq.sqDoorbell(value);
      return;
    case "cmdq-cq":
      trace();
      cmdq.cqDoorbell(value);
      return;
    case "aeq": {
      trace();
      const aeq = st.aeq;
      if (aeq?.doorbell(value)) jobs.post("aeq-arm", async () => aeq.fireIfPending());
      return;
    }
    case "ceq": {
      trace(slot.eqn);
      if (slot.eqn === 0) {
        cmdq.eqDoorbell(value);
        return;
      }
      const eq = st.ceqs.get(slot.eqn);
      if (!eq) tracer.warn("doorbell for an EQ that does not exist", { eqn: slot.eqn });
      else if (eq.doorbell(value)) jobs.post("ceq-arm", async () => eq.fireIfPending());
      return;
    }
    case "cq": {
      const cqn = get64n(value, [55, 32]);
      const cq = st.cqs.get(cqn);
      trace(cqn, { page: slot.page }, cq && { depth: cq.depth, pi: cq.pi });
      if (!cq) tracer.warn("doorbell for a CQ that does not exist", { cqn });
      else if (cq.doorbell(value)) jobs.post("cq-arm", () => cq.fireIfPending());
      return;
    }
    case "sq":
      // kick_sq_db: QPN 51:32, producer index 15:0 (erdma_qp.c:490-497)
      ringWorkQueue(to, "sq", get64n(value, [51, 32]), get64n(value, [15, 0]), slot.page, trace);
      return;
    case "rq":
      // the RQE's first 8 bytes: qe_idx (the new producer index) 15:0, QPN 63:32 (erdma_qp.c:547-561)
      ringWorkQueue(to, "rq", get64n(value, [63, 32]), get64n(value, [15, 0]), slot.page, trace);
      return;
  }
}

function ringWorkQueue(
  to: DoorbellTargets,
  queue: "sq" | "rq",
  qpn: number,
  pi: number,
  page: number,
  trace: (id?: number, detail?: Record<string, unknown>, ring?: DoorbellRing) => void,
): void {
  const qp = to.st.qps.get(qpn);
  const wq = qp?.[queue];
  trace(qpn, { pi, page }, wq && { depth: wq.depth, ci: wq.ci });
  if (!qp || !wq) {
    to.tracer.warn(`${queue.toUpperCase()} doorbell for a QP that does not exist`, { qpn });
    return;
  }
  if (to.faults.fire("ignore-doorbell", { qpn, queue }, { pi })) return;
  wq.pi = pi;
  wq.doorbells++;
  if (queue === "sq") to.dataPath.sqDoorbell?.(qp);
  else to.dataPath.rqDoorbell?.(qp);
}
