/**
 * Send queue elements as the Linux erdma driver writes them (erdma_push_one_sqe, erdma_qp.c:285-488,
 * with fill_inline_data :207-252 and fill_sgl :254-283; struct layouts erdma_hw.h:441-527), and the
 * driver's view of a polled CQE (erdma_poll_one_cqe, erdma_cq.c:110-177). Line numbers are Linux
 * 6.12. Written from the driver's description, independent of the model's decoder: where each field
 * goes is the driver's code as read here. The numbers (opcodes, syndromes, header field ranges,
 * limits) are erdma_hw.h's as qemu/erdma/hw.ts carries them with their citations; a wrong number
 * there is caught by the real driver in the integration scenarios, not by this double.
 */
import {
  CqeQtype,
  MAX_INLINE,
  MAX_INLINE_MTT_ENTRIES,
  MAX_SEND_SGE,
  SQEBB_SIZE,
  SqeHdr,
  WcStatus,
  WqeOp,
} from "../../qemu/erdma/hw.ts";

/** enum erdma_opcode (erdma_hw.h:563-584) */
export const ErdmaOp = WqeOp;
/** enum erdma_wc_status (erdma_hw.h:586-605): the CQE syndrome */
export const Syndrome = WcStatus;
/** ERDMA_CQE_QTYPE_* (erdma_hw.h:424-426) */
export const Qtype = CqeQtype;
/** SQE header fields (erdma_hw.h:459-468) as [hi, lo] */
export const Hdr = SqeHdr;
export { MAX_INLINE, MAX_SEND_SGE };

export function field(v: number | bigint, [hi, lo]: readonly [number, number]): bigint {
  return (BigInt(v) & ((1n << BigInt(hi - lo + 1)) - 1n)) << BigInt(lo);
}

export function getField(v: bigint, [hi, lo]: readonly [number, number]): number {
  return Number((v >> BigInt(lo)) & ((1n << BigInt(hi - lo + 1)) - 1n));
}

/** struct ib_sge */
export interface Sge {
  addr: bigint;
  length: number;
  lkey: number;
}

/** ib_send_wr send_flags */
export interface WrFlags {
  wrId?: bigint;
  signaled?: boolean;
  solicited?: boolean;
  fence?: boolean;
}

/** A payload is an SGL, or inline data (IB_SEND_INLINE: the CPU copies the SGEs' bytes). */
export type Payload = { sgl: Sge[]; inline?: undefined } | { inline: Uint8Array[]; sgl?: undefined };

export type SendWr = WrFlags &
  (
    | ({ opcode: "SEND" } & Payload)
    /** imm: the 32-bit immediate as the application meant it (ex.imm_data is its big-endian form) */
    | ({ opcode: "SEND_WITH_IMM"; imm: number } & Payload)
    | ({ opcode: "SEND_WITH_INV"; invalidate: number } & Payload)
    | ({ opcode: "WRITE"; remoteAddr: bigint; rkey: number } & Payload)
    | ({ opcode: "WRITE_WITH_IMM"; remoteAddr: bigint; rkey: number; imm: number } & Payload)
    | { opcode: "READ"; sgl: Sge[]; remoteAddr: bigint; rkey: number }
    | { opcode: "READ_WITH_INV"; sgl: Sge[]; remoteAddr: bigint; rkey: number; invalidate: number }
    /**
     * IB_WR_REG_MR: `key` is reg_wr->key (the stag with its new key byte), `access` ERDMA_MR_ACC_*
     * bits (LR is added as the driver adds it), `pages` the page list ib_map_mr_sg produced.
     */
    | { opcode: "REG_MR"; key: number; iova: bigint; length: number; access: number; pages: bigint[] }
    | { opcode: "LOCAL_INV"; invalidate: number }
    | { opcode: "ATOMIC_CAS"; sgl: Sge[]; remoteAddr: bigint; rkey: number; compare: bigint; swap: bigint }
    | { opcode: "ATOMIC_FAA"; sgl: Sge[]; remoteAddr: bigint; rkey: number; add: bigint }
  );

/** Writes `bytes` at byte `offset` of WQEBB `index` (an unmasked index; the ring masks it). */
export type WqebbWriter = (index: number, offset: number, bytes: Uint8Array) => void;

export type PushResult =
  | { ok: true; hdr: bigint; wqebbs: number; nextPi: number }
  | { ok: false; errno: "EINVAL" | "EOPNOTSUPP" };

const le32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return b;
};
const be32 = (v: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, false);
  return b;
};
const le64 = (v: bigint) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
  return b;
};
const sgeBytes = (s: Sge) => {
  // struct ib_sge is memcpy'd as is: addr u64, length u32, lkey u32 (erdma_qp.c:273-274)
  const b = new Uint8Array(16);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, s.addr, true);
  dv.setUint32(8, s.length >>> 0, true);
  dv.setUint32(12, s.lkey >>> 0, true);
  return b;
};

