/**
 * Whether the device is idle: how long since it last saw or did anything (a register access, a
 * command, a DMA, a CQE, an interrupt, a fault armed or fired: every hardware-trace event), and
 * what it still owes on its own, without the guest touching it again (deferred work queued or
 * running, a timer a fault set: a delayed CQE, a held interrupt, a stall that ends). A device
 * quiet for long with nothing owed will do nothing more until the guest acts: a guest waiting for
 * a completion from it then waits for good, if the device holds work requests it does not work on
 * (`held`): a drain's marker the device has not flushed. The harness reads this (control op "idle") to tell a
 * hung drain before its watchdog runs out.
 */
import { WQ_INDEX_BITS } from "./hw.ts";
import { errorState, type QueuePair } from "./qp.ts";
import { distance } from "./ring.ts";

/** The device's answer to "will you still do anything by yourself?" */
export interface IdleReport {
  /** ms since the device last saw or did anything */
  quietMs: number;
  /** what it will still do without the guest acting, each in words; empty: nothing */
  owed: string[];
  /**
   * the work requests it holds and will not complete unless the guest acts (WQEs of a QP in
   * ERROR past what it flushes, a stalled queue's WQEs), each in words: what a drain can wait for
   */
  held: string[];
}

/** A timer a fault set: work the device does by itself at `until` (ms since the epoch). */
export interface TimedWork {
  what: string;
  until: number;
  /** the fault that set it, when its work can come early (FaultPlan.timerDone) */
  of?: object;
}

/**
 * How long past its time a timer's work still counts as owed: the timer fires, then queues its job
 * (setTimeout and setImmediate on a busy event loop), and only that job's events count as activity.
 */
export const TIMER_GRACE_MS = 100;

/** The last moment of activity, kept by touch(). */
export class ActivityClock {
  private last: number;

  constructor(private readonly now: () => number = Date.now) {
    this.last = now();
  }

  /** Something happened on the device. */
  touch(): void {
    this.last = this.now();
  }

  /** ms since the last touch (or since it was made) */
  get quietMs(): number {
    return Math.max(0, this.now() - this.last);
  }
}

/** The device's idle report from its activity clock, its pending jobs and the timers its faults set. */
export function idleReport(
  clock: ActivityClock,
  pendingJobs: number,
  timers: readonly TimedWork[],
  held: readonly string[] = [],
  now: number = Date.now(),
): IdleReport {
  const owed: string[] = [];
  if (pendingJobs > 0) owed.push(`${pendingJobs} deferred job(s) queued or running`);
  for (const t of timers)
    if (t.until + TIMER_GRACE_MS > now)
      owed.push(`${t.what} in ${Math.max(0, Math.round(t.until - now))} ms`);
  return { quietMs: clock.quietMs, owed, held: [...held] };
}

/** Several devices of one server as one: quiet as the least quiet, owing what any owes (named). */
export function combinedIdle(reports: ReadonlyMap<string, IdleReport>): IdleReport {
  let quietMs = Number.POSITIVE_INFINITY;
  const owed: string[] = [];
  const held: string[] = [];
  for (const [name, r] of reports) {
    quietMs = Math.min(quietMs, r.quietMs);
    owed.push(...r.owed.map((o) => `${name}: ${o}`));
    held.push(...r.held.map((o) => `${name}: ${o}`));
  }
  return { quietMs: Number.isFinite(quietMs) ? quietMs : 0, owed, held };
}

/** The queues a QP has that the device holds WQEs of without working on them: in ERROR past its flush, or stalled. */
export function heldWork(
  qps: Iterable<QueuePair>,
  stalled: (qpn: number, queue: "sq" | "rq") => boolean,
): string[] {
  const held: string[] = [];
  for (const qp of qps) {
    const inError = qp.state === errorState(qp.proto);
    for (const queue of ["sq", "rq"] as const) {
      const wq = queue === "sq" ? qp.sq : qp.rq;
      const n = distance(wq.pi, wq.ci, WQ_INDEX_BITS);
      if (n === 0) continue;
      if (stalled(qp.qpn, queue)) held.push(`QP ${qp.qpn} ${queue}: ${n} WQE block(s) on a stalled queue`);
      else if (inError) held.push(`QP ${qp.qpn} ${queue}: ${n} WQE block(s) in ERROR, not flushed`);
    }
  }
  return held;
}
