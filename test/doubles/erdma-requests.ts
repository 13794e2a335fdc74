/**
 * CMDQ request builders laid out as the Linux erdma driver builds them (struct erdma_cmdq_*_req in
 * erdma_hw.h of 6.1, 6.12 and 7.2). Fields the driver leaves uninitialised (stack structs it does
 * not clear) are filled with a stale-looking pattern so the model is tested against them. Opcodes
 * come from qemu/erdma/hw.ts (hw.h:130-151); field offsets and bit positions are the driver's, as
 * read here, independent of the model's decoders.
 */
import { CommonOp, RdmaOp, SubMod } from "../../qemu/erdma/hw.ts";

export type DriverVersion = "6.1" | "6.12" | "7.2";

/** a byte pattern standing in for uninitialised stack memory */
export const STALE = 0xa5;

export class ReqBuf {
  readonly bytes: Uint8Array;
  private readonly dv: DataView;

  constructor(size: number, fill = 0) {
    this.bytes = new Uint8Array(size).fill(fill);
    this.dv = new DataView(this.bytes.buffer);
  }

  hdr(submod: number, opcode: number): this {
    // erdma_cmdq_build_reqhdr: SUB_MOD 25:24, OPCODE 23:16 (erdma_cmdq.c:399-403)
    return this.u64(0, (BigInt(submod & 3) << 24n) | (BigInt(opcode & 0xff) << 16n));
  }

  u8(off: number, v: number): this {
    this.dv.setUint8(off, v);
    return this;
  }

  u16(off: number, v: number): this {
    this.dv.setUint16(off, v, true);
    return this;
  }

  u32(off: number, v: number): this {
    this.dv.setUint32(off, v >>> 0, true);
    return this;
  }

  u64(off: number, v: bigint): this {
    this.dv.setBigUint64(off, BigInt.asUintN(64, v), true);
    return this;
  }

  be16(off: number, v: number): this {
    this.dv.setUint16(off, v, false);
    return this;
  }

  be32(off: number, v: number): this {
    this.dv.setUint32(off, v >>> 0, false);
    return this;
  }

  set(off: number, data: Uint8Array): this {
    this.bytes.set(data, off);
    return this;
  }
}

const f = (v: number, hi: number, lo: number) =>
  ((v & (hi - lo + 1 >= 32 ? 0xffffffff : (1 << (hi - lo + 1)) - 1)) << lo) >>> 0;

export function queryDevice(): Uint8Array {
  return new ReqBuf(8).hdr(SubMod.RDMA, RdmaOp.QUERY_DEVICE).bytes;
}

export function queryFwInfo(): Uint8Array {
  return new ReqBuf(8).hdr(SubMod.COMMON, CommonOp.QUERY_FW_INFO).bytes;
}

/** create_eq_cmd (erdma_eq.c:224-240) */
export function createEq(a: { eqn: number; vector: number; depthLog: number; qbuf: bigint; dbrec: bigint }) {
  return new ReqBuf(32, STALE)
    .hdr(SubMod.COMMON, CommonOp.CREATE_EQ)
    .u64(8, a.qbuf)
    .u8(16, a.vector)
    .u8(17, a.eqn)
    .u8(18, a.depthLog)
    .u8(19, 1)
    .u32(20, Number(a.dbrec & 0xffffffffn))
    .u32(24, Number(a.dbrec >> 32n)).bytes;
}

/** erdma_ceq_uninit_one (erdma_eq.c:266-286): rsvd fields stale */
export function destroyEq(a: { eqn: number; vector: number }) {
  return new ReqBuf(24, STALE)
    .hdr(SubMod.COMMON, CommonOp.DESTROY_EQ)
    .u8(16, a.vector)
    .u8(17, a.eqn)
    .u8(19, 1).bytes;
}

export function confMtu(mtu: number) {
  return new ReqBuf(16, STALE).hdr(SubMod.COMMON, CommonOp.CONF_MTU).u32(8, mtu).bytes;
}

