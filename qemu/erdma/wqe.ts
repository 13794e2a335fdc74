/**
 * Work queue elements as the driver writes them: SQEs of 1-4 32-byte WQEBBs (hw.h:459-525,
 * erdma_qp.c erdma_push_one_sqe) and 32-byte RQEs (hw.h:446-456, erdma_post_recv_one). Decoding is
 * pure: the bytes of one SQE come in ring order, so an SGL or inline data that runs past the first
 * WQEBB reads on linearly. A field the device cannot use is a format error, not an exception.
 */
import { get64n } from "./bits.ts";
import { MAX_INLINE, MAX_SEND_SGE, SQEBB_SIZE, SqeHdr, SqeMrAttr, WqeOp } from "./hw.ts";

export interface Sge {
  addr: bigint;
  length: number;
  key: number;
}

interface SqeCommon {
  /** hardware opcode (WqeOp) */
  opcode: number;
  qpn: number;
  wqebbs: number;
  /** the producer index just after this SQE, as the driver wrote it */
  nextIndex: number;
  signaled: boolean;
  solicited: boolean;
  fence: boolean;
}

/** SEND, SEND_WITH_IMM, SEND_WITH_INV, WRITE, WRITE_WITH_IMM: a payload from an SGL or inline. */
export interface PayloadSqe extends SqeCommon {
  kind: "send" | "write";
  /** SEND_WITH_IMM / WRITE_WITH_IMM: the immediate as the big-endian value of its 4 bytes */
  imm?: number;
  /** SEND_WITH_INV: the remote stag to invalidate */
  invalidate?: number;
  length: number;
  /** WRITE: the remote buffer */
  sink?: { stag: number; to: bigint };
  sgl: Sge[];
  inline?: Uint8Array;
}

/** READ / READ_WITH_INV: remote source (the SGE in WQEBB 1), local sink. */
export interface ReadSqe extends SqeCommon {
  kind: "read";
  length: number;
  sink: { stag: number; to: bigint };
  source: Sge;
  invalidate?: number;
}

/** Fast registration (IB_WR_REG_MR): MTT inline in WQEBB 1 or in the FRMR's own table. */
export interface RegMrSqe extends SqeCommon {
  kind: "reg-mr";
  addr: bigint;
  length: number;
  stag: number;
  /** MrRight bits */
  access: number;
  mttCount: number;
  /** inline page addresses (MTT type 0), else undefined: use the MR's table */
  inlineMtt?: bigint[];
}

export interface LocalInvSqe extends SqeCommon {
  kind: "local-inv";
  stag: number;
}

export interface AtomicSqe extends SqeCommon {
  kind: "atomic";
  swapOrAdd: bigint;
  compare: bigint;
  remote: Sge;
  local: Sge;
}

export type Sqe = PayloadSqe | ReadSqe | RegMrSqe | LocalInvSqe | AtomicSqe;

export type SqeDecode =
  | { ok: true; sqe: Sqe }
  | { ok: false; reason: string; opcode: number; wqebbs: number };

