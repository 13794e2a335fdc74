/**
 * Fuzz target: the erdma device model's decoders of what the guest driver writes (qemu/erdma):
 * register and doorbell writes, command-queue SQEs (cmdq.ts, commands/), send and receive WQEs
 * (wqe.ts, datapath.ts, req.ts), MTT/PBL tables (mtt.ts, mr.ts), CQ/EQ doorbells. Each input runs
 * on a freshly probed device (the driver double in test/doubles does the probe) that has a CQ, a
 * connected loopback QP pair, a DMA MR, a user MR over scattered pages and an FRMR, so WQEs reach
 * the data path.
 *
 * Input: byte 0 picks the driver version (6.1, 6.12, 7.2); then a program of operations, each an
 * opcode byte and its operands (see `step`). Guest memory the driver did not allocate is unmapped.
 *
 * Oracles: the model never reports an internal error (its catch-all for exceptions), it goes idle
 * (no hang), and every guest-memory access it made landed in memory the guest had mapped: checked
 * against the harness's own map (allocated range minus the holes the program punched), apart from
 * the fake memory's own checks.
 */

import { ErdmaDevice, type ErdmaTraceEvent } from "../../../qemu/erdma/index.ts";
import { buffer } from "../../doubles/erdma-dp-fixture.ts";
import { connectQps, type DriverVersion, ErdmaDriver, type KernelQp } from "../../doubles/erdma-driver.ts";
import * as R from "../../doubles/erdma-requests.ts";
import { pushOneSqe, type SendWr, type Sge, sqDoorbell } from "../../doubles/erdma-sqe.ts";
import { type FakeGuestMemory, FakeHost } from "../../doubles/fake-guest.ts";
import { ByteReader } from "../bytes.ts";
import { fdsLeaked, openFds } from "../fds.ts";
import type { Findings, FuzzTarget } from "../target.ts";

const VERSIONS: readonly DriverVersion[] = ["6.1", "6.12", "7.2"];
const MEM_SIZE = 2 << 20;
const SQDB = 95 << 12;
const RQDB = 4096 + 384 * 1024;
const CQDB = RQDB + 96 * 1024;
const BAR0_SIZE = 1 << 20;
const REGISTERS = [
  0x0,
  0xc,
  0x10,
  0x14,
  0x18,
  0x1c,
  0x20,
  0x24,
  0x28,
  0x2c,
  0x30,
  0x34,
  0x38,
  0x3c,
  0x40,
  0x44,
  0x48,
  0x4c,
  0x50,
  0x60,
  0x68,
  0x70,
  0x78,
  0x80,
  0xc0,
  0x100,
  0x108,
  0x110,
  0x1f8,
  0x200,
  0x300,
  SQDB,
  RQDB,
  CQDB,
  CQDB + 8,
  0x79000,
];
const SIZES = [1, 2, 4, 8] as const;

/** The harness's own view of mapped guest memory: [base, top) minus holes. */
class MapOracle {
  readonly holes: [bigint, bigint][] = [];
  readonly violations: string[] = [];
  constructor(
    readonly base: bigint,
    public top: bigint,
  ) {}
  mapped(address: bigint, length: number): boolean {
    const end = address + BigInt(length);
    return address >= this.base && end <= this.top && !this.holes.some(([s, e]) => address < e && end > s);
  }
  /** wraps the memory's device-side accessors: a successful access outside the map is a violation */
  watch(m: FakeGuestMemory): void {
    const read = m.read.bind(m);
    const write = m.write.bind(m);
    m.read = async (address, length) => {
      const data = await read(address, length);
      if (!this.mapped(address, length)) this.violations.push(`read 0x${address.toString(16)}+${length}`);
      return data;
    };
    m.write = async (address, data) => {
      await write(address, data);
      if (!this.mapped(address, data.length))
        this.violations.push(`write 0x${address.toString(16)}+${data.length}`);
    };
  }
}

/**
 * The device and driver double as setupErdma makes them, on a host that keeps only internal errors
 * of the trace (serialising and schema-checking every event would halve the executions per second).
 */
