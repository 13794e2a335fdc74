/**
 * A scenario's fault steps on the emulated erdma device: what each fault kind becomes in the
 * device model's fault API (qemu/erdma/faults.ts FaultSpec, armed over the device server's
 * control channel), and which ones the model cannot carry out. A fault names a WR (wr_id) or
 * hits the next event; the model counts events (WQEs executed, CQEs written) on one QP's queue
 * from the moment it is armed, so the WR becomes `nth`: its place among the WRs of that queue
 * still owed an event, then those the later steps post.
 */

import type { ControlReply } from "../../qemu/erdma/control.ts";
import { WcStatus } from "../../qemu/erdma/hw.ts";
import { TraceModel } from "../oracle/model.ts";
import type { WrRef } from "../protocol/observations.ts";
import { postedWrs, recordsOf, type TraceRecord } from "../protocol/trace.ts";
import type { CompiledScenario, CompiledStep } from "../scenario/compile.ts";
import { NAMES } from "../scenario/compile.ts";
import { CQE_FAULTS, type FaultStep } from "../scenario/schema.ts";

/** The device's control channel (AttachedErdma.control), as the suite uses it. */
export interface DeviceControl {
  control(req: Record<string, unknown>): Promise<ControlReply>;
}

/** The device, if it has a control channel. */
export function controlOf(device: unknown): DeviceControl | undefined {
  const c = (device as { control?: unknown } | undefined)?.control;
  return typeof c === "function" ? (device as DeviceControl) : undefined;
}

/**
 * IB_WC status names an injected WQE error can produce, and the erdma_wc_status the device
 * writes for each: the driver maps it back (drivers/infiniband/hw/erdma/erdma_cq.c map_cqe_status,
 * 6.12: erdma_cq.c:75-106).
 */
export const ERDMA_WC_STATUS: Record<"sq" | "rq", Readonly<Record<string, number>>> = {
  sq: {
    GENERAL_ERR: WcStatus.GENERAL_ERR,
    LOC_QP_OP_ERR: WcStatus.SEND_WQE_FORMAT_ERR,
    LOC_ACCESS_ERR: WcStatus.SEND_STAG_INVALID_ERR,
    WR_FLUSH_ERR: WcStatus.FLUSH_ERR,
    RETRY_EXC_ERR: WcStatus.RETRY_EXC_ERR,
  },
  rq: {
    GENERAL_ERR: WcStatus.GENERAL_ERR,
    REM_ACCESS_ERR: WcStatus.RECV_STAG_INVALID_ERR,
    WR_FLUSH_ERR: WcStatus.FLUSH_ERR,
  },
};

function statusName(s: string): string {
  return s.toUpperCase().replace(/^IB_WC_/, "");
}

/** The erdma_wc_status of an IB_WC status name a completion fault picks its completions by. */
function completionStatus(name: string): number | undefined {
  const n = statusName(name);
  if (n === "SUCCESS") return WcStatus.SUCCESS;
  return ERDMA_WC_STATUS.sq[n] ?? ERDMA_WC_STATUS.rq[n];
}

/** Why the erdma model cannot carry out this fault, or undefined when it can. */
export function erdmaFaultGap(f: FaultStep): string | undefined {
  if (CQE_FAULTS.includes(f.kind) && f.status !== undefined && completionStatus(f.status) === undefined)
    return `${f.kind} status ${f.status}: erdma completes nothing with it (SUCCESS, ${[...new Set([...Object.keys(ERDMA_WC_STATUS.sq), ...Object.keys(ERDMA_WC_STATUS.rq)])].join(", ")})`;
  if (f.kind === "error-wqe" && f.status !== undefined) {
    const queue = f.queue === "rq" ? "rq" : "sq";
    const table = ERDMA_WC_STATUS[queue];
    if (table[statusName(f.status)] === undefined)
      return `error-wqe status ${f.status}: erdma cannot report it on the ${queue} (drivers/infiniband/hw/erdma/erdma_cq.c map_cqe_status gives ${Object.keys(table).join(", ")})`;
  }
  return undefined;
}

export class FaultTranslationError extends Error {
  override name = "FaultTranslationError";
}

function isSignaled(signal: "all" | "none" | "last" | number, i: number, count: number): boolean {
  if (signal === "all") return true;
  if (signal === "none") return false;
  if (signal === "last") return i === count - 1;
  return (i + 1) % signal === 0;
}

interface Pending {
  wrId: number;
  signaled: boolean;
}

/**
 * The WRs of one queue that an event is still to come for, in the order the device meets them:
 * those posted and not completed, then those later steps post. For completion faults on a send
 * queue that is not in ERR, unsignaled WRs are left out (a successful one writes no CQE).
 */
