/**
 * Event queues: the CMDQ EQ (eqn 0, vector 0), the AEQ (vector 0) and the CEQs created with
 * CREATE_EQ. The device writes 16-byte EQEs with an owner bit; an EQE written while the EQ is armed
 * raises its MSI-X vector and disarms it; the driver re-arms with the doorbell (erdma_eq.c:11-20
 * notify_eq, ci in bits 23:0 and ARM in bit 31). EQs start armed: every handler re-arms after
 * draining (erdma_cmdq.c:359, erdma_eq.c:80, :171), so nothing else would ever arm them. Re-arming
 * with unconsumed EQEs interrupts again, so an EQE written between the drain and the re-arm is not
 * lost.
 */
import { get64n, le64, put32, put64 } from "./bits.ts";
import type { Dma } from "./dma.ts";
import { Aeqe, Ceqe, EQE_SIZE, EqDb } from "./hw.ts";
import { distance, inc32, ownerBit, slot } from "./ring.ts";
import type { Tracer } from "./trace.ts";

export type EqKind = "cmdq" | "aeq" | "ceq";

export interface EqEnv {
  dma: Dma;
  tracer: Tracer;
  /** raises `vector` (called from deferred work only) */
  irq(vector: number, source: string): void;
}

/** The driver's EQ consumer index is a u16 (erdma.h:29). */
const EQ_INDEX_BITS = 16;
const OWNER_MASK = ~(1n << 31n);

export class EventQueue {
  pi = 0;
  /** the consumer index the driver last reported */
  ci = 0;
  armed = true;
  broken = false;
  overflows = 0;
  events = 0;

  constructor(
    readonly kind: EqKind,
    readonly eqn: number,
    readonly vector: number,
    readonly base: bigint,
    readonly depth: number,
    readonly dbrec: bigint,
    private readonly env: EqEnv,
  ) {}

  get label(): number | "aeq" {
    return this.kind === "aeq" ? "aeq" : this.eqn;
  }

  /** Writes one EQE (owner bit filled in) and interrupts if armed. False when it was dropped. */
  async push(qword0: bigint, qword1: bigint, detail: Record<string, unknown>): Promise<boolean> {
    if (this.broken) return false;
    if (distance(this.pi, this.ci, EQ_INDEX_BITS) >= this.depth) {
      this.overflows++;
      this.env.tracer.warn("event queue overflow: EQE dropped", {
        eq: this.label,
        pi: this.pi,
        ci: this.ci,
        ...detail,
      });
      return false;
    }
    const index = this.pi;
    const owner = ownerBit(index, this.depth);
    const q0 = (qword0 & OWNER_MASK) | put64(owner, Aeqe.OWNER);
    const addr = this.base + BigInt(slot(index, this.depth) * EQE_SIZE);
    try {
      await this.env.dma.write(addr + 8n, le64(qword1), `${this.kind} EQE`);
      await this.env.dma.write(addr, le64(q0), `${this.kind} EQE`);
    } catch {
      this.broken = true;
      this.env.tracer.emit({ kind: "state", object: "eq", id: this.eqn, from: "ok", to: "broken" });
      return false;
    }
    this.pi = inc32(this.pi);
    this.events++;
    this.env.tracer.emit({ kind: "eqe", eq: this.label, index, owner, detail });
    if (this.armed) {
      this.armed = false;
      this.env.irq(this.vector, `${this.kind}${this.kind === "ceq" ? this.eqn : ""}`);
    }
    return true;
  }

  /** Applies a doorbell; returns true when the EQ is armed with EQEs pending (interrupt now). */
  doorbell(value: bigint): boolean {
    this.ci = get64n(value, EqDb.CI);
    if (get64n(value, EqDb.ARM) === 1) this.armed = true;
    return this.armed && this.pending() > 0;
  }

  pending(): number {
    return distance(this.pi, this.ci, EQ_INDEX_BITS);
  }

  /** Called by deferred work after `doorbell` returned true. */
  fireIfPending(): void {
    if (this.armed && !this.broken && this.pending() > 0) {
      this.armed = false;
      this.env.irq(this.vector, `${this.kind}-rearm`);
    }
  }

  toJSON(): Record<string, unknown> {
    return {
      kind: this.kind,
      eqn: this.eqn,
      vector: this.vector,
      base: `0x${this.base.toString(16)}`,
      depth: this.depth,
      pi: this.pi,
      ci: this.ci,
      armed: this.armed,
      broken: this.broken,
      events: this.events,
      overflows: this.overflows,
    };
  }
}

/** CEQE: CQN in bits 19:0, the CQ's producer index in 55:32 (hw.h:534-537). */
export function ceqe(cqn: number, cqPi: number): [bigint, bigint] {
  return [put64(cqPi & 0xff_ffff, Ceqe.PI) | put64(cqn, Ceqe.CQN), 0n];
}

/** AEQE: header (type 23:16, subtype 7:0), event_data0, event_data1 (hw.h:540-555). */
export function aeqe(type: number, subtype: number, data0: number, data1: number): [bigint, bigint] {
  const hdr = put32(type, Aeqe.TYPE) | put32(subtype, Aeqe.SUBTYPE);
  return [BigInt(hdr) | (BigInt(data0 >>> 0) << 32n), BigInt(data1 >>> 0)];
}
