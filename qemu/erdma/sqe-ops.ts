/**
 * What an SQE does that needs no RQE of the peer: fast registration and local invalidation on this
 * device, RDMA READ and atomics against the responder's memory. The data path (datapath.ts) finds
 * the responder and writes the completions.
 */
import { type AccessFailure, gather, resolveAccess, scatter } from "./access.ts";
import { DEVICE_RESET } from "./dma.ts";
import { DmaFault } from "./host.ts";
import { MrRight, WcStatus, WqeOp } from "./hw.ts";
import type { MemoryRegion, Segment } from "./mr.ts";
import type { QueuePair } from "./qp.ts";
import type { DeviceState } from "./state.ts";
import type { RegMrSqe, Sqe } from "./wqe.ts";

/** A fast registration as the device took it: the pages it was given and the page size it walks them in. */
export type Registration = {
  stag: string;
  va: string;
  length: number;
  pages: number;
  pageSize: number;
  mtt: "inline" | "table";
};

function registrationOf(mr: MemoryRegion, sqe: RegMrSqe): Registration {
  return {
    stag: `0x${mr.stag.toString(16)}`,
    va: `0x${sqe.addr.toString(16)}`,
    length: sqe.length,
    pages: sqe.inlineMtt?.length ?? sqe.mttCount,
    pageSize: 2 ** (mr.mtt?.pageShift ?? 12),
    mtt: sqe.inlineMtt ? "inline" : "table",
  };
}

/** Why an SQE did not complete now, or how it completed. */
export type Outcome =
  | {
      done: true;
      status: number;
      length: number;
      reason?: string;
      remoteError?: boolean;
      /** what a REG_MR registered, for its trace event */
      registered?: Registration;
    }
  | { done: false; reason: string };

export const localStatus: Record<AccessFailure, number> = {
  stag: WcStatus.SEND_STAG_INVALID_ERR,
  pd: WcStatus.SEND_PDID_ERR,
  right: WcStatus.SEND_RIGHT_VIOLATION_ERR,
  bounds: WcStatus.SEND_ADDR_VIOLATION_ERR,
};
export const remoteStatus: Record<AccessFailure, number> = {
  stag: WcStatus.RECV_STAG_INVALID_ERR,
  pd: WcStatus.RECV_PDID_ERR,
  right: WcStatus.RECV_RIGHT_VIOLATION_ERR,
  bounds: WcStatus.RECV_ADDR_VIOLATION_ERR,
};

/** The responder of a READ or an atomic: its QP (in RTS) and device, and what its failures do. */
export interface Responder {
  qp: QueuePair;
  st: DeviceState;
  /** a remote access error: the responder's QP errs, the requester's WQE fails */
  failure(failure: AccessFailure, why: string): Promise<Outcome>;
  /** the responder's memory refused a DMA */
  dmaFailure(err: unknown): Promise<Outcome>;
  /** counts the bytes moved in both devices' statistics */
  count(from: DeviceState, to: DeviceState, bytes: number): void;
}

/**
 * A WQE whose buffers the platform would not let the device reach (outside what the guest mapped
 * for DMA: a dma-fault trace event was written) completes in error: GENERAL_ERR, which the driver
 * reports as IB_WC_GENERAL_ERR (erdma_cq.c map_cqe_status). No check of the device's own (key,
 * PD, right, bound) failed, so none of the access statuses fits. Any other error is rethrown.
 */
export function dmaRefused(err: unknown, remote: boolean): Outcome & { done: true; reason: string } {
  // a reset revoked the device's access: the job is over, there is nothing to complete
  if (!(err instanceof DmaFault) || err.reason === DEVICE_RESET) throw err;
  return {
    done: true,
    status: WcStatus.GENERAL_ERR,
    length: 0,
    reason: `${remote ? "the responder's" : "its"} buffer is outside mapped memory (${err.message})`,
    ...(remote ? { remoteError: true } : {}),
  };
}