/** ERDMA_MR_ACC_LR (erdma_verbs.h:80) */
const ACC_LR = 2;

/**
 * erdma_push_one_sqe: writes one SQE at producer index `pi` (fields where the driver writes them,
 * WQEBBs after the first at pi+1.. of the ring), and returns the header (not yet written: the
 * driver writes it last, erdma_qp.c:485) with the producer index after it.
 */
export function pushOneSqe(
  put: WqebbWriter,
  qpn: number,
  pi: number,
  wr: SendWr,
  opts: { sigAll?: boolean } = {},
): PushResult {
  // linear offset within the SQE -> (WQEBB, offset), the way get_queue_entry(idx + n) is used
  const at = (off: number, bytes: Uint8Array) => {
    let done = 0;
    while (done < bytes.length) {
      const o = off + done;
      const n = Math.min(bytes.length - done, SQEBB_SIZE - (o % SQEBB_SIZE));
      put(pi + Math.floor(o / SQEBB_SIZE), o % SQEBB_SIZE, bytes.subarray(done, done + n));
      done += n;
    }
  };
  at(0, new Uint8Array(8)); // "Clear the SQE header section" (erdma_qp.c:307)
  let hdr =
    field(wr.signaled || opts.sigAll ? 1 : 0, Hdr.CE) |
    field(wr.solicited ? 1 : 0, Hdr.SE) |
    field(wr.fence ? 1 : 0, Hdr.FENCE) |
    field("inline" in wr && wr.inline ? 1 : 0, Hdr.INLINE) |
    field(qpn, Hdr.QPN);
  let size: number;
  let sglOffset = 0;
  let payload: Payload | undefined;
  switch (wr.opcode) {
    case "WRITE":
    case "WRITE_WITH_IMM": // erdma_qp.c:324-342
      hdr |= field(wr.opcode === "WRITE" ? ErdmaOp.WRITE : ErdmaOp.WRITE_WITH_IMM, Hdr.OPCODE);
      at(8, be32(wr.opcode === "WRITE_WITH_IMM" ? wr.imm : 0));
      at(16, le32(wr.rkey));
      at(24, le32(Number(wr.remoteAddr >> 32n)));
      at(20, le32(Number(wr.remoteAddr & 0xffff_ffffn)));
      size = 32;
      sglOffset = 32;
      payload = wr;
      break;
    case "READ":
    case "READ_WITH_INV": {
      // erdma_qp.c:344-372
      const s = wr.sgl[0];
      if (wr.sgl.length !== 1 || !s) return { ok: false, errno: "EINVAL" };
      if (wr.opcode === "READ_WITH_INV") at(8, le32(wr.invalidate));
      hdr |= field(wr.opcode === "READ" ? ErdmaOp.READ : ErdmaOp.READ_WITH_INV, Hdr.OPCODE);
      at(12, le32(s.length));
      at(16, le32(s.lkey));
      at(20, le32(Number(s.addr & 0xffff_ffffn)));
      at(24, le32(Number(s.addr >> 32n)));
      at(32, le64(wr.remoteAddr));
      at(44, le32(wr.rkey));
      at(40, le32(s.length));
      size = 32 + 16;
      break;
    }
    case "SEND":
    case "SEND_WITH_IMM":
    case "SEND_WITH_INV": // erdma_qp.c:374-391
      if (wr.opcode === "SEND_WITH_IMM") {
        hdr |= field(ErdmaOp.SEND_WITH_IMM, Hdr.OPCODE);
        at(8, be32(wr.imm));
      } else if (wr.opcode === "SEND_WITH_INV") {
        hdr |= field(ErdmaOp.SEND_WITH_INV, Hdr.OPCODE);
        at(8, le32(wr.invalidate));
      } else hdr |= field(ErdmaOp.SEND, Hdr.OPCODE);
      size = 16;
      sglOffset = 16;
      payload = wr;
      break;
    case "REG_MR": {
      // erdma_qp.c:393-421
      hdr |= field(ErdmaOp.REG_MR, Hdr.OPCODE);
      const access = ACC_LR | wr.access;
      at(8, le64(wr.iova));
      at(16, le32(wr.length));
      at(20, le32(wr.key));
      let attrs = Number(field(access, [5, 1]) | field(wr.pages.length, [31, 12]));
      if (wr.pages.length <= MAX_INLINE_MTT_ENTRIES) {
        const mtt = new Uint8Array(wr.pages.length * 8);
        wr.pages.forEach((p, i) => {
          mtt.set(le64(p), i * 8);
        });
        at(32, mtt);
        size = 32 + mtt.length;
      } else {
        attrs |= Number(field(1, [7, 6]));
        size = 32;
      }
      at(24, le32(attrs));
      break;
    }
    case "LOCAL_INV": // erdma_qp.c:423-428
      hdr |= field(ErdmaOp.LOCAL_INV, Hdr.OPCODE);
      at(20, le32(wr.invalidate));
      size = 32;
      break;
    case "ATOMIC_CAS":
    case "ATOMIC_FAA": {
      // erdma_qp.c:430-456: the remote SGE's length is not written
      const s = wr.sgl[0];
      if (!s) return { ok: false, errno: "EINVAL" };
      if (wr.opcode === "ATOMIC_CAS") {
        hdr |= field(ErdmaOp.ATOMIC_CAS, Hdr.OPCODE);
        at(16, le64(wr.swap));
        at(24, le64(wr.compare));
      } else {
        hdr |= field(ErdmaOp.ATOMIC_FAA, Hdr.OPCODE);
        at(16, le64(wr.add));
      }
      at(32, le64(wr.remoteAddr));
      at(44, le32(wr.rkey));
      at(48, le64(s.addr));
      at(60, le32(s.lkey));
      at(56, le32(s.length));
      size = 64;
      break;
    }
    default:
      return { ok: false, errno: "EOPNOTSUPP" };
  }
  if (payload?.inline) {
    // fill_inline_data (erdma_qp.c:207-252): the bytes run on from sgl_offset across WQEBBs
    let bytes = 0;
    for (const part of payload.inline) {
      if (bytes + part.length > MAX_INLINE) return { ok: false, errno: "EINVAL" };
      at(sglOffset + bytes, part);
      bytes += part.length;
    }
    at(12, le32(bytes));
    size += bytes;
    hdr |= field(bytes, Hdr.SGL_LEN);
  } else if (payload?.sgl) {
    // fill_sgl (erdma_qp.c:254-283)
    if (payload.sgl.length > MAX_SEND_SGE) return { ok: false, errno: "EINVAL" };
    let bytes = 0;
    payload.sgl.forEach((s, i) => {
      at(sglOffset + i * 16, sgeBytes(s));
      bytes += s.length;
    });
    at(12, le32(bytes));
    size += payload.sgl.length * 16;
    hdr |= field(payload.sgl.length, Hdr.SGL_LEN);
  }
  // out: (erdma_qp.c:479-486)
  const wqebbs = Math.ceil(size / SQEBB_SIZE);
  hdr |= field(wqebbs - 1, Hdr.WQEBB_CNT);
  const nextPi = (pi + wqebbs) & 0xffff;
  hdr |= field(nextPi, Hdr.WQEBB_INDEX);
  return { ok: true, hdr, wqebbs, nextPi };
}