/** erdma_device_config (erdma_main.c:431-445): zeroed struct */
export function confDevice(pageShift: number, enable = true) {
  return new ReqBuf(32)
    .hdr(SubMod.COMMON, CommonOp.CONF_DEVICE)
    .u32(8, f(pageShift, 4, 0) | (enable ? 0x8000_0000 : 0)).bytes;
}

/** erdma_query_hw_stats (erdma_verbs.c:1794-1828) */
export function getStats(a: { target: bigint; length: number; index?: number }) {
  return new ReqBuf(32, STALE)
    .hdr(SubMod.COMMON, CommonOp.GET_STATS)
    .u32(8, 0)
    .u32(12, a.index ?? 0)
    .u64(16, a.target)
    .u32(24, a.length).bytes;
}

/** alloc_db_resources / free_db_resources (erdma_verbs.c:1359-1427): zeroed structs */
export function allocDb(cfg = 7) {
  return new ReqBuf(32).hdr(SubMod.COMMON, CommonOp.ALLOC_DB).u32(8, cfg).bytes;
}

export function freeDb(a: { sdb: number; rdb: number; cdb: number }) {
  return new ReqBuf(32)
    .hdr(SubMod.COMMON, CommonOp.FREE_DB)
    .u32(8, 7)
    .u16(12, a.rdb)
    .u16(14, a.sdb)
    .u16(18, a.cdb).bytes;
}

export interface CreateCqArgs {
  cqn: number;
  depthLog: number;
  eqn: number;
  pageShift: number;
  qbuf: bigint;
  mttCount: number;
  level: 0 | 1;
  dbrec: bigint;
  firstPageOffset: number;
  cdb?: number;
}

/** A CQ whose buffer is one MTT entry given inline: level 0, no offset, 4 KiB pages unless `a` says. */
export function inlineCqArgs(
  a: Pick<CreateCqArgs, "cqn" | "depthLog" | "eqn" | "qbuf" | "dbrec"> & Partial<CreateCqArgs>,
): CreateCqArgs {
  return { pageShift: 12, mttCount: 1, level: 0, firstPageOffset: 0, ...a };
}

/** create_cq_cmd (erdma_verbs.c:184-244); 6.1 has no cfg2 (40 bytes either way, padded) */
export function createCq(a: CreateCqArgs) {
  const cfg0 = f(a.depthLog, 31, 24) | f(a.pageShift - 12, 23, 20) | f(a.cqn, 19, 0);
  const cfg1 =
    f(a.mttCount, 31, 16) | f(a.level, 15, 15) | f(a.cdb === undefined ? 0 : 1, 11, 11) | f(a.eqn, 9, 0);
  const r = new ReqBuf(40, STALE)
    .hdr(SubMod.RDMA, RdmaOp.CREATE_CQ)
    .u32(8, cfg0)
    .u32(12, Number(a.qbuf & 0xffffffffn))
    .u32(16, Number(a.qbuf >> 32n))
    .u32(20, cfg1)
    .u64(24, a.dbrec)
    .u32(32, a.firstPageOffset);
  if (a.cdb !== undefined) r.u32(36, f(a.cdb, 15, 0));
  return r.bytes;
}

export function destroyCq(cqn: number) {
  return new ReqBuf(16, STALE).hdr(SubMod.RDMA, RdmaOp.DESTROY_CQ).u32(8, cqn).bytes;
}

export interface QueueMtt {
  pageShift: number;
  level: 0 | 1;
  count: number;
  offset: number;
  /** level 0: page addresses (first one is *_buf_addr); level 1: [table address] */
  entries: bigint[];
  cqn: number;
  dbrec: bigint;
}

/** A queue whose buffer is one MTT entry given inline: level 0, 1 MiB page shift, no offset. */
export function inlineQueueMtt(buf: bigint, cqn: number, dbrec: bigint): QueueMtt {
  return { pageShift: 20, level: 0, count: 1, offset: 0, entries: [buf], cqn, dbrec };
}

