/**
 * Fault injection: what a harness asks the device to get wrong, per run. A fault is armed with a
 * match (which QP, which queue, the how-many-th event after arming) and fires `count` times (once by
 * default); every arming and every firing is a hardware-trace event, so a verdict can be read
 * beside the faults that shaped it.
 */
import { z } from "zod";
import { TIMER_GRACE_MS, type TimedWork } from "./idle.ts";
import type { Tracer } from "./trace.ts";

const queue = z.enum(["sq", "rq"]);
const match = {
  /** the QP the fault applies to; any QP when absent */
  qpn: z.number().int().nonnegative().optional(),
  /** fire on the nth matching event after arming (1 = the next one) */
  nth: z.number().int().positive().default(1),
  /** how many times it fires (consecutive matching events from the nth on) */
  count: z.number().int().positive().default(1),
};
/** completion faults: only CQEs of this erdma_wc_status count (e.g. flush completions) */
const syndrome = { syndrome: z.number().int().min(0).max(255).optional() };

export const FaultSpec = z.discriminatedUnion("kind", [
  /** complete a WQE with an error status (erdma_wc_status) instead of executing it */
  z.object({
    kind: z.literal("error-wqe"),
    queue: queue.default("sq"),
    status: z.number().int().min(1).max(255),
    ...match,
  }),
  z.object({ kind: z.literal("drop-cqe"), queue: queue.optional(), ...syndrome, ...match }),
  z.object({ kind: z.literal("duplicate-cqe"), queue: queue.optional(), ...syndrome, ...match }),
  /**
   * the completion is held for `ms`; `until: flush`: at most `ms`, and written as soon as the
   * queue's flush reaches a WQE behind it (holds for it or overtakes it): the situation it makes
   * has then happened, and waiting longer shows nothing more
   */
  z.object({
    kind: z.literal("delay-cqe"),
    queue: queue.optional(),
    ms: z.number().int().positive().max(60_000),
    until: z.literal("flush").optional(),
    ...syndrome,
    ...match,
  }),
  /** write this CQE after the next one on the same CQ */
  z.object({ kind: z.literal("reorder-cqe"), queue: queue.optional(), ...syndrome, ...match }),
  /** write the CQE on another CQ: `cqn`, else the QP's other queue's CQ, else another CQ of the device */
  z.object({
    kind: z.literal("wrong-cq"),
    queue: queue.optional(),
    cqn: z.number().int().nonnegative().optional(),
    ...syndrome,
    ...match,
  }),
  /** report qe_idx + delta instead of the WQE's index */
  z.object({
    kind: z.literal("wrong-index"),
    queue: queue.optional(),
    delta: z.number().int(),
    ...syndrome,
    ...match,
  }),
  /** an MSI-X interrupt that is not delivered (vector: any when absent) */
  z.object({ kind: z.literal("lose-irq"), vector: z.number().int().nonnegative().optional(), ...match }),
  /**
   * a completion-event (CEQ) interrupt held back for `ms` before it is raised, as interrupt
   * moderation does: the CEQEs written meanwhile wait for one handler run (vector: any when absent);
   * without `ms`, held until a raise-irq (or the faults are cleared)
   */
  z.object({
    kind: z.literal("coalesce-irq"),
    vector: z.number().int().nonnegative().optional(),
    ms: z.number().int().positive().max(60_000).optional(),
    ...match,
  }),
  /** the interrupts coalesce-irq holds without `ms` are raised now (vector: every vector's when absent) */
  z.object({ kind: z.literal("raise-irq"), vector: z.number().int().nonnegative().optional() }),
  /**
   * the queue stops processing: for `ms`, until the QP enters ERROR (`until`), or until the faults
   * are cleared. It stops when next scheduled, or (`after`) once it has executed that many more
   * WQEs: WRs are then outstanding in the device when the QP errors, as on a busy wire.
   */
  z.object({
    kind: z.literal("stall-queue"),
    queue,
    ms: z.number().int().positive().optional(),
    until: z.literal("error").optional(),
    after: z.number().int().nonnegative().max(65536).optional(),
    ...match,
  }),
  /** a doorbell the device drops (its producer index is not taken) */
  z.object({ kind: z.literal("ignore-doorbell"), queue, ...match }),
  /**
   * the end of a stall-queue, at once: the queue's stall ends and its stall-queue faults not fired
   * yet are disarmed (qpn: that QP's, else every QP's); the queue runs again
   */
  z.object({ kind: z.literal("resume-queue"), queue, qpn: match.qpn }),
]);
export type Fault = z.output<typeof FaultSpec>;
export type FaultKind = Fault["kind"];