/** kick_sq_db's doorbell value (erdma_qp.c:490-497): QPN 51:32, producer index 15:0. */
export function sqDoorbell(qpn: number, pi: number): bigint {
  return field(qpn, Hdr.QPN) | field(pi, Hdr.WQEBB_INDEX);
}

/** struct ib_wc as erdma_poll_one_cqe fills it, with the raw CQE fields beside. */
export interface Wc {
  wrId: bigint | undefined;
  /** the CQE syndrome (erdma_wc_status); values >= 17 count as GENERAL_ERR in the driver */
  status: number;
  opcode: number;
  qtype: number;
  qeIdx: number;
  qpn: number;
  byteLen: number;
  owner: number;
  /** RECV_IMM / RSP_SEND_IMM: the immediate (the value the sender posted) */
  imm?: number;
  /** RECV_INV: the invalidated rkey */
  invRkey?: number;
  /** the CQ index it was read from */
  cqIndex: number;
}

/** Reads the CQE at `at` (32 bytes, erdma_hw.h:429-439) as erdma_poll_one_cqe does. */
export function decodeCqe(b: Uint8Array): Omit<Wc, "wrId" | "cqIndex"> {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const hdr = dv.getUint32(0, false);
  const opcode = (hdr >>> 16) & 0xff;
  const wc: Omit<Wc, "wrId" | "cqIndex"> = {
    owner: hdr >>> 31,
    opcode,
    qtype: (hdr >>> 8) & 0xff,
    status: hdr & 0xff,
    qeIdx: dv.getUint32(4, false),
    qpn: dv.getUint32(8, false),
    byteLen: dv.getUint32(16, false),
  };
  // erdma_cq.c:163-169: imm_data is __le32 (re-encoded big-endian for the WC), inv_rkey __be32
  if (opcode === ErdmaOp.RECV_IMM || opcode === ErdmaOp.RSP_SEND_IMM) wc.imm = dv.getUint32(12, true);
  else if (opcode === ErdmaOp.RECV_INV) wc.invRkey = dv.getUint32(12, false);
  return wc;
}
