/**
 * A driver double: programs the erdma device model the way the Linux erdma driver does
 * (erdma_main.c probe, erdma_cmdq.c command posting and completion, erdma_eq.c event queues,
 * erdma_cq.c CQ arming and polling, erdma_verbs.c/erdma_qp.c object lifecycles), for 6.1, 6.12 and
 * 7.2 behaviour, over a fake host. It is the guest CPU: it touches guest memory synchronously and
 * the device through bar0Read/bar0Write, and runs the interrupt handlers for interrupts the fake
 * host recorded. Register offsets and doorbell spaces are erdma_hw.h's as qemu/erdma/hw.ts carries
 * them (with citations); the steps, their order and the values written are the driver's, as read here.
 */
import type { Fabric } from "../../qemu/erdma/fabric.ts";
import {
  CMDQ_MAX_OUTSTANDING,
  CQDB_SPACE_OFFSET,
  DEFAULT_EQ_DEPTH,
  HW_PAGE_SHIFT,
  Reg,
  RQDB_SPACE_OFFSET,
  SDB_SHARED_PAGE_INDEX,
} from "../../qemu/erdma/hw.ts";
import { ErdmaDevice, type ErdmaProfile } from "../../qemu/erdma/index.ts";
import type { QueueEngine } from "../../qemu/erdma/queue-engine.ts";
import * as R from "./erdma-requests.ts";
import {
  decodeCqe,
  getField,
  Hdr,
  pushOneSqe,
  type SendWr,
  type Sge,
  sqDoorbell,
  type Wc,
  type WqebbWriter,
} from "./erdma-sqe.ts";
import { type FakeGuestMemory, FakeHost } from "./fake-guest.ts";

export type { DriverVersion } from "./erdma-requests.ts";

type DriverVersion = R.DriverVersion;

const SQDB_SHARED_PAGE = SDB_SHARED_PAGE_INDEX << HW_PAGE_SHIFT;
const MAX_POLL_CHUNK = 16;

export const QpState = { IDLE: 0, RTR: 1, RTS: 2, CLOSING: 3, TERMINATE: 4, ERROR: 5 } as const;
/** ERDMA_MR_ACC_* (erdma_verbs.h (6.12):79-83) */
export const Acc = { RA: 1, LR: 2, LW: 4, RR: 8, RW: 16 } as const;

export class CmdTimeout extends Error {
  constructor(what: string) {
    super(`command timed out: ${what}`);
    this.name = "CmdTimeout";
  }
}

/** Malformed-SQE knobs: the header's WQEBB count and how far the doorbell moves the producer index. */
export interface SqeOverrides {
  wqebbCnt?: number;
  advance?: number;
  index?: number;
}

export interface CmdOutcome {
  status: number;
  resp0: bigint;
  resp1: bigint;
}

interface CompWait {
  status: "init" | "issued" | "finished";
  syndrome: number;
  data: [number, number, number, number];
}

export interface EqState {
  eqn: number;
  vector: number;
  qbuf: bigint;
  depth: number;
  ci: number;
  dbrec: bigint;
  db: number;
  ready: boolean;
  events: number;
}

export interface KernelCq {
  cqn: number;
  depth: number;
  qbuf: bigint;
  dbrec: bigint;
  eqn: number;
  ci: number;
  cmdsn: number;
  notifyCnt: number;
  /** completion events the CEQ handler delivered */
  events: number;
}

export interface KernelQp {
  qpn: number;
  pd: number;
  sqSize: number;
  rqSize: number;
  sqBuf: bigint;
  rqBuf: bigint;
  sqDbrec: bigint;
  rqDbrec: bigint;
  sqPi: number;
  rqPi: number;
  scq: KernelCq;
  rcq: KernelCq;
  state: number;
  cookie: number;
  flushing: boolean;
}

export interface Mr {
  stag: number;
  type: 0 | 1 | 2;
  pd: number;
  table?: bigint;
}

export interface Cqe {
  owner: number;
  opcode: number;
  qtype: number;
  syndrome: number;
  qeIdx: number;
  qpn: number;
  size: number;
}

export interface Aeqe {
  type: number;
  subtype: number;
  data0: number;
  data1: number;
}

export interface DeviceAttrs {
  maxCqe: number;
  maxMrSize: bigint;
  maxMw: number;
  maxRecvWr: number;
  localDmaKey: number;
  cc: number;
  maxQp: number;
  maxCq: number;
  maxMr: number;
  capFlags: number;
  fwVersion: number;
  maxGid: number;
  maxAh: number;
  mac: string;
}

const roundupPow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));
const ilog2 = (n: number) => Math.floor(Math.log2(n));

export interface DriverOptions {
  version: DriverVersion;
  /** num_possible_cpus(): the driver asks for cpus + 1 vectors (erdma_main.c:133-147) */
  cpus?: number;
}

export class ErdmaDriver {
  readonly version: DriverVersion;
  readonly mem: FakeGuestMemory;
  readonly sqeSize: number;
  readonly wqebbCnt: number;
  irqNum = 0;
  /** 6.1/6.12 cmdq->use_event; 7.2 decides per command (sleepable) */
  useEvent = false;
  cmdqOk = false;
  grpNum: number | undefined;
  proto: number | undefined;
  attrs: DeviceAttrs | undefined;
  readonly sq = { qbuf: 0n, depth: 0, pi: 0, ci: 0, dbrec: 0n };
  readonly cq = { qbuf: 0n, depth: 0, ci: 0, cmdsn: 0, dbrec: 0n, armed: 0 };
  eq: EqState = emptyEq();
  aeq: EqState = emptyEq();
  readonly ceqs: EqState[] = [];
  readonly aeqEvents: Aeqe[] = [];
  readonly cqs = new Map<number, KernelCq>();
  readonly qps = new Map<number, KernelQp>();
  private readonly waitPool: CompWait[] = [];
  private nextCqn = 1;
  private nextQpn = 1;
  private nextStag = 1;
  private nextPd = 1;
  /** interrupts the handlers ran for */
  irqCount = 0;
  /** per kernel QP: swr_tbl, rwr_tbl, sq_ci and sig_all (struct erdma_kqp, erdma_verbs.h) */
  private readonly kqp = new WeakMap<KernelQp, KqpTables>();