export interface FaultContext {
  qpn?: number;
  queue?: "sq" | "rq";
  /** a stall's event: a WQE about to be executed (else: the queue being scheduled) */
  wqe?: boolean;
  vector?: number;
  /** a completion's status */
  syndrome?: number;
}

/** the faults that wait for their event (a resume-queue or raise-irq acts when armed) */
type WaitingFault = Exclude<Fault, { kind: "resume-queue" | "raise-irq" }>;

interface Armed {
  id: number;
  fault: WaitingFault;
  seen: number;
  fired: number;
}

export class FaultPlan {
  private readonly armed: Armed[] = [];
  private nextId = 1;
  /** per stalled queue: until when (ms since the epoch; Infinity: until cleared or, `error`, until ERROR) */
  private stalls = new Map<string, { until: number; error: boolean }>();
  /** the timers fired faults set (a delayed CQE, a held interrupt): work the device still does by itself */
  private timed: TimedWork[] = [];
  private readonly clearListeners = new Set<() => void>();
  /** interrupts a coalesce-irq without `ms` holds until a raise-irq or clear() */
  private heldIrqs: { vector: number; deliver: () => void }[] = [];

  constructor(private readonly tracer: Tracer) {}

  /** Arms a fault (validated); returns its id. Throws a ZodError naming the bad field. */
  add(spec: unknown): number {
    const fault = FaultSpec.parse(spec);
    const id = this.nextId++;
    if (fault.kind === "resume-queue") {
      this.tracer.emit({ kind: "fault", action: "armed", id, fault });
      this.resume(id, fault);
      return id;
    }
    if (fault.kind === "raise-irq") {
      this.tracer.emit({ kind: "fault", action: "armed", id, fault });
      const raised = this.raiseHeld(fault.vector);
      this.tracer.emit({ kind: "fault", action: "fired", id, fault, context: { raised } });
      return id;
    }
    // a stall after k WQEs fires on the (k+1)-th WQE the queue meets
    if (fault.kind === "stall-queue" && fault.after !== undefined) fault.nth = fault.after + 1;
    this.armed.push({ id, fault, seen: 0, fired: 0 });
    this.tracer.emit({ kind: "fault", action: "armed", id, fault });
    return id;
  }

  /** A resume-queue: fires at once, ending the stalls it matches; the data path runs the queues again. */
  private resume(id: number, fault: Extract<Fault, { kind: "resume-queue" }>): void {
    const matches = (qpn: number | undefined) => fault.qpn === undefined || qpn === fault.qpn;
    const disarmed = this.armed.filter(
      (a) =>
        a.fault.kind === "stall-queue" &&
        a.fired < a.fault.count &&
        a.fault.queue === fault.queue &&
        matches(a.fault.qpn),
    );
    for (const a of disarmed) this.armed.splice(this.armed.indexOf(a), 1);
    const ended = [...this.stalls.keys()].filter((key) => {
      const [qpn, queue] = key.split("/");
      return queue === fault.queue && matches(Number(qpn));
    });
    for (const key of ended) this.stalls.delete(key);
    this.tracer.emit({
      kind: "fault",
      action: "fired",
      id,
      fault,
      context: {
        queue: fault.queue,
        ...(fault.qpn !== undefined ? { qpn: fault.qpn } : {}),
        stallsEnded: ended.length,
        disarmed: disarmed.map((a) => a.id),
      },
    });
    for (const listener of this.clearListeners) listener();
  }

  clear(): void {
    this.armed.length = 0;
    this.stalls.clear();
    this.tracer.emit({ kind: "fault", action: "cleared" });
    this.raiseHeld(undefined);
    for (const listener of this.clearListeners) listener();
  }

  /** A fired coalesce-irq without `ms`: `deliver` raises the interrupt once a raise-irq or clear() comes. */
  holdUntilRaised(vector: number, deliver: () => void): void {
    this.heldIrqs.push({ vector, deliver });
  }

  /** Raises the held interrupts of `vector` (every vector's when undefined); how many. */
  private raiseHeld(vector: number | undefined): number {
    const now = this.heldIrqs.filter((h) => vector === undefined || h.vector === vector);
    this.heldIrqs = this.heldIrqs.filter((h) => !now.includes(h));
    for (const h of now) h.deliver();
    return now.length;
  }

