/**
 * Writing a WQE's completion on its queue's CQ, through the CQE faults of the fault plan (wrong CQ,
 * wrong index, drop, delay, reorder, duplicate). The CQ and its queue engine lay the CQE out (cq.ts).
 */
import type { CqeFields } from "./cq.ts";
import type { WorkQueue as Jobs } from "./engine.ts";
import type { FaultPlan } from "./faults.ts";
import { CqeQtype } from "./hw.ts";
import type { QueuePair } from "./qp.ts";
import type { DeviceState } from "./state.ts";
import type { Tracer } from "./trace.ts";

const IDX_MASK = 0xffff;

export interface CompletionEnv {
  jobs: Jobs;
  tracer: Tracer;
  faults: FaultPlan;
  /** CQEs held back by a reorder-cqe fault, per CQ */
  held: Map<number, CqeFields>;
  /**
   * completions on their way to the CQ (a delay-cqe fault: a slow completion path), by
   * pendingKey: the WQE indexes; a flush of that queue holds until they are written
   */
  pending: Map<string, number[]>;
  /**
   * by pendingKey: how to write now the delayed completions that may come early (a delay-cqe
   * `until: flush`), oldest first (releaseEarly)
   */
  early: Map<string, (() => void)[]>;
  /** a pending completion of the queue was written (or dropped by a reset) */
  settled(qp: QueuePair, queue: "sq" | "rq"): void;
}

/** The key of a queue in CompletionEnv.pending. */
export function pendingKey(qpn: number, queue: "sq" | "rq"): string {
  return `${qpn}/${queue}`;
}

function settle(env: CompletionEnv, qp: QueuePair, queue: "sq" | "rq", index: number): void {
  const key = pendingKey(qp.qpn, queue);
  const left = (env.pending.get(key) ?? []).filter((i) => i !== index);
  if (left.length > 0) env.pending.set(key, left);
  else env.pending.delete(key);
  env.settled(qp, queue);
}

function forgetEarly(env: CompletionEnv, key: string, release: () => void): void {
  const left = (env.early.get(key) ?? []).filter((w) => w !== release);
  if (left.length > 0) env.early.set(key, left);
  else env.early.delete(key);
}

/**
 * The queue's flush reached a WQE behind its delayed completions: those that may come early
 * (`until: flush`) are written now. Returns how many.
 */
export function releaseEarly(env: Pick<CompletionEnv, "early">, qp: QueuePair, queue: "sq" | "rq"): number {
  const key = pendingKey(qp.qpn, queue);
  const writes = env.early.get(key) ?? [];
  env.early.delete(key);
  for (const w of writes) w();
  return writes.length;
}

export interface WqeCompletion {
  queue: "sq" | "rq";
  index: number;
  opcode: number;
  status: number;
  size: number;
  extra: Pick<CqeFields, "word3" | "solicited">;
}

/** The CQ a wrong-cq fault sends a CQE to: the one it names, the QP's other one, or any other. */
function otherCq(st: DeviceState, qp: QueuePair, own: number, named: number | undefined): number {
  if (named !== undefined) return named;
  const other = own === qp.sq.cqn ? qp.rq.cqn : qp.sq.cqn;
  if (other !== own) return other;
  for (const cq of st.cqs.values()) if (cq.cqn !== own && typeof cq.cqn === "number") return cq.cqn;
  return own;
}

/** Writes the CQE of a WQE on its queue's CQ, through the CQE faults. */
export async function writeCompletion(
  env: CompletionEnv,
  st: DeviceState,
  qp: QueuePair,
  { queue, index, opcode, status, size, extra }: WqeCompletion,
): Promise<void> {
  const own = queue === "sq" ? qp.sq.cqn : qp.rq.cqn;
  const faults = env.faults;
  const misdirect = faults.fire("wrong-cq", { qpn: qp.qpn, queue, syndrome: status }, { index });
  const cqn = misdirect ? otherCq(st, qp, own, misdirect.cqn) : own;
  const cq = st.cqs.get(cqn);
  if (!cq) {
    env.tracer.warn("completion for a CQ that does not exist: dropped", { qpn: qp.qpn, cqn });
    return;
  }
  const ctx = { qpn: qp.qpn, queue, syndrome: status };
  const wrong = faults.fire("wrong-index", ctx, { index });
  const fields: CqeFields = {
    opcode,
    qtype: queue === "sq" ? CqeQtype.SQ : CqeQtype.RQ,
    syndrome: status,
    qeIdx: wrong ? (index + wrong.delta) & IDX_MASK : index,
    qpn: qp.qpn,
    size,
    ...extra,
  };
  if (faults.fire("drop-cqe", ctx, { index })) return;
  const delay = faults.fire("delay-cqe", ctx, { index });
  if (delay) {
    const key = pendingKey(qp.qpn, queue);
    env.pending.set(key, [...(env.pending.get(key) ?? []), index]);
    // written when its time comes or, `until: flush`, when the queue's flush reaches it (releaseEarly)
    const release = () => {
      faults.timerDone(delay);
      write();
    };
    const write = () => {
      clearTimeout(timer);
      forgetEarly(env, key, release);
      env.jobs.post(
        `delayed CQE ${cqn}`,
        async () => {
          await cq.post(fields);
          settle(env, qp, queue, index);
        },
        () => settle(env, qp, queue, index),
      );
    };
    const timer = setTimeout(write, delay.ms).unref();
    if (delay.until === "flush") env.early.set(key, [...(env.early.get(key) ?? []), release]);
    return;
  }
  if (faults.fire("reorder-cqe", ctx, { index })) {
    env.held.set(cqn, fields);
    return;
  }
  await cq.post(fields);
  if (faults.fire("duplicate-cqe", ctx, { index })) await cq.post(fields);
  const held = env.held.get(cqn);
  if (held) {
    env.held.delete(cqn);
    await cq.post(held);
  }
}