  constructor(
    readonly dev: ErdmaDevice,
    readonly host: FakeHost,
    opts: DriverOptions,
  ) {
    this.version = opts.version;
    this.mem = host.dma;
    this.sqeSize = this.version === "6.1" ? 64 : 128;
    this.wqebbCnt = this.sqeSize / 32;
    this.irqNum = Math.min((opts.cpus ?? 2) + 1, 32, dev.msixVectors);
    for (let i = 0; i < CMDQ_MAX_OUTSTANDING; i++)
      this.waitPool.push({ status: "init", syndrome: 0, data: [0, 0, 0, 0] });
  }

  // ---- MMIO --------------------------------------------------------------------------------

  r32(off: number): number {
    return Number(this.dev.bar0Read(off, 4));
  }

  w32(off: number, v: number): void {
    this.dev.bar0Write(off, 4, v >>> 0);
  }

  w64(off: number, v: bigint): void {
    this.dev.bar0Write(off, 8, BigInt.asUintN(64, v));
  }

  /** dma_alloc_coherent; 6.1 allocated queues with 8 extra bytes for their doorbell record */
  private queueAlloc(size: number): { qbuf: bigint; dbrec: bigint } {
    if (this.version === "6.1") {
      const qbuf = this.mem.alloc(size + 8);
      return { qbuf, dbrec: qbuf + BigInt(size) };
    }
    return { qbuf: this.mem.alloc(size), dbrec: this.mem.alloc(8, 8) };
  }

  // ---- probe (erdma_probe_dev + erdma_ib_device_add) ---------------------------------------

  async probe(): Promise<void> {
    const version = this.r32(Reg.VERSION);
    if (version === 0) throw new Error("ENODEV: version 0");
    if (this.version === "6.1") this.grpNum = this.r32(Reg.GRP_NUM);
    if (this.version === "7.2") this.proto = this.r32(Reg.DEV_PROTO);
    this.aeqInit();
    this.cmdqInit();
    await this.waitInitDone();
    this.cmdqOk = true;
    for (let i = 0; i < this.irqNum - 1; i++) {
      const out = await this.ceqInitOne(i);
      if (out.status !== 0) throw new Error(`CREATE_EQ ${i + 1} failed: ${out.status}`);
    }
    // erdma_finish_cmdq_init (erdma_cmdq.c:224-229)
    if (this.version !== "7.2") this.useEvent = true;
    this.armCmdqCq();
    await this.devAttrsInit();
    if (this.version !== "6.1" && this.attrs && this.attrs.capFlags & (1 << 3)) {
      const out = await this.post(R.confDevice(12));
      if (out.status !== 0) throw new Error(`CONF_DEVICE failed: ${out.status}`);
    }
    const mac = BigInt(this.r32(Reg.NETDEV_MAC_L)) | (BigInt(this.r32(Reg.NETDEV_MAC_H)) << 32n);
    if (this.attrs) this.attrs.mac = macString(mac);
  }

  /** erdma_aeq_init; `reuse` re-programs the current (zeroed) buffers, as after a device reset */
  aeqInit(reuse = false): void {
    const { qbuf, dbrec } = this.queueMemory(DEFAULT_EQ_DEPTH * 16, reuse && this.aeq);
    this.aeq = {
      eqn: -1,
      vector: 0,
      qbuf,
      depth: DEFAULT_EQ_DEPTH,
      ci: 0,
      dbrec,
      db: Reg.AEQ_DB,
      ready: true,
      events: 0,
    };
    this.wAddr(Reg.AEQ_ADDR_H, Reg.AEQ_ADDR_L, qbuf);
    this.w32(Reg.AEQ_DEPTH, DEFAULT_EQ_DEPTH);
    this.w64(Reg.AEQ_DB_HOST_ADDR, dbrec);
  }

  /** A queue's memory: fresh, or (`reuse`) the old buffer and doorbell record, cleared. */
  private queueMemory(
    size: number,
    reuse: false | { qbuf: bigint; dbrec: bigint },
  ): { qbuf: bigint; dbrec: bigint } {
    if (!reuse) return this.queueAlloc(size);
    const { qbuf, dbrec } = reuse;
    this.mem.buf.fill(0, Number(qbuf - this.mem.base), Number(qbuf - this.mem.base) + size);
    this.mem.setU64(dbrec, 0n);
    return { qbuf, dbrec };
  }

  /** A queue address register pair, high half first as the driver writes it. */
  private wAddr(hi: number, lo: number, addr: bigint): void {
    this.w32(hi, Number(addr >> 32n));
    this.w32(lo, Number(addr & 0xffffffffn));
  }

  /** erdma_cmdq_init's queue setup; `reuse` as for aeqInit */
  cmdqInit(reuse = false): void {
    this.sq.depth = CMDQ_MAX_OUTSTANDING * this.wqebbCnt;
    const sq = this.queueMemory(this.sq.depth * 32, reuse && this.sq);
    Object.assign(this.sq, { qbuf: sq.qbuf, dbrec: sq.dbrec, pi: 0, ci: 0 });
    this.wAddr(Reg.CMDQ_SQ_ADDR_H, Reg.CMDQ_SQ_ADDR_L, sq.qbuf);
    this.w32(Reg.CMDQ_DEPTH, this.sq.depth);
    this.w64(Reg.CMDQ_SQ_DB_HOST_ADDR, sq.dbrec);
    this.cq.depth = this.sq.depth;
    const cq = this.queueMemory(this.cq.depth * 32, reuse && this.cq);
    Object.assign(this.cq, { qbuf: cq.qbuf, dbrec: cq.dbrec, ci: 0, cmdsn: 0 });
    this.wAddr(Reg.CMDQ_CQ_ADDR_H, Reg.CMDQ_CQ_ADDR_L, cq.qbuf);
    this.w64(Reg.CMDQ_CQ_DB_HOST_ADDR, cq.dbrec);
    const eq = this.queueMemory(CMDQ_MAX_OUTSTANDING * 16, reuse && this.eq);
    this.eq = {
      eqn: 0,
      vector: 0,
      qbuf: eq.qbuf,
      depth: CMDQ_MAX_OUTSTANDING,
      ci: 0,
      dbrec: eq.dbrec,
      db: Reg.CEQ_DB_BASE,
      ready: true,
      events: 0,
    };
    this.wAddr(Reg.CMDQ_EQ_ADDR_H, Reg.CMDQ_EQ_ADDR_L, eq.qbuf);
    this.w32(Reg.CMDQ_EQ_DEPTH, CMDQ_MAX_OUTSTANDING);
    this.w64(Reg.CMDQ_EQ_DB_HOST_ADDR, eq.dbrec);
  }