async function probed(version: DriverVersion) {
  const host = new FakeHost({ size: MEM_SIZE, trace: "counts" });
  const internalErrors: ErdmaTraceEvent[] = [];
  host.trace = (event) => {
    if (event.kind === "internal-error") internalErrors.push(event);
  };
  const dev = new ErdmaDevice({ host, mac: "52:54:00:12:34:56" });
  const drv = new ErdmaDriver(dev, host, { version, cpus: 1 });
  await drv.probe();
  return { host, dev, drv, internalErrors };
}

async function world(version: DriverVersion) {
  const s = await probed(version);
  const { drv } = s;
  const m = drv.mem;
  const { cq } = await drv.createCq(64);
  const qa = (await drv.createQp({ scq: cq, rcq: cq, maxSendWr: 16, maxRecvWr: 16 })).qp;
  const qb = (await drv.createQp({ scq: cq, rcq: cq, maxSendWr: 16, maxRecvWr: 16 })).qp;
  await connectQps({ drv, qp: qa }, { drv, qp: qb });
  const pd = qa.pd;
  const dma = (await drv.getDmaMr(pd)).mr;
  const user = await buffer(drv, pd, 3 * 4096 + 100);
  const frmr = (await drv.allocFrmr(pd, 8)).mr;
  const scratch = Array.from({ length: 4 }, () => m.alloc(4096));
  await s.dev.idle();
  const top = m.alloc(0);
  m.unmap(top, Number(m.end - top));
  return { ...s, cq, qps: [qa, qb], pd, stags: [dma.stag, user.stag, frmr.stag], user, scratch, top };
}
type World = Awaited<ReturnType<typeof world>>;

/** A guest address the program means: in a queue, a scratch page, at the edges, or anywhere. */
function address(r: ByteReader, w: World): bigint {
  const m = w.drv.mem;
  switch (r.below(6)) {
    case 0:
      return (r.pick(w.scratch) as bigint) + BigInt(r.below(4096));
    case 1:
      return m.base + BigInt(r.below(Number(w.top - m.base)));
    case 2:
      return w.top - BigInt(r.below(64));
    case 3:
      return w.user.va + BigInt(r.below(w.user.size + 64));
    case 4:
      return BigInt(r.u32());
    default:
      return r.u64();
  }
}

function length(r: ByteReader): number {
  switch (r.below(4)) {
    case 0:
      return r.below(64);
    case 1:
      return r.below(0x4000);
    case 2:
      return r.pick([0, 1, 4095, 4096, 4097, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff]);
    default:
      return r.u32();
  }
}

function sge(r: ByteReader, w: World): Sge {
  return { addr: address(r, w), length: length(r), lkey: r.bool() ? r.pick(w.stags) : r.u32() };
}