export function pendingWrs(
  records: readonly TraceRecord[],
  compiled: CompiledScenario,
  stepIndex: number,
  qp: string,
  queue: "sq" | "rq",
  cqeEvents: boolean,
): number[] {
  const completed = new Set(
    recordsOf(records, "cqe")
      .filter((c) => c.qp === qp && c.queue === queue)
      .map((c) => c.wr_id),
  );
  const list: Pending[] = postedWrs(records)
    .filter((w) => w.qp === qp && w.queue === queue && w.accepted && !completed.has(w.wrId))
    .map((w) => ({ wrId: w.wrId, signaled: w.signaled }));
  for (const s of compiled.steps.slice(stepIndex + 1)) {
    const p = s.posts;
    if (!p || p.qp !== qp || p.queue !== queue) continue;
    for (let i = 0; i < p.count; i++)
      list.push({ wrId: p.wrId + i, signaled: queue === "rq" || isSignaled(p.signal, i, p.count) });
  }
  const inErr = new TraceModel(records).finalState(qp) === "ERR";
  return list.filter((w) => !cqeEvents || queue === "rq" || inErr || w.signaled).map((w) => w.wrId);
}

/** The QP's number as the device knows it (the trace's create record). */
export function qpNumber(records: readonly TraceRecord[], qp: string): number {
  const created = recordsOf(records, "create")
    .filter((c) => c.kind === "qp" && c.name === qp)
    .at(-1);
  if (created?.qp_num === undefined)
    throw new FaultTranslationError(`no qp_num for ${qp}: the trace has no create record of it`);
  return created.qp_num;
}

/** The fault step's fault and the start of its FaultSpec (kind, count); throws when the model cannot carry it out. */
function specOf(step: CompiledStep): { f: FaultStep; spec: Record<string, unknown> } {
  const f = step.fault;
  if (!f) throw new FaultTranslationError(`step ${step.index + 1} is not a fault`);
  const gap = erdmaFaultGap(f);
  if (gap) throw new FaultTranslationError(gap);
  return { f, spec: { kind: f.kind, ...(f.count !== undefined ? { count: f.count } : {}) } };
}

/**
 * The FaultSpec (qemu/erdma/faults.ts) for a fault step, given the trace so far. Throws
 * FaultTranslationError when the scenario cannot be carried out (a wr_id no later event is for).
 */
export function translateFault(
  step: CompiledStep,
  compiled: CompiledScenario,
  records: readonly TraceRecord[],
): Record<string, unknown> {
  const { f, spec } = specOf(step);
  if (f.kind === "lose-irq" || f.kind === "coalesce-irq" || f.kind === "raise-irq") {
    if (f.vector !== undefined) spec.vector = f.vector;
    if (f.ms !== undefined) spec.ms = f.ms;
    return spec;
  }
  const qp = NAMES[f.on];
  spec.qpn = qpNumber(records, qp);
  const cqeEvents = CQE_FAULTS.includes(f.kind);
  let queue: "sq" | "rq" | undefined = f.queue === "sq" || f.queue === "rq" ? f.queue : undefined;
  if (f.wr_id !== undefined) {
    const where = (["sq", "rq"] as const)
      .filter((q) => queue === undefined || q === queue)
      .map((q) => ({ q, list: pendingWrs(records, compiled, step.index, qp, q, cqeEvents) }))
      .find((x) => x.list.includes(f.wr_id as number));
    if (!where)
      throw new FaultTranslationError(
        `fault ${f.kind} on WR ${f.wr_id}: no ${queue ?? "sq or rq"} WR of ${qp} with that wr_id is outstanding or posted later${cqeEvents ? " (with a completion to come)" : ""}`,
      );
    queue = where.q;
    spec.nth = where.list.indexOf(f.wr_id) + 1;
  }
  if (queue !== undefined) spec.queue = queue;
  if (f.kind === "error-wqe")
    spec.status = ERDMA_WC_STATUS[queue === "rq" ? "rq" : "sq"][statusName(f.status ?? "")];
  else if (f.status !== undefined) spec.syndrome = completionStatus(f.status);
  if (f.ms !== undefined) spec.ms = f.ms;
  if (f.delta !== undefined) spec.delta = f.delta;
  if (f.until !== undefined) spec.until = f.until;
  if (f.after !== undefined) spec.after = f.after;
  return spec;
}

/**
 * The WR a fault step hits: the one it names, or else the next one its queue owes an event for;
 * none for faults on no WR (a lost, held or raised interrupt, a stalled or resumed queue, an ignored doorbell).
 */
export function faultTarget(
  step: CompiledStep,
  compiled: CompiledScenario,
  records: readonly TraceRecord[],
): WrRef | undefined {
  const f = step.fault;
  if (
    !f ||
    f.kind === "lose-irq" ||
    f.kind === "coalesce-irq" ||
    f.kind === "raise-irq" ||
    f.kind === "stall-queue" ||
    f.kind === "resume-queue" ||
    f.kind === "ignore-doorbell"
  )
    return undefined;
  const qp = NAMES[f.on];
  const cqeEvents = CQE_FAULTS.includes(f.kind);
  const queues = (["sq", "rq"] as const).filter(
    (q) => f.queue === undefined || f.queue === "cq" || q === f.queue,
  );
  for (const queue of queues) {
    const pending = pendingWrs(records, compiled, step.index, qp, queue, cqeEvents);
    const wrId = f.wr_id ?? (queues.length === 1 ? pending[0] : undefined);
    if (wrId !== undefined && pending.includes(wrId)) return { qp, queue, wrId };
  }
  return undefined;
}