  /** erdma_wait_hw_init_done: write INIT, poll DEV_ST.INIT_DONE (500 x 20 ms in the kernel). */
  async waitInitDone(polls = 500): Promise<void> {
    this.w32(Reg.DEV_CTRL, 0x2);
    for (let i = 0; i < polls; i++) {
      if (this.r32(Reg.DEV_ST) & 0x2) return;
      await this.dev.idle();
    }
    throw new Error("ETIMEDOUT: wait init done failed");
  }

  async ceqInitOne(i: number): Promise<CmdOutcome> {
    const { qbuf, dbrec } = this.queueAlloc(DEFAULT_EQ_DEPTH * 16);
    const eqn = i + 1;
    const eq: EqState = {
      eqn,
      vector: eqn,
      qbuf,
      depth: DEFAULT_EQ_DEPTH,
      ci: 0,
      dbrec,
      db: Reg.CEQ_DB_BASE + eqn * 8,
      ready: true,
      events: 0,
    };
    this.ceqs[i] = eq;
    const out = await this.post(
      R.createEq({ eqn, vector: eqn, depthLog: ilog2(DEFAULT_EQ_DEPTH), qbuf, dbrec }),
      {
        sleepable: false,
      },
    );
    if (out.status !== 0) eq.ready = false;
    return out;
  }

  async devAttrsInit(): Promise<void> {
    const q = await this.post(R.queryDevice());
    if (q.status !== 0) throw new Error(`QUERY_DEVICE failed: ${q.status}`);
    const c0 = q.resp0;
    const c1 = q.resp1;
    const g = (v: bigint, hi: number, lo: number) =>
      Number((v >> BigInt(lo)) & ((1n << BigInt(hi - lo + 1)) - 1n));
    const maxQp = 1024 * g(c1, 27, 16);
    this.attrs = {
      maxCqe: 2 ** g(c0, 47, 40),
      maxMrSize: 1n << BigInt(g(c0, 7, 0)),
      maxMw: 2 ** g(c1, 7, 0),
      maxRecvWr: 2 ** g(c0, 23, 16),
      localDmaKey: g(c1, 63, 32),
      cc: g(c1, 31, 28),
      maxQp,
      maxMr: maxQp * 2,
      maxCq: maxQp * 2,
      capFlags: g(c0, 31, 24),
      fwVersion: 0,
      maxGid: 2 ** g(c0, 51, 48),
      maxAh: 2 ** g(c0, 15, 8),
      mac: "",
    };
    const fw = await this.post(R.queryFwInfo());
    if (fw.status !== 0) throw new Error(`QUERY_FW_INFO failed: ${fw.status}`);
    this.attrs.fwVersion = Number(fw.resp0 & 0xffffffffn);
  }

  /** erdma_remove_dev: destroy CEQs, reset the hardware (6.1 resets in erdma_device_uninit). */
  async remove(): Promise<void> {
    for (const eq of this.ceqs) {
      if (!eq.ready) continue;
      eq.ready = false;
      await this.post(R.destroyEq({ eqn: eq.eqn, vector: eq.vector }), { sleepable: false });
    }
    this.w32(Reg.DEV_CTRL, 0x1);
    this.cmdqOk = false;
  }

  // ---- command queue (erdma_cmdq.c) --------------------------------------------------------

  private armCmdqCq(): void {
    const c = this.cq;
    const db =
      BigInt(c.ci & 0xffffff) | (1n << 31n) | (BigInt(c.cmdsn & 3) << 28n) | (BigInt(c.cmdsn & 0xff) << 56n);
    this.mem.setU64(c.dbrec, db);
    this.w64(Reg.CMDQ_CQDB, db);
    c.armed++;
  }

  private getCompWait(): number {
    const idx = this.waitPool.findIndex((w) => w.status === "init");
    if (idx < 0) throw new Error("no free comp_wait");
    return idx;
  }

  /** push_cmdq_sqe + kick_cmdq_db (erdma_cmdq.c:260-282, :23-30). */
  pushSqe(req: Uint8Array, ctx: number, overrides: SqeOverrides = {}): number {
    const sqePi = this.sq.pi;
    const wqe = this.sq.qbuf + BigInt(((sqePi & (this.sq.depth - 1)) >>> 0) * 32);
    this.mem.setBytes(wqe, req);
    this.sq.pi = (this.sq.pi + (overrides.advance ?? this.wqebbCnt)) & 0xffff;
    const hdr0 = new DataView(req.buffer, req.byteOffset, 8).getBigUint64(0, true);
    const cnt = overrides.wqebbCnt ?? this.wqebbCnt;
    const hdr =
      hdr0 |
      BigInt(overrides.index ?? this.sq.pi) |
      (BigInt(ctx & 0xffff) << 32n) |
      (BigInt((cnt - 1) & 7) << 52n);
    this.mem.setU64(wqe, hdr);
    this.mem.setU64(this.sq.dbrec, BigInt(this.sq.pi));
    this.w64(Reg.CMDQ_SQDB, BigInt(this.sq.pi));
    return sqePi;
  }

  /** erdma_post_cmd_wait. 7.2 polls when !sleepable; 6.x polls until use_event. */
  async post(req: Uint8Array, opts: { sleepable?: boolean } & SqeOverrides = {}): Promise<CmdOutcome> {
    if (!this.cmdqOk) throw new Error("ENODEV: cmdq not ok");
    if (req.length > this.sqeSize)
      throw new Error(`request of ${req.length} bytes > ${this.sqeSize}-byte SQE`);
    const ctx = this.getCompWait();
    const w = this.waitPool[ctx] as CompWait;
    w.status = "issued";
    this.pushSqe(req, ctx, opts);
    const eventMode = this.version === "7.2" ? opts.sleepable !== false : this.useEvent;
    const done = eventMode ? await this.waitEvent(w) : await this.waitPoll(w);
    if (!done) {
      this.cmdqOk = false;
      throw new CmdTimeout(`opcode ${req[2]}`);
    }
    const out = {
      status: w.syndrome,
      resp0: BigInt(w.data[0]) | (BigInt(w.data[1]) << 32n),
      resp1: BigInt(w.data[2]) | (BigInt(w.data[3]) << 32n),
    };
    w.status = "init";
    return out;
  }