/** A command the driver could send (fields from the input), for the command queue. */
function command(r: ByteReader, w: World): Uint8Array {
  const v = w.drv.version;
  const q = (): R.QueueMtt => ({
    pageShift: 12 + r.below(10),
    level: r.below(2) as 0 | 1,
    count: r.below(6),
    offset: r.bool() ? 0 : r.below(1 << 14),
    entries: [address(r, w), address(r, w), address(r, w), address(r, w)],
    cqn: r.bool() ? w.cq.cqn : r.below(4096),
    dbrec: address(r, w),
  });
  switch (r.below(20)) {
    case 0:
      return R.queryDevice();
    case 1:
      return R.confMtu(r.u32());
    case 2:
      return R.getStats({ target: address(r, w), length: r.below(512) });
    case 3:
      return R.allocDb(r.below(8));
    case 4:
      return R.freeDb({ sdb: r.u8(), rdb: r.u8(), cdb: r.u8() });
    case 5:
      return R.createEq({
        eqn: r.below(40),
        vector: r.below(40),
        depthLog: r.below(24),
        qbuf: address(r, w),
        dbrec: address(r, w),
      });
    case 6:
      return R.destroyEq({ eqn: r.below(40), vector: r.below(40) });
    case 7:
      return R.createCq({
        cqn: r.below(4096),
        depthLog: r.below(24),
        eqn: r.below(8),
        pageShift: 12 + r.below(20),
        qbuf: address(r, w),
        mttCount: r.below(8),
        level: r.below(2) as 0 | 1,
        dbrec: address(r, w),
        firstPageOffset: r.bool() ? 0 : r.below(1 << 20),
      });
    case 8:
      return R.destroyCq(r.bool() ? w.cq.cqn : r.below(4096));
    case 9:
      return R.createQp(v, {
        qpn: r.below(1100),
        pd: r.bool() ? w.pd : r.below(100),
        sqDepthLog: r.below(17),
        rqDepthLog: r.below(17),
        sq: q(),
        rq: q(),
        type: r.below(3),
      });
    case 10:
      return R.destroyQp(r.bool() ? (r.pick(w.qps) as KernelQp).qpn : r.below(1100));
    case 11:
      return R.modifyQp(r.bool() ? (r.pick(w.qps) as KernelQp).qpn : r.below(1100), r.below(9));
    case 12:
      return R.reflush({ qpn: (r.pick(w.qps) as KernelQp).qpn, sqPi: r.u16(), rqPi: r.u16() });
    case 13:
      return R.regMr({
        stag: r.bool() ? (r.pick(w.stags) as number) : r.u32() >>> 4,
        pd: r.bool() ? w.pd : r.below(100),
        type: r.below(4) as 0,
        access: r.below(32),
        valid: r.bool(),
        pageShift: r.below(64),
        level: r.below(4),
        count: r.bool() ? r.below(16) : r.u32() >>> 8,
        va: r.bool() ? w.user.va : r.u64(),
        size: r.bool() ? BigInt(r.u16()) : r.u64(),
        phys: [address(r, w), address(r, w), address(r, w), address(r, w)],
        ...(r.bool() ? { version1: { mttPageField: r.below(8) } } : {}),
      });
    case 14:
      return R.deregMr(r.bool() ? (r.pick(w.stags) as number) : r.u32());
    case 15:
      return R.setGid({ index: r.below(40), del: r.bool(), gid: new Uint8Array(16) });
    case 16:
      return R.createAh({ pdn: r.below(9), ahn: r.below(4000) });
    case 17:
      return R.queryQp(r.below(1100));
    case 18:
      return R.modifyQpRocev2({ qpn: r.below(1100), state: r.below(9), mask: r.below(64) });
    default:
      return R.confDevice(r.below(64), r.bool());
  }
}

/** push_cmdq_sqe with the header's WQEBB count and the doorbell's index from the input. */
function pushCommand(r: ByteReader, w: World, req: Uint8Array): void {
  const { drv } = w;
  const m = drv.mem;
  if (req.length < 8) return;
  const size = Math.min(req.length, drv.sqeSize);
  const at = drv.sq.qbuf + BigInt(((drv.sq.pi & (drv.sq.depth - 1)) >>> 0) * 32);
  const cnt = r.below(4) ? drv.wqebbCnt : 1 + r.below(8);
  const advance = r.below(4) ? cnt : r.below(9);
  if (m.isMapped(at, size, "write")) m.setBytes(at, req.subarray(0, size));
  drv.sq.pi = (drv.sq.pi + advance) & 0xffff;
  const hdr0 = new DataView(req.buffer, req.byteOffset, 8).getBigUint64(0, true) & ~0xffffn;
  const hdr = hdr0 | BigInt(drv.sq.pi) | (BigInt(r.u8() & 0x7f) << 32n) | (BigInt((cnt - 1) & 7) << 52n);
  if (m.isMapped(at, 8, "write")) m.setU64(at, hdr);
  w.dev.bar0Write(0x200, 8, BigInt(drv.sq.pi));
}

const OPCODES: readonly SendWr["opcode"][] = [
  "SEND",
  "SEND_WITH_IMM",
  "SEND_WITH_INV",
  "WRITE",
  "WRITE_WITH_IMM",
  "READ",
  "READ_WITH_INV",
  "REG_MR",
  "LOCAL_INV",
  "ATOMIC_CAS",
  "ATOMIC_FAA",
];