export interface CreateQpArgs {
  qpn: number;
  pd: number;
  sqDepthLog: number;
  rqDepthLog: number;
  sq: QueueMtt;
  rq: QueueMtt;
  extDb?: { sdb: number; rdb: number };
  /** 7.2: cfg2 QP type (0 RC, 1 UD) */
  type?: number;
}

/** create_qp_cmd (erdma_verbs.c:39-129). Sizes: 64 bytes (6.1), 120 (6.12, 7.2). */
export function createQp(version: DriverVersion, a: CreateQpArgs) {
  const size = version === "6.1" ? 64 : 120;
  const r = new ReqBuf(size, STALE).hdr(SubMod.RDMA, RdmaOp.CREATE_QP);
  r.u32(8, f(a.sqDepthLog, 31, 20) | f(a.qpn, 19, 0));
  r.u32(12, f(a.rqDepthLog, 31, 20) | f(a.pd, 19, 0));
  const cqnCfg = (q: QueueMtt, db: boolean) =>
    f(q.pageShift - 12, 31, 28) | f(db ? 1 : 0, 25, 25) | f(q.cqn, 23, 0);
  r.u32(16, cqnCfg(a.sq, a.extDb !== undefined));
  r.u32(20, cqnCfg(a.rq, false));
  r.u64(24, a.sq.entries[0] ?? 0n);
  r.u64(32, a.rq.entries[0] ?? 0n);
  const mttCfg = (q: QueueMtt) => ((q.offset & 0xfffff000) | f(q.count, 11, 1) | f(q.level, 0, 0)) >>> 0;
  r.u32(40, mttCfg(a.sq));
  r.u32(44, mttCfg(a.rq));
  r.u64(48, a.sq.dbrec);
  r.u64(56, a.rq.dbrec);
  if (version !== "6.1") {
    if (a.sq.level === 0)
      a.sq.entries.slice(1, 4).forEach((e, i) => {
        r.u64(64 + i * 8, e);
      });
    if (a.rq.level === 0)
      a.rq.entries.slice(1, 4).forEach((e, i) => {
        r.u64(88 + i * 8, e);
      });
    if (a.extDb) r.u32(112, f(a.extDb.sdb, 31, 16) | f(a.extDb.rdb, 15, 0));
  }
  if (version === "7.2") r.u32(116, f(a.type ?? 0, 3, 0));
  return r.bytes;
}

export function destroyQp(qpn: number) {
  return new ReqBuf(16, STALE).hdr(SubMod.RDMA, RdmaOp.DESTROY_QP).u32(8, qpn).bytes;
}

export interface RtsArgs {
  cookie: number;
  sip: number;
  dip: number;
  sport: number;
  dport: number;
  sendNxt: number;
  recvNxt: number;
  cc?: number;
}

/** erdma_modify_qp_state_to_rts / _to_stop (erdma_qp.c:51-118); "stop" leaves the tuple stale */
export function modifyQp(qpn: number, state: number, rts?: RtsArgs) {
  const r = new ReqBuf(40, STALE).hdr(SubMod.RDMA, RdmaOp.MODIFY_QP);
  r.u32(8, f(state, 31, 24) | f(rts?.cc ?? 0, 23, 20) | f(qpn, 19, 0));
  if (rts) {
    r.u32(12, rts.cookie).be32(16, rts.dip).be32(20, rts.sip).be16(24, rts.sport).be16(26, rts.dport);
    r.u32(28, rts.sendNxt).u32(32, rts.recvNxt);
  }
  return r.bytes;
}