  private async waitPoll(w: CompWait): Promise<boolean> {
    for (let i = 0; i < 50; i++) {
      await this.dev.idle();
      this.pollingCmdCompletions();
      if (w.status !== "issued") return true;
    }
    return false;
  }

  private async waitEvent(w: CompWait): Promise<boolean> {
    for (let i = 0; i < 50; i++) {
      await this.settle();
      if (w.status !== "issued") return true;
    }
    return false;
  }

  /** Runs deferred device work and the handlers of every interrupt it raised, until quiet. */
  async settle(): Promise<void> {
    for (let i = 0; i < 10000; i++) {
      await this.dev.idle();
      const v = this.host.pendingIrqs.shift();
      if (v === undefined) return;
      this.irqCount++;
      if (v === 0) this.commIrqHandler();
      else this.ceqHandler(v);
    }
    throw new Error("interrupt storm");
  }

  /** erdma_comm_irq_handler: CMDQ completions, then the AEQ (erdma_main.c:123-131). */
  commIrqHandler(): void {
    this.cmdqCompletionHandler();
    this.aeqHandler();
  }

  private cmdqCompletionHandler(): void {
    if (!this.cmdqOk) return;
    if (this.version !== "7.2" && !this.useEvent) return;
    let got = 0;
    while (this.validEqe(this.eq)) {
      this.eq.ci = (this.eq.ci + 1) & 0xffff;
      this.eq.events++;
      got++;
    }
    if (got) {
      this.cq.cmdsn++;
      this.pollingCmdCompletions();
      if (this.version === "7.2") this.armCmdqCq();
    }
    this.notifyEq(this.eq);
  }

  pollingCmdCompletions(): number {
    let n = 0;
    for (; n < CMDQ_MAX_OUTSTANDING; n++) if (!this.pollSingleCmdCompletion()) break;
    if (n && this.version !== "7.2" && this.useEvent) this.armCmdqCq();
    return n;
  }

  private pollSingleCmdCompletion(): boolean {
    const c = this.cq;
    const cqe = c.qbuf + BigInt(((c.ci & (c.depth - 1)) >>> 0) * 32);
    const hdr0 = this.mem.be32(cqe);
    const owner = hdr0 >>> 31;
    if ((owner ^ (c.ci & c.depth ? 1 : 0)) === 0) return false;
    c.ci = (c.ci + 1) >>> 0;
    const sqeIdx = this.mem.be32(cqe + 4n);
    const sqe = this.sq.qbuf + BigInt(((sqeIdx & (this.sq.depth - 1)) >>> 0) * 32);
    const ctx = Number((this.mem.u64(sqe) >> 32n) & 0xffffn);
    const w = this.waitPool[ctx];
    if (w?.status !== "issued") return false; // -EIO
    w.status = "finished";
    w.syndrome = hdr0 & 0xff;
    this.sq.ci = (this.sq.ci + this.wqebbCnt) & 0xffff;
    w.data = [
      this.mem.be32(cqe + 8n),
      this.mem.be32(cqe + 12n),
      this.mem.be32(cqe + 16n),
      this.mem.be32(cqe + 20n),
    ];
    return true;
  }

  // ---- event queues (erdma_eq.c) ----------------------------------------------------------

  private validEqe(eq: EqState): boolean {
    const e = this.mem.u64(eq.qbuf + BigInt(((eq.ci & (eq.depth - 1)) >>> 0) * 16));
    const owner = Number((e >> 31n) & 1n);
    return (owner ^ (eq.ci & eq.depth ? 1 : 0)) !== 0;
  }

  notifyEq(eq: EqState): void {
    const db = BigInt(eq.ci & 0xffffff) | (1n << 31n);
    this.mem.setU64(eq.dbrec, db);
    this.w64(eq.db, db);
  }

  aeqHandler(): void {
    for (let n = 0; n < MAX_POLL_CHUNK && this.validEqe(this.aeq); n++) {
      const at = this.aeq.qbuf + BigInt(((this.aeq.ci & (this.aeq.depth - 1)) >>> 0) * 16);
      this.aeq.ci = (this.aeq.ci + 1) & 0xffff;
      this.aeq.events++;
      const hdr = this.mem.u32(at);
      this.aeqEvents.push({
        type: (hdr >>> 16) & 0xff,
        subtype: hdr & 0xff,
        data0: this.mem.u32(at + 4n),
        data1: this.mem.u32(at + 8n),
      });
    }
    this.notifyEq(this.aeq);
  }

  /** erdma_ceq_completion_handler (erdma_eq.c:139-172), vector = eqn. */
  ceqHandler(vector: number): void {
    const eq = this.ceqs[vector - 1];
    if (!eq?.ready) return;
    for (let n = 0; n < MAX_POLL_CHUNK && this.validEqe(eq); n++) {
      const at = eq.qbuf + BigInt(((eq.ci & (eq.depth - 1)) >>> 0) * 16);
      eq.ci = (eq.ci + 1) & 0xffff;
      eq.events++;
      const cqn = Number(this.mem.u64(at) & 0xfffffn);
      const cq = this.cqs.get(cqn);
      if (!cq) continue;
      cq.cmdsn++;
      cq.events++;
    }
    this.notifyEq(eq);
  }

  // ---- CQs (erdma_verbs.c erdma_create_cq, erdma_cq.c) ------------------------------------

  async createCq(cqe: number, compVector = 0): Promise<{ out: CmdOutcome; cq: KernelCq }> {
    const depth = roundupPow2(cqe);
    const cqn = this.allocCqn();
    const { qbuf, dbrec } = this.queueAlloc(depth * 32);
    const cq: KernelCq = {
      cqn,
      depth,
      qbuf,
      dbrec,
      eqn: compVector + 1,
      ci: 0,
      cmdsn: 0,
      notifyCnt: 0,
      events: 0,
    };
    const out = await this.post(
      R.createCq(R.inlineCqArgs({ cqn, depthLog: ilog2(depth), eqn: cq.eqn, pageShift: 25, qbuf, dbrec })),
    );
    if (out.status === 0) this.cqs.set(cqn, cq);
    return { out, cq };
  }