/** REG_MR and LOCAL_INV: what they do to this device's memory regions. */
export function localOp(
  st: DeviceState,
  qp: QueuePair,
  sqe: Extract<Sqe, { kind: "reg-mr" | "local-inv" }>,
): Outcome {
  switch (sqe.kind) {
    case "reg-mr": {
      const mr = st.mrs.get(sqe.stag >>> 8);
      if (mr?.kind !== "frmr" || mr.pd !== qp.pd) {
        return {
          done: true,
          status: WcStatus.SEND_STAG_INVALID_ERR,
          length: 0,
          reason: "REG_MR of no FRMR",
        };
      }
      const access = sqe.access | MrRight.LOCAL_READ;
      mr.fastRegister({
        key: sqe.stag & 0xff,
        va: sqe.addr,
        length: BigInt(sqe.length),
        rights: access,
        ...(sqe.inlineMtt ? { inlinePages: sqe.inlineMtt } : {}),
      });
      return { done: true, status: WcStatus.SUCCESS, length: 0, registered: registrationOf(mr, sqe) };
    }
    case "local-inv": {
      const mr = st.mrs.get(sqe.stag >>> 8);
      if (!mr || mr.key !== (sqe.stag & 0xff) || mr.pd !== qp.pd) {
        return {
          done: true,
          status: WcStatus.SEND_STAG_INVALID_ERR,
          length: 0,
          reason: "LOCAL_INV of no MR",
        };
      }
      mr.valid = false;
      return { done: true, status: WcStatus.SUCCESS, length: 0 };
    }
  }
}

/**
 * The local buffer a READ or an atomic writes its result into, then the responder's memory it
 * reads: a local failure completes the WR at once, a remote one as the responder reports it.
 */
async function localAndRemote(
  st: DeviceState,
  qp: QueuePair,
  sink: { stag: number; addr: bigint; length: number },
  peer: Responder,
  source: { stag: number; addr: bigint; length: number; right: number },
): Promise<Outcome | { local: Segment[]; remote: Segment[] }> {
  const local = await resolveAccess(st, qp.pd, sink.stag, sink.addr, sink.length, MrRight.LOCAL_WRITE);
  if (!local.ok) return { done: true, status: localStatus[local.failure], length: 0, reason: local.why };
  const remote = await resolveAccess(
    peer.st,
    peer.qp.pd,
    source.stag,
    source.addr,
    source.length,
    source.right,
  );
  if (!remote.ok) return peer.failure(remote.failure, remote.why);
  return { local: local.segments, remote: remote.segments };
}

export async function readOp(
  st: DeviceState,
  qp: QueuePair,
  sqe: Extract<Sqe, { kind: "read" }>,
  peer: Responder,
): Promise<Outcome> {
  const access = await localAndRemote(
    st,
    qp,
    { stag: sqe.sink.stag, addr: sqe.sink.to, length: sqe.length },
    peer,
    { stag: sqe.source.key, addr: sqe.source.addr, length: sqe.length, right: MrRight.REMOTE_READ },
  );
  if ("done" in access) return access;
  const { local, remote } = access;
  const pst = peer.st;
  let data: Uint8Array;
  try {
    data = await gather(pst, remote, `QP ${peer.qp.qpn} READ source`);
  } catch (err) {
    return peer.dmaFailure(err);
  }
  try {
    await scatter(st, local, data, `QP ${qp.qpn} READ sink`);
  } catch (err) {
    return dmaRefused(err, false);
  }
  peer.count(pst, st, data.length);
  if (sqe.invalidate !== undefined) {
    const mr = st.mrs.get(sqe.invalidate >>> 8);
    if (mr && mr.key === (sqe.invalidate & 0xff)) mr.valid = false;
  }
  return { done: true, status: WcStatus.SUCCESS, length: data.length };
}

export async function atomicOp(
  st: DeviceState,
  qp: QueuePair,
  sqe: Extract<Sqe, { kind: "atomic" }>,
  peer: Responder,
): Promise<Outcome> {
  const access = await localAndRemote(
    st,
    qp,
    { stag: sqe.local.key, addr: sqe.local.addr, length: 8 },
    peer,
    { stag: sqe.remote.key, addr: sqe.remote.addr, length: 8, right: MrRight.REMOTE_ATOMIC },
  );
  if ("done" in access) return access;
  const { local, remote } = access;
  const pst = peer.st;
  let old: Uint8Array;
  try {
    old = await gather(pst, remote, "atomic target");
  } catch (err) {
    return peer.dmaFailure(err);
  }
  const value = new DataView(old.buffer, old.byteOffset, 8).getBigUint64(0, true);
  const mask = (1n << 64n) - 1n;
  const next =
    sqe.opcode === WqeOp.ATOMIC_CAS
      ? value === sqe.compare
        ? sqe.swapOrAdd
        : value
      : (value + sqe.swapOrAdd) & mask;
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, next, true);
  try {
    await scatter(pst, remote, out, "atomic target");
  } catch (err) {
    return peer.dmaFailure(err);
  }
  try {
    await scatter(st, local, old, "atomic result");
  } catch (err) {
    return dmaRefused(err, false);
  }
  return { done: true, status: WcStatus.SUCCESS, length: 8 };
}
