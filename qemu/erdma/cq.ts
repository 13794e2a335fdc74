/**
 * Completion queues: the CMDQ CQ and the CQs created with CREATE_CQ. The device writes 32-byte CQEs
 * (header and fields big-endian, hw.h:429-439) with an owner bit. A CQ armed through its doorbell
 * (hw.h:88-93: CI, ARM, SOL, CMDSN, CQN) raises one event on its EQ for the next CQE (for a
 * solicited-only arm, the next solicited or error CQE) and disarms. Arming while CQEs the driver
 * has not consumed are waiting raises the event at once.
 */
import { get64n, put32 } from "./bits.ts";
import type { Dma } from "./dma.ts";
import { CQE_SIZE, CqDb, CqeHdr, CqeQtype } from "./hw.ts";
import type { QueueBuffer } from "./mtt.ts";
import { depthLog2, type QueueEngine } from "./queue-engine.ts";
import { distance } from "./ring.ts";
import type { Tracer } from "./trace.ts";

/** The CQ doorbell carries the consumer index in 24 bits (hw.h:93). */
const CQ_INDEX_BITS = 24;

export type CqArm = "no" | "all" | "solicited";

export interface CqEnv {
  dma: Dma;
  tracer: Tracer;
  /** decides each CQE's header (owner bit), slot and the producer index after it */
  engine: QueueEngine;
  /** delivers the completion event (writes a CEQE / CMDQ EQE) */
  event(cq: CompletionQueue): Promise<void>;
  /** the CQ buffer could not be written */
  broken(cq: CompletionQueue): void;
}

export interface CqeFields {
  opcode: number;
  qtype: number;
  syndrome: number;
  qeIdx: number;
  qpn: number;
  /** bytes 12..15: imm_data (LE) or inv_rkey (BE) as the data path chooses; 0 by default */
  word3?: { value: number; endian: "le" | "be" };
  size: number;
  /** bytes 28..31 (RoCEv2 UD info) */
  info?: number;
  solicited?: boolean;
}

export class CompletionQueue {
  pi = 0;
  ci = 0;
  armed: CqArm = "no";
  /** producer index just after the last solicited or error CQE */
  solicitedPi = 0;
  cmdsn = 0;
  broken = false;
  events = 0;
  /** a CQ overrun was traced and the driver has not reported a new CI since */
  overrun = false;

  private readonly depthLog2: number;

  constructor(
    readonly cqn: number | "cmdq",
    readonly depth: number,
    readonly buffer: QueueBuffer,
    readonly eqn: number,
    readonly dbrec: bigint,
    private readonly env: CqEnv,
  ) {
    this.depthLog2 = depthLog2(depth);
  }

  /** Writes one CQE (header word last) and delivers an event if armed for it. */
  async write(
    hdr: number,
    body: Uint8Array,
    solicitedOrError: boolean,
    info: { qpn: number; queue?: "sq" | "rq"; wqe?: number },
  ): Promise<boolean> {
    if (this.broken) return false;
    const index = this.pi;
    // The device learns the consumer index only from arm doorbells (erdma_cq.c notify_cq), so it
    // cannot refuse a CQE; like the hardware it writes on, and the trace says when the ring may have
    // been overrun since the driver last reported its index.
    if (!this.overrun && distance(index, this.ci, CQ_INDEX_BITS) >= this.depth) {
      this.overrun = true;
      this.env.tracer.warn("CQ overrun: more CQEs written than the ring holds since the last reported CI", {
        cq: this.cqn,
        pi: index,
        ci: this.ci,
        depth: this.depth,
      });
    }
    const cqe = this.env.engine.cqe(index, this.depthLog2, hdr);
    const owner = cqe.header >>> 31;
    const addr = this.buffer.address(cqe.slot * CQE_SIZE);
    const head = new Uint8Array(4);
    new DataView(head.buffer).setUint32(0, cqe.header, false);
    try {
      await this.env.dma.write(addr + 4n, body.subarray(0, CQE_SIZE - 4), `CQ ${this.cqn} CQE`);
      await this.env.dma.write(addr, head, `CQ ${this.cqn} CQE`);
    } catch {
      this.broken = true;
      this.env.tracer.emit({
        kind: "state",
        object: this.cqn === "cmdq" ? "cmdq" : "cq",
        id: this.cqn === "cmdq" ? 0 : this.cqn,
        from: "ok",
        to: "broken",
      });
      this.env.broken(this);
      return false;
    }
    this.pi = cqe.nextPi;
    if (solicitedOrError) this.solicitedPi = this.pi;
    this.env.tracer.emit({
      kind: "cqe",
      cq: this.cqn,
      index,
      owner,
      qpn: info.qpn,
      syndrome: hdr & 0xff,
      opcode: (hdr >>> 16) & 0xff,
      ...(info.queue ? { queue: info.queue } : {}),
      ...(info.wqe !== undefined ? { wqe: info.wqe } : {}),
    });
    if (this.armed === "all" || (this.armed === "solicited" && solicitedOrError)) {
      this.armed = "no";
      this.events++;
      await this.env.event(this);
    }
    return true;
  }

  /** A data CQE from its fields. */
  async post(f: CqeFields): Promise<boolean> {
    const hdr =
      put32(f.opcode, CqeHdr.OPCODE) | put32(f.qtype, CqeHdr.QTYPE) | put32(f.syndrome, CqeHdr.SYNDROME);
    const body = new Uint8Array(CQE_SIZE - 4);
    const dv = new DataView(body.buffer);
    dv.setUint32(0, f.qeIdx >>> 0, false);
    dv.setUint32(4, f.qpn >>> 0, false);
    if (f.word3) dv.setUint32(8, f.word3.value >>> 0, f.word3.endian === "le");
    dv.setUint32(12, f.size >>> 0, false);
    dv.setUint32(24, (f.info ?? 0) >>> 0, false);
    const queue = f.qtype === CqeQtype.SQ ? "sq" : f.qtype === CqeQtype.RQ ? "rq" : undefined;
    return this.write(hdr, body, f.solicited === true || f.syndrome !== 0, {
      qpn: f.qpn,
      ...(queue ? { queue } : {}),
      wqe: f.qeIdx,
    });
  }

  /** Applies a CQ doorbell; true when armed with a matching CQE already waiting. */
  doorbell(value: bigint): boolean {
    const ci = get64n(value, CqDb.CI);
    if (ci !== this.ci) this.overrun = false;
    this.ci = ci;
    this.cmdsn = get64n(value, CqDb.CMDSN);
    if (get64n(value, CqDb.ARM) === 1) this.armed = get64n(value, CqDb.SOL) === 1 ? "solicited" : "all";
    return this.matchingPending();
  }

  private matchingPending(): boolean {
    const pending = distance(this.pi, this.ci, CQ_INDEX_BITS);
    if (this.armed === "no" || pending === 0 || pending > this.depth) return false;
    if (this.armed === "all") return true;
    const sol = distance(this.solicitedPi, this.ci, CQ_INDEX_BITS);
    return sol > 0 && sol <= pending;
  }

  /** Deferred half of `doorbell`: deliver the event if still armed with a matching CQE waiting. */
  async fireIfPending(): Promise<void> {
    if (this.broken || !this.matchingPending()) return;
    this.armed = "no";
    this.events++;
    await this.env.event(this);
  }

  toJSON(): Record<string, unknown> {
    return {
      cqn: this.cqn,
      depth: this.depth,
      eqn: this.eqn,
      pi: this.pi,
      ci: this.ci,
      armed: this.armed,
      broken: this.broken,
      events: this.events,
      buffer: this.buffer.toJSON(),
    };
  }
}