  private allocCqn(): number {
    return this.allocCyclic("nextCqn", this.cqs, (this.attrs?.maxCq ?? 2048) - 1, "CQN");
  }

  /** The next number of 1..max not in `used`, from this[cursor] on, wrapping (xa_alloc_cyclic). */
  private allocCyclic(cursor: "nextCqn" | "nextQpn", used: Map<number, unknown>, max: number, what: string) {
    for (let i = 0; i < max; i++) {
      const n = this[cursor];
      this[cursor] = n >= max ? 1 : n + 1;
      if (!used.has(n)) return n;
    }
    throw new Error(`no ${what}`);
  }

  async destroyCq(cq: KernelCq): Promise<CmdOutcome> {
    const out = await this.post(R.destroyCq(cq.cqn));
    if (out.status === 0 || this.version === "7.2") this.cqs.delete(cq.cqn);
    return out;
  }

  /** erdma_req_notify_cq / notify_cq (erdma_cq.c:343-375) */
  notifyCq(cq: KernelCq, solicited = false): void {
    const db =
      (BigInt(cq.notifyCnt & 0xff) << 56n) |
      (BigInt(cq.cqn & 0xffffff) << 32n) |
      (1n << 31n) |
      (BigInt(solicited ? 1 : 0) << 30n) |
      (BigInt(cq.cmdsn & 3) << 28n) |
      BigInt(cq.ci & 0xffffff);
    this.mem.setU64(cq.dbrec, db);
    this.w64(CQDB_SPACE_OFFSET, db);
    cq.notifyCnt++;
  }

  /** get_next_valid_cqe + erdma_poll_one_cqe's field reads */
  pollCq(cq: KernelCq, max = 64): Cqe[] {
    const out: Cqe[] = [];
    while (out.length < max) {
      const at = cq.qbuf + BigInt(((cq.ci & (cq.depth - 1)) >>> 0) * 32);
      const hdr = this.mem.be32(at);
      const owner = hdr >>> 31;
      if ((owner ^ (cq.ci & cq.depth ? 1 : 0)) === 0) break;
      cq.ci = (cq.ci + 1) >>> 0;
      out.push({
        owner,
        opcode: (hdr >>> 16) & 0xff,
        qtype: (hdr >>> 8) & 0xff,
        syndrome: hdr & 0xff,
        qeIdx: this.mem.be32(at + 4n),
        qpn: this.mem.be32(at + 8n),
        size: this.mem.be32(at + 16n),
      });
    }
    return out;
  }

  // ---- QPs (erdma_verbs.c erdma_create_qp, erdma_qp.c) -------------------------------------

  async createQp(a: { scq: KernelCq; rcq: KernelCq; maxSendWr: number; maxRecvWr: number; pd?: number }) {
    const qpn = this.allocQpn();
    const sqSize = roundupPow2(a.maxSendWr * 4);
    const rqSize = roundupPow2(a.maxRecvWr);
    const sq = this.queueAlloc(sqSize * 32);
    const rq = this.queueAlloc(rqSize * 32);
    const pd = a.pd ?? this.allocPd();
    const req = R.createQp(this.version, {
      qpn,
      pd,
      sqDepthLog: ilog2(sqSize),
      rqDepthLog: ilog2(rqSize),
      sq: R.inlineQueueMtt(sq.qbuf, a.scq.cqn, sq.dbrec),
      rq: R.inlineQueueMtt(rq.qbuf, a.rcq.cqn, rq.dbrec),
      type: 0,
    });
    const out = await this.post(req);
    const qp: KernelQp = {
      qpn,
      pd,
      sqSize,
      rqSize,
      sqBuf: sq.qbuf,
      rqBuf: rq.qbuf,
      sqDbrec: sq.dbrec,
      rqDbrec: rq.dbrec,
      sqPi: 0,
      rqPi: 0,
      scq: a.scq,
      rcq: a.rcq,
      state: QpState.IDLE,
      cookie: Number(out.resp0 & 0xffffffffn),
      flushing: false,
    };
    if (out.status === 0) this.qps.set(qpn, qp);
    return { out, qp };
  }

  private allocQpn(): number {
    return this.allocCyclic("nextQpn", this.qps, (this.attrs?.maxQp ?? 1024) - 1, "QPN");
  }

  allocPd(): number {
    return this.nextPd++;
  }

  /**
   * erdma_modify_qp_internal (erdma_qp.c:120-187; 7.2 erdma_modify_qp_state_iwarp): which
   * commands each driver version sends for a requested state, and the driver-side state after.
   * Returns the outcomes of the commands sent (MODIFY_QP and, 6.2+, the flush worker's REFLUSH).
   */
  async modifyQp(
    qp: KernelQp,
    to: number,
    rts?: R.RtsArgs,
    opts: { reflush?: boolean } = {},
  ): Promise<CmdOutcome[]> {
    const sent: CmdOutcome[] = [];
    const v72 = this.version === "7.2";
    const stop = async (state: number) => {
      if (!v72) qp.state = state;
      const o = await this.post(R.modifyQp(qp.qpn, state));
      sent.push(o);
      if (v72 && o.status === 0) qp.state = state;
      return o.status;
    };
    let needReflush = false;
    let ret = 0;
    switch (qp.state) {
      case QpState.IDLE:
      case QpState.RTR:
        if (to === QpState.RTS) {
          if (!rts) throw new Error("RTS needs the connection tuple");
          if (!v72) qp.state = QpState.RTS;
          const o = await this.post(R.modifyQp(qp.qpn, QpState.RTS, rts));
          sent.push(o);
          if (v72 && o.status === 0) qp.state = QpState.RTS;
          ret = o.status;
        } else if (to === QpState.ERROR) {
          qp.state = QpState.ERROR;
          needReflush = true;
          ret = await stop(QpState.ERROR);
        }
        break;
      case QpState.RTS:
        if (this.version === "6.1") {
          if (to === QpState.CLOSING) ret = await stop(to);
          else if (to === QpState.TERMINATE) {
            qp.state = QpState.TERMINATE;
            ret = await stop(to);
          } else if (to === QpState.ERROR) {
            ret = await stop(to);
            qp.state = QpState.ERROR;
          }
        } else if (to === QpState.CLOSING || to === QpState.TERMINATE || to === QpState.ERROR) {
          ret = await stop(to);
          needReflush = true;
        }
        break;
      case QpState.TERMINATE:
        if (to === QpState.ERROR) qp.state = QpState.ERROR;
        break;
      case QpState.CLOSING:
        if (to === QpState.IDLE) qp.state = QpState.IDLE;
        else if (to === QpState.ERROR) {
          ret = await stop(QpState.ERROR);
          qp.state = QpState.ERROR;
        } else if (to !== QpState.CLOSING) return sent; // -ECONNABORTED
        break;
      default:
        break;
    }
    if (this.version !== "6.1" && needReflush && ret === 0) {
      qp.flushing = true;
      if (opts.reflush !== false) sent.push(await this.flushWorker(qp));
    }
    return sent;
  }