/** modify_qp_cmd_rocev2 (erdma_qp.c (7.2):215-250): zeroed */
export function modifyQpRocev2(a: {
  qpn: number;
  state: number;
  mask: number;
  dstQpn?: number;
  qkey?: number;
  sqPsn?: number;
  rqPsn?: number;
}) {
  return new ReqBuf(68)
    .hdr(SubMod.RDMA, RdmaOp.MODIFY_QP)
    .u32(8, f(a.state, 31, 24) | f(a.qpn, 19, 0))
    .u32(12, f(a.dstQpn ?? 0, 19, 0))
    .u32(16, a.mask)
    .u32(20, a.qkey ?? 0)
    .u32(24, a.rqPsn ?? 0)
    .u32(28, a.sqPsn ?? 0).bytes;
}

export function queryQp(qpn: number) {
  return new ReqBuf(16, STALE).hdr(SubMod.RDMA, RdmaOp.QUERY_QP).u32(8, qpn).bytes;
}

export function reflush(a: { qpn: number; sqPi: number; rqPi: number }) {
  return new ReqBuf(24, STALE).hdr(SubMod.RDMA, RdmaOp.REFLUSH).u32(8, a.qpn).u32(12, a.sqPi).u32(16, a.rqPi)
    .bytes;
}

export interface RegMrArgs {
  stag: number;
  pd: number;
  type: 0 | 1 | 2;
  /** REG_MR cfg1 rights bits 5:1 (6.12 ERDMA_MR_ACC_* values) */
  access: number;
  valid: boolean;
  pageShift: number;
  level: number;
  count: number;
  va?: bigint;
  size?: bigint;
  phys?: bigint[];
  version1?: { mttPageField: number };
}

/** regmr_cmd (erdma_verbs.c:131-182): the struct is not cleared, a DMA MR sends only cfg0..cfg2 */
export function regMr(a: RegMrArgs) {
  const r = new ReqBuf(64, STALE).hdr(SubMod.RDMA, RdmaOp.REG_MR);
  r.u32(
    8,
    f(a.valid ? 1 : 0, 31, 31) |
      f(a.version1 ? 1 : 0, 30, 28) |
      f(a.stag & 0xff, 27, 20) |
      f(a.stag >>> 8, 19, 0),
  );
  r.u32(12, f(a.pd, 31, 12) | f(a.type, 7, 6) | f(a.access, 5, 1));
  let cfg2 = f(a.pageShift, 31, 27) | f(a.level, 21, 20) | f(a.count, 19, 0);
  if (a.version1) cfg2 |= f(a.version1.mttPageField, 26, 24);
  r.u32(28, cfg2);
  if (a.type === 2) return r.bytes;
  (a.phys ?? []).slice(0, 4).forEach((p, i) => {
    r.u64(32 + i * 8, p);
  });
  if (a.type === 0) {
    r.u64(16, a.va ?? 0n);
    r.u32(24, Number((a.size ?? 0n) & 0xffffffffn));
  }
  if (a.version1) {
    r.u32(40, Number((a.size ?? 0n) >> 32n));
    r.u32(44, Math.floor(a.count / 2 ** 20));
  }
  return r.bytes;
}

export function deregMr(stag: number) {
  return new ReqBuf(16, STALE)
    .hdr(SubMod.RDMA, RdmaOp.DEREG_MR)
    .u32(8, f(stag >>> 8, 19, 0) | f(stag & 0xff, 27, 20)).bytes;
}

export function setGid(a: { index: number; del?: boolean; gid?: Uint8Array }) {
  const r = new ReqBuf(28)
    .hdr(SubMod.RDMA, RdmaOp.SET_GID)
    .u32(8, f(a.index, 15, 0) | (a.del ? 0x8000_0000 : 0));
  if (a.gid) r.set(12, a.gid);
  return r.bytes;
}

export function createAh(a: { pdn: number; ahn: number }) {
  return new ReqBuf(56).hdr(SubMod.RDMA, RdmaOp.CREATE_AH).u32(8, a.pdn).u32(12, a.ahn).u32(16, 0x12345)
    .bytes;
}

export function destroyAh(a: { pdn: number; ahn: number }) {
  return new ReqBuf(16).hdr(SubMod.RDMA, RdmaOp.DESTROY_AH).u32(8, a.pdn).u32(12, a.ahn).bytes;
}
