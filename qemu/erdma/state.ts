/**
 * The device's state behind the registers: object tables (QPC, CQC, EQC, MPT, AH, GID), doorbell
 * pages, counters and configuration set by commands, and the plumbing objects share (DMA, trace,
 * interrupts, deferred work). Command handlers and doorbells work on this; a reset replaces it.
 */
import { hex } from "./bits.ts";
import type { CompletionQueue, CqEnv } from "./cq.ts";
import type { Dma } from "./dma.ts";
import type { WorkQueue } from "./engine.ts";
import { aeqe, ceqe, type EqEnv, type EventQueue } from "./eq.ts";
import { ExtDbPages } from "./extdb.ts";
import { AeType, NQP_PER_QBLOCK } from "./hw.ts";
import type { MemoryRegion } from "./mr.ts";
import { ObjectTable } from "./objects.ts";
import type { ErdmaProfile } from "./profile.ts";
import type { Protocol, QueuePair } from "./qp.ts";
import type { QueueEngine } from "./queue-engine.ts";
import type { Tracer } from "./trace.ts";

/** GET_STATS counters in response order (hw.h:381-395). */
export const STAT_NAMES = [
  "tx_req_cnt",
  "tx_packets_cnt",
  "tx_bytes_cnt",
  "tx_drop_packets_cnt",
  "tx_bps_meter_drop_packets_cnt",
  "tx_pps_meter_drop_packets_cnt",
  "rx_packets_cnt",
  "rx_bytes_cnt",
  "rx_drop_packets_cnt",
  "rx_bps_meter_drop_packets_cnt",
  "rx_pps_meter_drop_packets_cnt",
] as const;
export type StatName = (typeof STAT_NAMES)[number];

export interface Plumbing {
  profile: ErdmaProfile;
  tracer: Tracer;
  dma: Dma;
  jobs: WorkQueue;
  /** what decides CQEs and flushes (queue-engine.ts) */
  engine: QueueEngine;
  raise(vector: number, source: string): void;
  /** the data path's view of QP changes made by commands */
  qpEvents?: QpEvents;
}

export interface QpEvents {
  stateChanged(qp: QueuePair, from: number): void;
  reflushed(qp: QueuePair): void;
}

export interface Ah {
  ahn: number;
  pdn: number;
  av: Record<string, unknown>;
}

export interface Gid {
  index: number;
  ntype: number;
  gid: string;
}

export class DeviceState {
  readonly proto: Protocol;
  readonly maxQp: number;
  readonly qps: ObjectTable<QueuePair>;
  readonly cqs: ObjectTable<CompletionQueue>;
  readonly ceqs: ObjectTable<EventQueue>;
  readonly mrs: ObjectTable<MemoryRegion>;
  readonly ahs: ObjectTable<Ah>;
  readonly gids: ObjectTable<Gid>;
  readonly extDb = new ExtDbPages();
  readonly stats = new Map<StatName, bigint>(STAT_NAMES.map((n) => [n, 0n]));
  /** the AEQ, latched at INIT */
  aeq: EventQueue | undefined;
  mtu: number | undefined;
  /** CONF_DEVICE: the host page shift and whether it is in force (hw.h:189-190) */
  hostPageShift: number | undefined;
  private cookieSeed: number;

  readonly eqEnv: EqEnv;
  readonly cqEnv: CqEnv;

  constructor(
    readonly p: Plumbing,
    seed: number,
  ) {
    const caps = p.profile.caps;
    this.proto = p.profile.protocol;
    this.maxQp = NQP_PER_QBLOCK * caps.qblock;
    this.qps = new ObjectTable("qp", this.maxQp);
    this.cqs = new ObjectTable("cq", this.maxQp * 2);
    // eqn 0 is the CMDQ EQ (erdma_eq.c:256); CEQs take the other vectors
    this.ceqs = new ObjectTable("eq", p.profile.msixVectors);
    this.mrs = new ObjectTable("mr", this.maxQp * 2);
    this.ahs = new ObjectTable("ah", 2 ** caps.maxAhLog2);
    this.gids = new ObjectTable("gid", 2 ** caps.maxGidLog2);
    this.cookieSeed = seed >>> 0;
    this.eqEnv = { dma: p.dma, tracer: p.tracer, irq: (v, s) => p.raise(v, s) };
    this.cqEnv = {
      dma: p.dma,
      tracer: p.tracer,
      engine: p.engine,
      event: (cq) => this.cqEvent(cq),
      broken: (cq) => {
        if (typeof cq.cqn === "number") this.queueAsyncEvent(AeType.CQ_ERR, 0, cq.cqn, 0);
      },
    };
  }

  get tracer(): Tracer {
    return this.p.tracer;
  }

  get dma(): Dma {
    return this.p.dma;
  }

  get profile(): ErdmaProfile {
    return this.p.profile;
  }

  /** A per-QP MPA cookie (CREATE_QP response, hw.h:326): stable for a seed, distinct per QP. */
  cookieFor(qpn: number): number {
    let x = (this.cookieSeed ^ Math.imul(qpn + 1, 0x9e37_79b1)) >>> 0;
    x = Math.imul(x ^ (x >>> 16), 0x85eb_ca6b) >>> 0;
    x = Math.imul(x ^ (x >>> 13), 0xc2b2_ae35) >>> 0;
    return (x ^ (x >>> 16)) >>> 0;
  }

  /** A data CQ's completion event: a CEQE on the CQ's EQ. */
  private async cqEvent(cq: CompletionQueue): Promise<void> {
    if (cq.cqn === "cmdq") return;
    const eq = this.ceqs.get(cq.eqn);
    if (!eq) {
      this.tracer.warn("CQ event for an EQ that does not exist: dropped", { cqn: cq.cqn, eqn: cq.eqn });
      return;
    }
    const [q0, q1] = ceqe(cq.cqn, cq.pi);
    await eq.push(q0, q1, { cqn: cq.cqn });
  }

  /** Writes an AEQE (deferred; safe to call from anywhere). */
  queueAsyncEvent(type: number, subtype: number, data0: number, data1: number): void {
    this.p.jobs.post("aeqe", async () => {
      await this.postAsyncEvent(type, subtype, data0, data1);
    });
  }

  async postAsyncEvent(type: number, subtype: number, data0: number, data1: number): Promise<boolean> {
    const aeq = this.aeq;
    if (!aeq) {
      this.tracer.warn("async event before INIT: dropped", { type, data0 });
      return false;
    }
    const [q0, q1] = aeqe(type, subtype, data0, data1);
    return aeq.push(q0, q1, { type, subtype, data0, data1 });
  }

  snapshot(): Record<string, unknown> {
    const list = <T>(t: ObjectTable<T>) => [...t.values()];
    return {
      proto: this.proto,
      maxQp: this.maxQp,
      mtu: this.mtu,
      hostPageShift: this.hostPageShift,
      aeq: this.aeq?.toJSON(),
      ceqs: list(this.ceqs).map((e) => e.toJSON()),
      cqs: list(this.cqs).map((c) => c.toJSON()),
      qps: list(this.qps).map((q) => q.toJSON()),
      mrs: list(this.mrs).map((m) => m.toJSON()),
      ahs: list(this.ahs),
      gids: list(this.gids),
      extDbContexts: this.extDb.count,
      stats: Object.fromEntries([...this.stats].map(([k, v]) => [k, hex(v)])),
    };
  }
}