  /** erdma_flush_worker (erdma_verbs.c:429-442) */
  async flushWorker(qp: KernelQp): Promise<CmdOutcome> {
    return this.post(R.reflush({ qpn: qp.qpn, sqPi: qp.sqPi, rqPi: qp.rqPi }));
  }

  /** erdma_destroy_qp: move to ERROR (the queued REFLUSH is cancelled), then DESTROY_QP. */
  async destroyQp(qp: KernelQp): Promise<CmdOutcome> {
    await this.modifyQp(qp, QpState.ERROR, undefined, { reflush: false });
    const out = await this.post(R.destroyQp(qp.qpn));
    if (out.status === 0 || this.version === "7.2") this.qps.delete(qp.qpn);
    return out;
  }

  /** erdma_post_recv_one (erdma_qp.c:540-568): RQE, doorbell record, RQ doorbell. */
  postRecv(qp: KernelQp, sge?: { addr: bigint; length: number; lkey: number }): void {
    const at = qp.rqBuf + BigInt(((qp.rqPi & (qp.rqSize - 1)) >>> 0) * 32);
    const rqe = new R.ReqBuf(32, 0)
      .u16(0, (qp.rqPi + 1) & 0xffff)
      .u32(4, qp.qpn)
      .u64(16, sge?.addr ?? 0n)
      .u32(24, sge?.length ?? 0)
      .u32(28, sge?.lkey ?? 0).bytes;
    this.mem.setBytes(at, rqe);
    const db = new DataView(rqe.buffer).getBigUint64(0, true);
    this.mem.setU64(qp.rqDbrec, db);
    this.w64(RQDB_SPACE_OFFSET, db);
    qp.rqPi = (qp.rqPi + 1) & 0xffff;
  }

  /** A minimal SQE (header only, `wqebbs` long) and kick_sq_db (erdma_qp.c:485-497). */
  postSendRaw(qp: KernelQp, wqebbs = 1, opcode = 2): void {
    const at = qp.sqBuf + BigInt(((qp.sqPi & (qp.sqSize - 1)) >>> 0) * 32);
    qp.sqPi = (qp.sqPi + wqebbs) & 0xffff;
    const hdr =
      (BigInt(wqebbs - 1) << 52n) |
      (BigInt(qp.qpn) << 32n) |
      (BigInt(opcode) << 27n) |
      (1n << 22n) |
      BigInt(qp.sqPi);
    this.mem.setU64(at, hdr);
    const db = (BigInt(qp.qpn) << 32n) | BigInt(qp.sqPi);
    this.mem.setU64(qp.sqDbrec, db);
    this.w64(SQDB_SHARED_PAGE, db);
  }

  // ---- the data path (erdma_qp.c erdma_post_send / erdma_post_recv, erdma_cq.c poll) --------

  private tables(qp: KernelQp): KqpTables {
    let t = this.kqp.get(qp);
    if (!t) {
      t = { swr: new Array(qp.sqSize), rwr: new Array(qp.rqSize), sqCi: 0, sigAll: false };
      this.kqp.set(qp, t);
    }
    return t;
  }

  /** IB_SIGNAL_ALL_WR at create time (init_kernel_qp, erdma_verbs.c:508-509) */
  setSigAll(qp: KernelQp, on = true): void {
    this.tables(qp).sigAll = on;
  }

  /** the driver's sq_ci, as erdma_poll_one_cqe last moved it (erdma_cq.c:148-150) */
  sqCi(qp: KernelQp): number {
    return this.tables(qp).sqCi;
  }

  /**
   * erdma_post_send (erdma_qp.c:499-538): each WR pushed by erdma_push_one_sqe, the doorbell
   * record and the SQ doorbell kicked after each (kick_sq_db, :490-497). Stops at the first WR
   * that fails, like the kernel (`bad` is its position). `patch` may corrupt an SQE before its
   * header is written (malformed-SQE tests), returning a replacement header.
   */
  postSend(
    qp: KernelQp,
    wrs: SendWr | SendWr[],
    opts: {
      patch?: (sqe: {
        pi: number;
        put: (offset: number, bytes: Uint8Array) => void;
        hdr: bigint;
      }) => bigint | undefined;
    } = {},
  ): { ret: 0 | "ENOMEM" | "EINVAL" | "EOPNOTSUPP"; bad?: number; indices: number[] } {
    const t = this.tables(qp);
    const list = Array.isArray(wrs) ? wrs : [wrs];
    const put: WqebbWriter = (index, offset, bytes) => {
      this.mem.setBytes(qp.sqBuf + BigInt(((index & (qp.sqSize - 1)) >>> 0) * 32 + offset), bytes);
    };
    const indices: number[] = [];
    for (const [i, wr] of list.entries()) {
      if (((qp.sqPi - t.sqCi) & 0xffff) >= qp.sqSize) return { ret: "ENOMEM", bad: 0, indices };
      const pi = qp.sqPi;
      const r = pushOneSqe(put, qp.qpn, pi, wr, { sigAll: t.sigAll });
      if (!r.ok) return { ret: r.errno, bad: i, indices };
      t.swr[pi & (qp.sqSize - 1)] = wr.wrId;
      let hdr = r.hdr;
      if (opts.patch) {
        const linear = (offset: number, bytes: Uint8Array) => {
          for (let k = 0; k < bytes.length; k++) {
            const o = offset + k;
            put(pi + Math.floor(o / 32), o % 32, bytes.subarray(k, k + 1));
          }
        };
        hdr = opts.patch({ pi, put: linear, hdr }) ?? hdr;
      }
      this.mem.setU64(qp.sqBuf + BigInt(((pi & (qp.sqSize - 1)) >>> 0) * 32), hdr);
      qp.sqPi = r.nextPi;
      indices.push(pi);
      const db = sqDoorbell(qp.qpn, qp.sqPi);
      this.mem.setU64(qp.sqDbrec, db);
      this.w64(SQDB_SHARED_PAGE, db);
    }
    return { ret: 0, indices };
  }