function sendWr(r: ByteReader, w: World): SendWr {
  const opcode = r.pick(OPCODES);
  const sgl = Array.from({ length: r.below(4) }, () => sge(r, w));
  const remoteAddr = address(r, w);
  const rkey = r.bool() ? r.pick(w.stags) : r.u32();
  const flags = { signaled: r.bool(), solicited: r.bool(), fence: r.bool(), wrId: BigInt(r.u16()) };
  switch (opcode) {
    case "SEND":
      return { ...flags, opcode, sgl };
    case "SEND_WITH_IMM":
      return { ...flags, opcode, sgl, imm: r.u32() };
    case "SEND_WITH_INV":
      return { ...flags, opcode, sgl, invalidate: r.u32() };
    case "WRITE":
      return { ...flags, opcode, sgl, remoteAddr, rkey };
    case "WRITE_WITH_IMM":
      return { ...flags, opcode, sgl, remoteAddr, rkey, imm: r.u32() };
    case "READ":
      return { ...flags, opcode, sgl, remoteAddr, rkey };
    case "READ_WITH_INV":
      return { ...flags, opcode, sgl, remoteAddr, rkey, invalidate: r.u32() };
    case "REG_MR":
      return {
        ...flags,
        opcode,
        key: r.u32(),
        iova: address(r, w),
        length: length(r),
        access: r.below(32),
        pages: Array.from({ length: r.below(6) }, () => address(r, w)),
      };
    case "LOCAL_INV":
      return { ...flags, opcode, invalidate: r.u32() };
    case "ATOMIC_CAS":
      return { ...flags, opcode, sgl, remoteAddr, rkey, compare: r.u64(), swap: r.u64() };
    default:
      return { ...flags, opcode: "ATOMIC_FAA", sgl, remoteAddr, rkey, add: r.u64() };
  }
}

/** Writes `bytes` at `at` where the guest has memory (the guest CPU cannot write elsewhere). */
function poke(m: FakeGuestMemory, at: bigint, bytes: Uint8Array): void {
  if (at >= m.base && at + BigInt(bytes.length) <= m.end) m.setBytes(at, bytes);
}

async function step(r: ByteReader, w: World, oracle: MapOracle): Promise<void> {
  const { dev, drv } = w;
  const m = drv.mem;
  const qp = r.pick(w.qps) as KernelQp;
  switch (r.below(14)) {
    case 0: {
      // a register or doorbell write, as vfio-user delivers it (in the BAR, naturally aligned)
      const size = r.pick(SIZES);
      const off = r.bool() ? r.pick(REGISTERS) : r.below(BAR0_SIZE);
      dev.bar0Write(off - (off % size), size, size === 8 ? r.u64() : r.u32());
      return;
    }
    case 1: {
      const size = r.pick(SIZES);
      const off = r.bool() ? r.pick(REGISTERS) : r.below(BAR0_SIZE);
      dev.bar0Read(off - (off % size), size);
      return;
    }
    case 2: {
      const req = command(r, w).slice();
      for (let i = r.below(4); i > 0; i--) {
        const at = r.below(req.length);
        req[at] = (req[at] as number) ^ r.u8();
      }
      pushCommand(r, w, req);
      return;
    }
    case 3: {
      const raw = new Uint8Array(drv.sqeSize);
      raw.set(r.bytes(drv.sqeSize));
      pushCommand(r, w, raw);
      return;
    }
    case 4: {
      // raw SQ WQEBBs at the producer index, then the doorbell record and the doorbell
      const n = 1 + r.below(4);
      const bytes = r.bytes(32 * n);
      for (let i = 0; i * 32 < bytes.length; i++) {
        const at = qp.sqBuf + BigInt((((qp.sqPi + i) & (qp.sqSize - 1)) >>> 0) * 32);
        poke(m, at, bytes.subarray(i * 32, i * 32 + 32));
      }
      qp.sqPi = (qp.sqPi + (r.below(4) ? n : r.u16())) & 0xffff;
      const db = r.below(4) ? sqDoorbell(qp.qpn, qp.sqPi) : r.u64();
      poke(m, qp.sqDbrec, new Uint8Array(new BigUint64Array([db]).buffer));
      dev.bar0Write(SQDB, 8, db);
      return;
    }
    case 5: {
      // a work request as the driver builds it
      const put = (index: number, offset: number, bytes: Uint8Array) =>
        poke(m, qp.sqBuf + BigInt(((index & (qp.sqSize - 1)) >>> 0) * 32 + offset), bytes);
      const res = pushOneSqe(put, qp.qpn, qp.sqPi, sendWr(r, w), { sigAll: r.bool() });
      if (!res.ok) return;
      poke(
        m,
        qp.sqBuf + BigInt(((qp.sqPi & (qp.sqSize - 1)) >>> 0) * 32),
        new Uint8Array(new BigUint64Array([res.hdr]).buffer),
      );
      qp.sqPi = res.nextPi;
      const db = sqDoorbell(qp.qpn, qp.sqPi);
      poke(m, qp.sqDbrec, new Uint8Array(new BigUint64Array([db]).buffer));
      dev.bar0Write(SQDB, 8, db);
      return;
    }
    case 6: {
      // a receive WQE (raw or with a fuzzed SGE) and the RQ doorbell
      const at = qp.rqBuf + BigInt(((qp.rqPi & (qp.rqSize - 1)) >>> 0) * 32);
      const rqe = r.bool()
        ? new R.ReqBuf(32, 0)
            .u16(0, (qp.rqPi + 1) & 0xffff)
            .u32(4, qp.qpn)
            .u64(16, sge(r, w).addr)
            .u32(24, length(r))
            .u32(28, r.bool() ? (r.pick(w.stags) as number) : r.u32()).bytes
        : Uint8Array.from(r.bytes(32));
      poke(m, at, rqe);
      const db = rqe.length >= 8 ? new DataView(rqe.buffer, rqe.byteOffset).getBigUint64(0, true) : 0n;
      poke(m, qp.rqDbrec, new Uint8Array(new BigUint64Array([db]).buffer));
      dev.bar0Write(RQDB, 8, db);
      qp.rqPi = (qp.rqPi + 1) & 0xffff;
      return;
    }
    case 7: {
      // guest data: MTT/PBL tables, SGE targets, queue entries
      poke(m, address(r, w), r.bytes(1 + r.below(64)));
      return;
    }
    case 8: {
      const at = address(r, w);
      const n = 1 + r.below(0x10000);
      m.unmap(at, n);
      oracle.holes.push([at, at + BigInt(n)]);
      return;
    }
    case 9:
      m.remapAll();
      oracle.holes.length = 0;
      m.unmap(w.top, Number(m.end - w.top));
      return;
    case 10: {
      // CQ arm / EQ doorbells
      const db = r.pick([CQDB, 0x50, 0x100 + 8 * r.below(32), 0x300, 0x79000 + 8 * r.below(16)]);
      dev.bar0Write(
        db,
        8,
        r.bool() ? r.u64() : (BigInt(r.bool() ? w.cq.cqn : r.below(64)) << 32n) | BigInt(r.u32()),
      );
      return;
    }
    case 11:
      dev.reset("fuzz");
      if (r.bool()) {
        dev.bar0Write(0x10, 4, 1);
        drv.aeqInit(true);
        drv.cmdqInit(true);
        dev.bar0Write(0x10, 4, 2);
      }
      return;
    case 12:
      drv.mem.setU64(w.user.phys(0), r.u64());
      return;
    default:
      await dev.idle();
      w.host.pendingIrqs.length = 0;
  }
}

