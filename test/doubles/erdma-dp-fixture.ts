/**
 * Fixtures for the data-path tests: connected QP pairs (loopback on one device, or two devices on
 * one Fabric) and registered buffers whose IOVA range is backed by scattered guest pages, so a
 * model that skipped translation would land bytes in the wrong place.
 */
import { Fabric } from "../../qemu/erdma/fabric.ts";
import type { ErdmaProfile } from "../../qemu/erdma/index.ts";
import type { QueueEngine } from "../../qemu/erdma/queue-engine.ts";
import {
  Acc,
  connectQps,
  type ErdmaDriver,
  type KernelCq,
  type KernelQp,
  settleAll,
  setupErdma,
} from "./erdma-driver.ts";
import type { SendWr, Sge } from "./erdma-sqe.ts";
import type { FakeHost } from "./fake-guest.ts";

export { Acc };

let nextVa = 0x7f00_0000_0000n;

export interface Buffer_ {
  stag: number;
  va: bigint;
  size: number;
  pages: bigint[];
  /** the guest address behind IOVA va + offset */
  phys(offset: number): bigint;
  write(offset: number, data: Uint8Array): void;
  read(offset: number, length: number): Uint8Array;
  sge(offset?: number, length?: number): Sge;
}

/** A user MR (erdma_reg_user_mr) of `size` bytes on pages allocated in reverse order. */
export async function buffer(
  drv: ErdmaDriver,
  pd: number,
  size: number,
  access: number = Acc.LW | Acc.RR | Acc.RW,
): Promise<Buffer_> {
  const n = Math.max(1, Math.ceil(size / 4096));
  const pages = Array.from({ length: n }, () => drv.mem.alloc(4096)).reverse();
  const va = nextVa;
  nextVa += 0x10_0000n;
  const r = await drv.regUserMr({ pd, va, length: BigInt(size), pages, pageShift: 12, access });
  if (r.out.status !== 0) throw new Error(`REG_MR: ${r.out.status}`);
  const phys = (offset: number) => (pages[Math.floor(offset / 4096)] as bigint) + BigInt(offset % 4096);
  const each = (offset: number, length: number, fn: (addr: bigint, at: number, n: number) => void) => {
    let done = 0;
    while (done < length) {
      const o = offset + done;
      const k = Math.min(length - done, 4096 - (o % 4096));
      fn(phys(o), done, k);
      done += k;
    }
  };
  return {
    stag: r.mr.stag,
    va,
    size,
    pages,
    phys,
    write(offset, data) {
      each(offset, data.length, (addr, at, k) => drv.mem.setBytes(addr, data.subarray(at, at + k)));
    },
    read(offset, length) {
      const out = new Uint8Array(length);
      each(offset, length, (addr, at, k) => out.set(drv.mem.bytes(addr, k), at));
      return out;
    },
    sge(offset = 0, length = size - offset) {
      return { addr: va + BigInt(offset), length, lkey: r.mr.stag };
    },
  };
}

export function pattern(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed * 7 + 1) & 0xff);
}

export interface Side {
  drv: ErdmaDriver;
  host: FakeHost;
  dev: ErdmaDriver["dev"];
  pd: number;
  qp: KernelQp;
  scq: KernelCq;
  rcq: KernelCq;
}

export interface PairOptions {
  profile?: ErdmaProfile;
  /** the devices' queue engine (default: the TypeScript one) */
  engine?: QueueEngine;
  /** two devices joined by a Fabric instead of loopback on one */
  fabric?: boolean;
  /** one CQ for send and receive of each QP */
  sharedCq?: boolean;
  cqDepth?: number;
  maxSendWr?: number;
  maxRecvWr?: number;
  /** do not connect */
  idle?: boolean;
}

/** Two connected QPs: loopback on one device, or one on each of two devices on one fabric. */
export async function pair(opts: PairOptions = {}) {
  const common = {
    version: "6.12" as const,
    memSize: 32 << 20,
    ...(opts.profile ? { profile: opts.profile } : {}),
    ...(opts.engine ? { engine: opts.engine } : {}),
  };
  let sa: Awaited<ReturnType<typeof setupErdma>>;
  let sb: Awaited<ReturnType<typeof setupErdma>>;
  if (opts.fabric) {
    const fabric = new Fabric();
    sa = await setupErdma({
      ...common,
      fabric,
      name: "devA",
      base: 0x1_0000_0000n,
      mac: "52:54:00:00:00:0a",
    });
    sb = await setupErdma({
      ...common,
      fabric,
      name: "devB",
      base: 0x2_0000_0000n,
      mac: "52:54:00:00:00:0b",
    });
  } else {
    sa = await setupErdma(common);
    sb = sa;
  }
  const pdA = sa.drv.allocPd();
  const pdB = opts.fabric ? sb.drv.allocPd() : pdA;
  const side = async (s: typeof sa, pd: number): Promise<Side> => {
    const { cq: scq } = await s.drv.createCq(opts.cqDepth ?? 64);
    const rcq = opts.sharedCq ? scq : (await s.drv.createCq(opts.cqDepth ?? 64)).cq;
    const { out, qp } = await s.drv.createQp({
      scq,
      rcq,
      maxSendWr: opts.maxSendWr ?? 16,
      maxRecvWr: opts.maxRecvWr ?? 16,
      pd,
    });
    if (out.status !== 0) throw new Error(`CREATE_QP: ${out.status}`);
    return { drv: s.drv, host: s.host, dev: s.dev, pd, qp, scq, rcq };
  };
  const a = await side(sa, pdA);
  const b = await side(sb, pdB);
  if (!opts.idle) await connectQps(a, b);
  const drivers = opts.fabric ? [sa.drv, sb.drv] : [sa.drv];
  return {
    a,
    b,
    drivers,
    settle: () => settleAll(...drivers),
    /** the model's QP behind a side */
    mqp: (s: Side) => s.dev.state.qps.get(s.qp.qpn),
  };
}

/** A connected loopback pair with a 64-byte buffer registered on each side: src on a, dst on b. */
export async function pairWithBuffers(opts: PairOptions = {}) {
  const p = await pair(opts);
  const src = await buffer(p.a.drv, p.a.pd, 64);
  const dst = await buffer(p.b.drv, p.b.pd, 64);
  return { p, src, dst };
}

/**
 * A connected loopback pair with 8-byte WRITEs from a's buffer to b's to post: signaled or not as
 * asked, unless a WR says otherwise.
 */
export async function writePair(signaled: boolean, opts: PairOptions = {}) {
  const { p, src, dst } = await pairWithBuffers(opts);
  const w = (wrId: bigint, wrSignaled = signaled): SendWr => ({
    opcode: "WRITE",
    wrId,
    signaled: wrSignaled,
    remoteAddr: dst.va,
    rkey: dst.stag,
    sgl: [src.sge(0, 8)],
  });
  return { p, src, dst, w };
}