  /** erdma_post_recv_one (erdma_qp.c:540-568) with the wr_id kept in rwr_tbl. */
  postRecvWr(qp: KernelQp, wr: { wrId?: bigint; sge?: Sge } = {}): number {
    const index = qp.rqPi;
    this.tables(qp).rwr[index & (qp.rqSize - 1)] = wr.wrId;
    this.postRecv(qp, wr.sge);
    return index;
  }

  /**
   * IB_WR_REG_MR's preparation: ib_map_mr_sg stores the page list in the FRMR's MTT buffer
   * (erdma_set_page, erdma_verbs.c:1132-1143); the work request then carries it.
   */
  fastRegWr(
    mr: Mr,
    a: { key: number; iova: bigint; length: number; access: number; pages: bigint[] } & Omit<
      Extract<SendWr, { opcode: "REG_MR" }>,
      "opcode" | "key" | "iova" | "length" | "access" | "pages"
    >,
  ): SendWr {
    if (mr.table === undefined) throw new Error("not an FRMR");
    a.pages.forEach((p, i) => {
      this.mem.setU64((mr.table as bigint) + BigInt(i * 8), p);
    });
    return { ...a, opcode: "REG_MR" };
  }

  /** erdma_poll_cq / erdma_poll_one_cqe (erdma_cq.c:110-200): CQEs of unknown QPs are skipped. */
  pollWc(cq: KernelCq, max = 64): Wc[] {
    const out: Wc[] = [];
    while (out.length < max) {
      const cqIndex = cq.ci;
      const at = cq.qbuf + BigInt(((cq.ci & (cq.depth - 1)) >>> 0) * 32);
      const raw = this.mem.bytes(at, 32);
      const c = decodeCqe(raw);
      if ((c.owner ^ (cq.ci & cq.depth ? 1 : 0)) === 0) break;
      cq.ci = (cq.ci + 1) >>> 0;
      const qp = this.qps.get(c.qpn);
      if (!qp) continue;
      const t = this.tables(qp);
      let wrId: bigint | undefined;
      if (c.qtype === 0) {
        const hdr = this.mem.u64(qp.sqBuf + BigInt(((c.qeIdx & (qp.sqSize - 1)) >>> 0) * 32));
        t.sqCi = (getField(hdr, Hdr.WQEBB_CNT) + c.qeIdx + 1) & 0xffff;
        wrId = t.swr[c.qeIdx & (qp.sqSize - 1)];
      } else wrId = t.rwr[c.qeIdx & (qp.rqSize - 1)];
      out.push({ ...c, wrId, cqIndex });
    }
    return out;
  }

  // ---- MRs (erdma_verbs.c) -----------------------------------------------------------------

  private allocStag(): number {
    return (this.nextStag++ << 8) >>> 0;
  }

  /** erdma_get_dma_mr: type DMA, valid 0 (kzalloc'ed mr), access LR | requested */
  async getDmaMr(pd: number, access = Acc.LW | Acc.RR | Acc.RW): Promise<{ out: CmdOutcome; mr: Mr }> {
    const stag = this.allocStag();
    const out = await this.post(
      R.regMr({
        stag,
        pd,
        type: 2,
        access: Acc.LR | access,
        valid: false,
        pageShift: 0x1f,
        level: 3,
        count: 0xfffff,
      }),
    );
    return { out, mr: { stag, type: 2, pd } };
  }

  /** erdma_ib_alloc_mr: FRMR with a continuous level-1 MTT of max_num_sg entries */
  async allocFrmr(pd: number, maxNumSg: number): Promise<{ out: CmdOutcome; mr: Mr }> {
    const stag = this.allocStag();
    const table = this.mem.alloc(maxNumSg * 8, 64);
    const out = await this.post(
      R.regMr({
        stag,
        pd,
        type: 1,
        access: Acc.LR | Acc.LW | Acc.RR | Acc.RW,
        valid: false,
        pageShift: 12,
        level: 1,
        count: maxNumSg,
        phys: [table],
      }),
    );
    return { out, mr: { stag, type: 1, pd, table } };
  }

  /**
   * erdma_reg_user_mr: up to 4 pages inline; else a continuous table (no MTT_VA) or a scattered
   * table of 4 KiB pages with up to 3 levels (erdma_create_mtt). Table pages are allocated apart
   * so a model that assumed contiguity would read the wrong entries.
   */
  async regUserMr(a: {
    pd: number;
    va: bigint;
    length: bigint;
    pages: bigint[];
    pageShift: number;
    access?: number;
  }) {
    const stag = this.allocStag();
    const count = a.pages.length;
    const access = Acc.LR | (a.access ?? Acc.LW);
    let level = 0;
    let phys: bigint[] = a.pages;
    let version1: { mttPageField: number } | undefined;
    if (count > 4) {
      const mttVa = ((this.attrs?.capFlags ?? 0) & (1 << 5)) !== 0 && this.version !== "6.1";
      if (!mttVa) {
        const table = this.mem.alloc(count * 8, 64);
        a.pages.forEach((p, i) => {
          this.mem.setU64(table + BigInt(i * 8), p);
        });
        level = 1;
        phys = [table];
      } else {
        let entries = a.pages;
        level = 0;
        do {
          const tablePages: bigint[] = [];
          for (let i = 0; i < entries.length; i += 512) {
            const page = this.mem.alloc(4096);
            this.mem.alloc(4096); // a gap: table pages are not contiguous
            entries.slice(i, i + 512).forEach((e, j) => {
              this.mem.setU64(page + BigInt(j * 8), e);
            });
            tablePages.push(page);
          }
          entries = tablePages;
          level++;
        } while (entries.length > 1 && level <= 3);
        phys = entries;
        if (level > 1) version1 = { mttPageField: 0 };
      }
    }
    const out = await this.post(
      R.regMr({
        stag,
        pd: a.pd,
        type: 0,
        access,
        valid: true,
        pageShift: a.pageShift,
        level,
        count,
        va: a.va,
        size: a.length,
        phys,
        ...(version1 ? { version1 } : {}),
      }),
    );
    return { out, mr: { stag, type: 0 as const, pd: a.pd }, level };
  }