export async function runErdma(input: Uint8Array): Promise<Findings> {
  const fdsBefore = openFds();
  const r = new ByteReader(input);
  const w = await world(r.pick(VERSIONS));
  const m = w.drv.mem;
  const oracle = new MapOracle(m.base, w.top);
  oracle.watch(m);
  for (let ops = 0; r.left > 0 && ops < 64; ops++) await step(r, w, oracle);
  await w.dev.idle();
  if (w.internalErrors.length > 0)
    throw new Error(`erdma internal error: ${JSON.stringify(w.internalErrors[0])}`);
  const outOfBounds = [...oracle.violations];
  if (m.outOfBounds > 0) outOfBounds.push(`${m.outOfBounds} accesses past the guest memory buffer`);
  return { outOfBounds, fdLeaks: await fdsLeaked(fdsBefore) };
}

export const erdmaTarget: FuzzTarget = {
  name: "erdma",
  watch: /\/qemu\/erdma\//,
  maxLen: 2048,
  timeoutMs: 10_000,
  seeds: () => [
    Uint8Array.from([1]),
    // a SEND of the user buffer, a receive, a command, then idle
    Uint8Array.from([1, 6, 0, 1, 3, 5, 0, 0, 0, 0, 3, 0, 1, 2, 13, 13]),
    Uint8Array.from([0, 2, 0, 13, 1, 4, 0, 1, 1, 2, 13]),
    Uint8Array.from([2, 5, 1, 5, 0, 2, 3, 0, 0, 16, 0, 0, 1, 1, 13]),
  ],
  run: runErdma,
};