/** The header's WQEBB count (1..4), from the first 8 bytes. */
export function sqeWqebbs(hdr: bigint): number {
  return get64n(hdr, SqeHdr.WQEBB_CNT) + 1;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function sgeAt(dv: DataView, off: number): Sge {
  return {
    addr: dv.getBigUint64(off, true),
    length: dv.getUint32(off + 8, true),
    key: dv.getUint32(off + 12, true),
  };
}

/** Decodes one SQE from `bytes` (its WQEBBs in ring order, `wqebbs * 32` bytes). */
export function decodeSqe(bytes: Uint8Array): SqeDecode {
  const dv = view(bytes);
  const hdr = dv.getBigUint64(0, true);
  const opcode = get64n(hdr, SqeHdr.OPCODE);
  const wqebbs = sqeWqebbs(hdr);
  const bad = (reason: string): SqeDecode => ({ ok: false, reason, opcode, wqebbs });
  if (bytes.length < wqebbs * SQEBB_SIZE) return bad(`${bytes.length} bytes for ${wqebbs} WQEBBs`);
  const common: SqeCommon = {
    opcode,
    qpn: get64n(hdr, SqeHdr.QPN),
    wqebbs,
    nextIndex: get64n(hdr, SqeHdr.WQEBB_INDEX),
    signaled: get64n(hdr, SqeHdr.CE) === 1,
    solicited: get64n(hdr, SqeHdr.SE) === 1,
    fence: get64n(hdr, SqeHdr.FENCE) === 1,
  };
  const sglLen = get64n(hdr, SqeHdr.SGL_LEN);
  const isInline = get64n(hdr, SqeHdr.INLINE) === 1;
  const payload = (kind: "send" | "write", sglOffset: number, extra: Partial<PayloadSqe>): SqeDecode => {
    const length = dv.getUint32(12, true);
    if (isInline) {
      if (sglLen > MAX_INLINE || sglOffset + sglLen > bytes.length) return bad(`inline length ${sglLen}`);
      return {
        ok: true,
        sqe: {
          ...common,
          ...extra,
          kind,
          length: sglLen,
          sgl: [],
          inline: bytes.slice(sglOffset, sglOffset + sglLen),
        },
      };
    }
    if (sglLen > MAX_SEND_SGE || sglOffset + sglLen * 16 > bytes.length) return bad(`${sglLen} SGEs`);
    const sgl = Array.from({ length: sglLen }, (_, i) => sgeAt(dv, sglOffset + i * 16));
    const total = sgl.reduce((n, s) => n + s.length, 0);
    if (total !== length) return bad(`SGL holds ${total} bytes, length field says ${length}`);
    return { ok: true, sqe: { ...common, ...extra, kind, length, sgl } };
  };
  switch (opcode) {
    case WqeOp.SEND:
      return payload("send", 16, {});
    case WqeOp.SEND_WITH_IMM:
      return payload("send", 16, { imm: dv.getUint32(8, false) });
    case WqeOp.SEND_WITH_INV:
      return payload("send", 16, { invalidate: dv.getUint32(8, true) });
    case WqeOp.WRITE:
    case WqeOp.WRITE_WITH_IMM: {
      const sink = {
        stag: dv.getUint32(16, true),
        to: (BigInt(dv.getUint32(24, true)) << 32n) | BigInt(dv.getUint32(20, true)),
      };
      const imm = opcode === WqeOp.WRITE_WITH_IMM ? { imm: dv.getUint32(8, false) } : {};
      return payload("write", 32, { sink, ...imm });
    }
    case WqeOp.READ:
    case WqeOp.READ_WITH_INV: {
      if (wqebbs < 2) return bad("READ SQE without its source SGE");
      const sqe: ReadSqe = {
        ...common,
        kind: "read",
        length: dv.getUint32(12, true),
        sink: {
          stag: dv.getUint32(16, true),
          to: (BigInt(dv.getUint32(24, true)) << 32n) | BigInt(dv.getUint32(20, true)),
        },
        source: sgeAt(dv, 32),
      };
      if (opcode === WqeOp.READ_WITH_INV) sqe.invalidate = dv.getUint32(8, true);
      return { ok: true, sqe };
    }
    case WqeOp.REG_MR: {
      const attrs = dv.getUint32(24, true);
      const mttType = get64n(BigInt(attrs), SqeMrAttr.MTT_TYPE);
      const mttCount = get64n(BigInt(attrs), SqeMrAttr.MTT_CNT);
      const sqe: RegMrSqe = {
        ...common,
        kind: "reg-mr",
        addr: dv.getBigUint64(8, true),
        length: dv.getUint32(16, true),
        stag: dv.getUint32(20, true),
        access: get64n(BigInt(attrs), SqeMrAttr.ACCESS) << 1,
        mttCount,
      };
      if (mttType === 0) {
        if (mttCount > 4 || 32 + mttCount * 8 > bytes.length) return bad(`${mttCount} inline MTT entries`);
        sqe.inlineMtt = Array.from({ length: mttCount }, (_, i) => dv.getBigUint64(32 + i * 8, true));
      } else if (mttType !== 1) return bad(`MTT type ${mttType}`);
      return { ok: true, sqe };
    }
    case WqeOp.LOCAL_INV:
      return { ok: true, sqe: { ...common, kind: "local-inv", stag: dv.getUint32(20, true) } };
    case WqeOp.ATOMIC_CAS:
    case WqeOp.ATOMIC_FAA: {
      if (wqebbs < 2) return bad("atomic SQE without its SGEs");
      return {
        ok: true,
        sqe: {
          ...common,
          kind: "atomic",
          swapOrAdd: dv.getBigUint64(16, true),
          compare: dv.getBigUint64(24, true),
          remote: sgeAt(dv, 32),
          local: sgeAt(dv, 48),
        },
      };
    }
    default:
      return bad(`opcode ${opcode}`);
  }
}

/** struct erdma_rqe (hw.h:446-456): qe_idx, qpn, to, length, stag; one SGE at most. */
export interface Rqe {
  /** the producer index after this RQE (the driver writes rq_pi + 1) */
  nextIndex: number;
  qpn: number;
  to: bigint;
  length: number;
  stag: number;
}

export function decodeRqe(bytes: Uint8Array): Rqe {
  const dv = view(bytes);
  return {
    nextIndex: dv.getUint16(0, true),
    qpn: dv.getUint32(4, true),
    to: dv.getBigUint64(16, true),
    length: dv.getUint32(24, true),
    stag: dv.getUint32(28, true),
  };
}