  async deregMr(mr: Mr): Promise<CmdOutcome> {
    return this.post(R.deregMr(mr.stag));
  }

  // ---- device commands ---------------------------------------------------------------------

  /** erdma_set_mtu (erdma_verbs.c:1734-1743) */
  async setMtu(mtu: number): Promise<CmdOutcome> {
    return this.post(R.confMtu(mtu));
  }

  /** erdma_query_hw_stats: a 256-byte response buffer from the resp pool */
  async getStats(): Promise<{ out: CmdOutcome; magic: number; counters: bigint[] }> {
    const buf = this.mem.alloc(256, 256);
    const out = await this.post(R.getStats({ target: buf, length: 256 }));
    const magic = this.mem.buf.readUInt16LE(Number(buf - this.mem.base));
    const counters: bigint[] = [];
    for (let i = 0; i < 11; i++) counters.push(this.mem.u64(buf + 16n + BigInt(i * 8)));
    return { out, magic, counters };
  }

  async allocDb(): Promise<{ out: CmdOutcome; sdb: number; rdb: number; cdb: number }> {
    const out = await this.post(R.allocDb());
    const v = out.resp0;
    return {
      out,
      sdb: Number(v & 0xffffn),
      cdb: Number((v >> 32n) & 0xffffn),
      rdb: Number((v >> 48n) & 0xffffn),
    };
  }

  async freeDb(a: { sdb: number; rdb: number; cdb: number }): Promise<CmdOutcome> {
    return this.post(R.freeDb(a));
  }
}

interface KqpTables {
  swr: Array<bigint | undefined>;
  rwr: Array<bigint | undefined>;
  sqCi: number;
  sigAll: boolean;
}

function emptyEq(): EqState {
  return { eqn: -1, vector: 0, qbuf: 0n, depth: 1, ci: 0, dbrec: 0n, db: 0, ready: false, events: 0 };
}

export function macString(mac: bigint): string {
  const parts: string[] = [];
  for (let i = 5; i >= 0; i--)
    parts.push(
      Number((mac >> BigInt(i * 8)) & 0xffn)
        .toString(16)
        .padStart(2, "0"),
    );
  return parts.join(":");
}

export interface SetupOptions {
  version?: DriverVersion;
  profile?: ErdmaProfile;
  mac?: string;
  cpus?: number;
  manual?: boolean;
  memSize?: number;
  probe?: boolean;
  trace?: "all" | "counts";
  /** the wire this device joins (two devices on one fabric reach each other's QPs) */
  fabric?: Fabric;
  /** names the device in the trace */
  name?: string;
  /** guest physical address of the fake memory */
  base?: bigint;
  /** the device's queue engine (default: the TypeScript one) */
  engine?: QueueEngine;
}

/** A fake host, a device on it and a driver double, probed unless `probe: false`. */
export async function setupErdma(opts: SetupOptions = {}) {
  const host = new FakeHost({
    manual: opts.manual ?? false,
    trace: opts.trace ?? "all",
    ...(opts.memSize ? { size: opts.memSize } : {}),
    ...(opts.base !== undefined ? { base: opts.base } : {}),
  });
  const dev = new ErdmaDevice({
    host,
    mac: opts.mac ?? "52:54:00:12:34:56",
    ...(opts.profile ? { profile: opts.profile } : {}),
    ...(opts.fabric ? { fabric: opts.fabric } : {}),
    ...(opts.name ? { name: opts.name } : {}),
    ...(opts.engine ? { engine: opts.engine } : {}),
  });
  const drv = new ErdmaDriver(dev, host, { version: opts.version ?? "6.12", cpus: opts.cpus ?? 2 });
  if (opts.probe !== false) await drv.probe();
  return { host, dev, drv };
}

/** One end of a connection: a driver double and one of its QPs. */
export interface QpEnd {
  drv: ErdmaDriver;
  qp: KernelQp;
}

/**
 * What erdma's CM does once the MPA exchange is over (erdma_modify_qp_state_to_rts,
 * erdma_qp.c:51-100): each side moves its QP to RTS with its own TCP tuple (sip/sport local,
 * dip/dport remote) and the cookie the peer sent in its MPA private data. The two tuples mirror
 * each other, which is how the model pairs the QPs.
 */
export async function connectQps(
  a: QpEnd,
  b: QpEnd,
  opts: { aIp?: number; bIp?: number; aPort?: number; bPort?: number } = {},
): Promise<void> {
  const aIp = opts.aIp ?? 0xc0a8_0001;
  const bIp = opts.bIp ?? (a.drv === b.drv ? aIp : 0xc0a8_0002);
  const aPort = opts.aPort ?? 40000 + a.qp.qpn;
  const bPort = opts.bPort ?? 4791;
  const rts = (self: QpEnd, peer: QpEnd, sip: number, dip: number, sport: number, dport: number) =>
    self.drv.modifyQp(self.qp, QpState.RTS, {
      cookie: peer.qp.cookie,
      sip,
      dip,
      sport,
      dport,
      sendNxt: 1000,
      recvNxt: 2000,
    });
  for (const [self, peer, sip, dip, sport, dport] of [
    [a, b, aIp, bIp, aPort, bPort],
    [b, a, bIp, aIp, bPort, aPort],
  ] as const) {
    const out = await rts(self, peer, sip, dip, sport, dport);
    if (out[0]?.status !== 0) throw new Error(`MODIFY_QP to RTS of QP ${self.qp.qpn}: ${out[0]?.status}`);
  }
}

/** Settles several driver doubles (devices that act on each other over a fabric) until all are quiet. */
export async function settleAll(...drvs: ErdmaDriver[]): Promise<void> {
  for (let round = 0; round < 1000; round++) {
    for (const d of drvs) await d.settle();
    const busy = drvs.some(
      (d) => d.host.pendingIrqs.length > 0 || (d.dev.snapshot().pendingJobs as number) > 0,
    );
    if (!busy) return;
  }
  throw new Error("devices never settled");
}