/** The ids of the faults armed in one scenario, and the one-line descriptions for its evidence. */
export interface ArmedFault {
  step: number;
  id: number;
  spec: Record<string, unknown>;
  /** the WR it hits, when it hits one */
  target?: WrRef;
}

/** Arms a fault step on the device; throws with the device's reason when it refuses. */
export async function armFault(
  control: DeviceControl,
  step: CompiledStep,
  compiled: CompiledScenario,
  records: readonly TraceRecord[],
): Promise<ArmedFault> {
  const spec = translateFault(step, compiled, records);
  const reply = await control.control({ op: "fault", fault: spec });
  if (!reply.ok) throw new Error(`the device refused fault ${JSON.stringify(spec)}: ${reply.error}`);
  const target = faultTarget(step, compiled, records);
  return {
    step: step.index,
    id: typeof reply.id === "number" ? reply.id : -1,
    spec,
    ...(target ? { target } : {}),
  };
}

/**
 * The FaultSpec of a fault step in a ULP workload: the ULP's QPs are its own, so the fault hits the
 * next matching event on any QP of the device (no qpn, no wr_id: the schema refuses one).
 */
export function translateUlpFault(step: CompiledStep): Record<string, unknown> {
  const { f, spec } = specOf(step);
  if (f.vector !== undefined) spec.vector = f.vector;
  if (f.queue === "sq" || f.queue === "rq") spec.queue = f.queue;
  if (f.kind === "error-wqe")
    spec.status = ERDMA_WC_STATUS[f.queue === "rq" ? "rq" : "sq"][statusName(f.status ?? "")];
  else if (f.status !== undefined) spec.syndrome = completionStatus(f.status);
  if (f.ms !== undefined) spec.ms = f.ms;
  if (f.delta !== undefined) spec.delta = f.delta;
  return spec;
}

/**
 * Arms a ULP workload's fault step on the device (on a server of several, the one named); throws
 * with the device's reason when it refuses.
 */
export async function armUlpFault(
  control: DeviceControl,
  step: CompiledStep,
  device: string | undefined,
  port: number,
): Promise<ArmedFault> {
  const spec = translateUlpFault(step);
  const f = step.fault;
  if (f && f.kind !== "lose-irq" && f.kind !== "coalesce-irq" && f.kind !== "raise-irq")
    spec.qpn = await ulpQp(control, device, f.on === "peer" ? "target" : "host", port);
  const reply = await control.control({ op: "fault", fault: spec, ...(device ? { device } : {}) });
  if (!reply.ok) throw new Error(`the device refused fault ${JSON.stringify(spec)}: ${reply.error}`);
  return { step: step.index, id: typeof reply.id === "number" ? reply.id : -1, spec };
}

/**
 * The QP of a ULP's I/O queue on one side of its connection, as the device knows it: the host's
 * QPs connect to the target's port (dport), the target's accept on it (sport); with an admin
 * queue and one I/O queue per side, the I/O queue's QP is the newer one (the higher number).
 */
export async function ulpQp(
  control: DeviceControl,
  device: string | undefined,
  side: "host" | "target",
  port: number,
): Promise<number> {
  const reply = await control.control({ op: "snapshot", ...(device ? { device } : {}) });
  type Qp = { qpn: number; connection?: { sport: number; dport: number } };
  const qps = reply.ok ? ((reply.state as { qps?: Qp[] } | null)?.qps ?? []) : [];
  const mine = qps
    .filter((q) => (side === "host" ? q.connection?.dport : q.connection?.sport) === port)
    .map((q) => q.qpn);
  if (mine.length === 0)
    throw new Error(
      `no QP of the ULP's ${side} is connected on port ${port}${device ? ` on ${device}` : ""}: a fault on a QP comes after the connect`,
    );
  return Math.max(...mine);
}

/** The device model's objects by kind (its control channel's snapshot): QPs, CQs, MRs. */
export async function deviceObjectCounts(
  control: DeviceControl,
  device?: string,
): Promise<Record<string, number> | undefined> {
  const reply = await control.control({ op: "snapshot", ...(device ? { device } : {}) });
  if (!reply.ok) return undefined;
  const state = reply.state as { qps?: unknown[]; cqs?: unknown[]; mrs?: unknown[] } | null;
  if (!state) return undefined;
  return { qp: state.qps?.length ?? 0, cq: state.cqs?.length ?? 0, mr: state.mrs?.length ?? 0 };
}