  /** Called after every clear() and resume-queue (a data path resumes stalled queues). */
  onClear(listener: () => void): () => void {
    this.clearListeners.add(listener);
    return () => {
      this.clearListeners.delete(listener);
    };
  }

  get active(): readonly Fault[] {
    return this.armed.filter((a) => a.fired < a.fault.count).map((a) => a.fault);
  }

  /**
   * The fault of `kind` that fires for this event, if any (consumed). Every armed fault of that
   * kind that matches the context counts the event, fired or not.
   */
  fire<K extends WaitingFault["kind"]>(
    kind: K,
    ctx: FaultContext,
    detail?: Record<string, unknown>,
  ): Extract<Fault, { kind: K }> | undefined {
    for (const a of this.armed) {
      const f = a.fault;
      if (f.kind !== kind || a.fired >= f.count) continue;
      if (f.qpn !== undefined && f.qpn !== ctx.qpn) continue;
      if ("queue" in f && f.queue !== undefined && ctx.queue !== undefined && f.queue !== ctx.queue) continue;
      if ("vector" in f && f.vector !== undefined && f.vector !== ctx.vector) continue;
      if ("syndrome" in f && f.syndrome !== undefined && f.syndrome !== ctx.syndrome) continue;
      if (f.kind === "stall-queue" && (f.after !== undefined) !== (ctx.wqe === true)) continue;
      a.seen++;
      if (a.seen < f.nth) continue;
      a.fired++;
      this.tracer.emit({
        kind: "fault",
        action: "fired",
        id: a.id,
        fault: f,
        context: { ...ctx, ...detail },
      });
      if (f.kind === "stall-queue") {
        const until = f.ms === undefined ? Number.POSITIVE_INFINITY : Date.now() + f.ms;
        this.stalls.set(stallKey(ctx), { until, error: f.until === "error" });
      }
      // the caller sets a timer of f.ms for these (completion.ts, device.ts raise)
      if ((f.kind === "delay-cqe" || f.kind === "coalesce-irq") && f.ms !== undefined)
        this.timed.push({ what: `${f.kind} (fault ${a.id}) fires`, until: Date.now() + f.ms, of: f });
      return f as Extract<Fault, { kind: K }>;
    }
    return undefined;
  }

  /** A fault's timer did its work before its time (a delay-cqe `until: flush`): it is owed no longer. */
  timerDone(f: Fault): void {
    const i = this.timed.findIndex((t) => t.of === f);
    if (i >= 0) this.timed.splice(i, 1);
  }

  /** Whether a queue is stalled now (a fired stall-queue that has not run out). */
  stalled(qpn: number, queue: "sq" | "rq"): number | undefined {
    const stall = this.stalls.get(stallKey({ qpn, queue }));
    if (stall === undefined) return undefined;
    if (stall.until <= Date.now()) {
      this.stalls.delete(stallKey({ qpn, queue }));
      return undefined;
    }
    return stall.until;
  }

  /**
   * The work the device's faults still make it do by itself, with when: the timers of delayed CQEs
   * and held interrupts, and the stalls that end after their `ms` (the queue is then scheduled
   * again). A stall without an end is not here: it ends only when the harness clears the faults
   * or (`until: error`) when the driver moves the QP to ERROR.
   */
  timers(now: number = Date.now()): TimedWork[] {
    this.timed = this.timed.filter((t) => t.until + TIMER_GRACE_MS > now);
    const stalls = [...this.stalls]
      .filter(([, s]) => Number.isFinite(s.until) && s.until + TIMER_GRACE_MS > now)
      .map(([key, s]) => ({ what: `the stall of ${key} ends`, until: s.until }));
    return [...this.timed, ...stalls];
  }

  /** The QP is in ERROR: its stalls that last until then end (traced). */
  errorEntered(qpn: number): void {
    for (const queue of ["sq", "rq"] as const) {
      const key = stallKey({ qpn, queue });
      if (!this.stalls.get(key)?.error) continue;
      this.stalls.delete(key);
      this.tracer.emit({
        kind: "fault",
        action: "cleared",
        context: { qpn, queue, why: "the QP entered ERROR" },
      });
    }
  }
}

function stallKey(ctx: FaultContext): string {
  return `${ctx.qpn}/${ctx.queue}`;
}
