/**
 * The data path with the driver double posting SQEs as erdma_push_one_sqe does: every opcode's
 * bytes land where the verbs say, and the CQEs carry what erdma_poll_one_cqe reads (qtype, opcode,
 * syndrome, qe_idx, qpn, size, immediate / invalidated rkey, owner across a wrap).
 */
import t from "tap";
import { profileReflush } from "../../qemu/erdma/index.ts";
import { buffer, pair, pairWithBuffers, pattern } from "../doubles/erdma-dp-fixture.ts";
import { Acc, QpState } from "../doubles/erdma-driver.ts";
import { ErdmaOp as Op, Qtype, Syndrome as S } from "../doubles/erdma-sqe.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

const atomicProfile = { ...profileReflush, name: "atomic", caps: { ...profileReflush.caps, atomic: true } };

t.test("SEND from a two-SGE SGL into an RQE", async (t) => {
  const p = await pair();
  const s1 = await buffer(p.a.drv, p.a.pd, 5000);
  const s2 = await buffer(p.a.drv, p.a.pd, 300);
  const dst = await buffer(p.b.drv, p.b.pd, 8192);
  s1.write(0, pattern(5000, 1));
  s2.write(0, pattern(300, 2));
  dst.write(0, new Uint8Array(8192).fill(0xee));
  // an SGE across a page boundary of the scattered source pages
  const sgl = [s1.sge(4000, 1000), s2.sge(0, 300)];
  t.equal(p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb0n, sge: dst.sge(100, 2000) }), 0);
  const r = p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 0xa0n, signaled: true, sgl });
  t.same(r, { ret: 0, indices: [0] });
  await p.settle();
  const expected = new Uint8Array([...pattern(5000, 1).subarray(4000), ...pattern(300, 2)]);
  t.same(dst.read(100, 1300), expected, "the gathered bytes, in SGL order, at the RQE's address");
  t.same(dst.read(0, 100), new Uint8Array(100).fill(0xee), "nothing before the RQE buffer");
  t.same(dst.read(1400, 700), new Uint8Array(700).fill(0xee), "nothing after the payload");
  const [sw, ...moreS] = p.a.drv.pollWc(p.a.scq);
  t.match(sw, {
    wrId: 0xa0n,
    qtype: Qtype.SQ,
    opcode: Op.SEND,
    status: S.SUCCESS,
    qeIdx: 0,
    qpn: p.a.qp.qpn,
    byteLen: 1300,
    owner: 1,
  });
  t.same(moreS, []);
  const [rw, ...moreR] = p.b.drv.pollWc(p.b.rcq);
  t.match(rw, {
    wrId: 0xb0n,
    qtype: Qtype.RQ,
    opcode: Op.RECEIVE,
    status: S.SUCCESS,
    qeIdx: 0,
    qpn: p.b.qp.qpn,
    byteLen: 1300,
  });
  t.equal(rw?.imm, undefined);
  t.same(moreR, []);
  t.same(p.a.drv.pollWc(p.a.rcq), [], "nothing on the sender's receive CQ");
  t.equal(p.a.drv.sqCi(p.a.qp), 2, "16 + 2 x 16 bytes: a 2-WQEBB SQE");
  t.match(p.a.host.ofKind("wqe"), [
    { queue: "rq", qpn: p.b.qp.qpn, index: 0, op: "RECEIVE", status: 0, length: 1300 },
    { queue: "sq", qpn: p.a.qp.qpn, index: 0, op: "SEND", status: 0, length: 1300, signaled: true },
  ]);
});

t.test("SEND_WITH_IMM and WRITE_WITH_IMM deliver the immediate", async (t) => {
  const p = await pair();
  const src = await buffer(p.a.drv, p.a.pd, 64);
  const dst = await buffer(p.b.drv, p.b.pd, 4096);
  src.write(0, pattern(64, 3));
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge(0, 64) });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 2n }); // WRITE_WITH_IMM needs an RQE, not a buffer
  p.a.drv.postSend(p.a.qp, [
    { opcode: "SEND_WITH_IMM", wrId: 10n, signaled: true, imm: 0x1234_5678, sgl: [src.sge(0, 64)] },
    {
      opcode: "WRITE_WITH_IMM",
      wrId: 11n,
      signaled: true,
      imm: 0xdead_beef,
      remoteAddr: dst.va + 1024n,
      rkey: dst.stag,
      sgl: [src.sge(0, 32)],
    },
  ]);
  await p.settle();
  t.same(dst.read(0, 64), pattern(64, 3), "the SEND payload");
  t.same(dst.read(1024, 32), pattern(32, 3), "the WRITE payload at the remote address");
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 10n, opcode: Op.SEND_WITH_IMM, status: 0, qeIdx: 0, byteLen: 64 },
    { wrId: 11n, opcode: Op.WRITE_WITH_IMM, status: 0, qeIdx: 1, byteLen: 32 },
  ]);
  const rw = p.b.drv.pollWc(p.b.rcq);
  t.match(rw, [
    { wrId: 1n, qtype: Qtype.RQ, opcode: Op.RSP_SEND_IMM, status: 0, qeIdx: 0, byteLen: 64 },
    { wrId: 2n, qtype: Qtype.RQ, opcode: Op.RECV_IMM, status: 0, qeIdx: 1, byteLen: 32 },
  ]);
  t.equal(rw[0]?.imm, 0x1234_5678, "the immediate of the SEND, as posted");
  t.equal(rw[1]?.imm, 0xdead_beef, "the immediate of the WRITE");
});

t.test("SEND_WITH_INV invalidates the peer's MR and reports its rkey", async (t) => {
  const p = await pair();
  const src = await buffer(p.a.drv, p.a.pd, 16);
  const dst = await buffer(p.b.drv, p.b.pd, 4096);
  const victim = await buffer(p.b.drv, p.b.pd, 4096);
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge() });
  p.a.drv.postSend(p.a.qp, {
    opcode: "SEND_WITH_INV",
    wrId: 9n,
    signaled: true,
    invalidate: victim.stag,
    sgl: [src.sge()],
  });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 9n, opcode: Op.SEND_WITH_INV, status: 0 }]);
  const [rw] = p.b.drv.pollWc(p.b.rcq);
  t.match(rw, { wrId: 1n, opcode: Op.RECV_INV, status: 0, byteLen: 16 });
  t.equal(rw?.invRkey, victim.stag, "inv_rkey (big-endian in the CQE)");
  t.equal(p.b.dev.state.mrs.get(victim.stag >>> 8)?.valid, false);
  // the invalidated rkey no longer admits a WRITE
  p.a.drv.postSend(p.a.qp, {
    opcode: "WRITE",
    wrId: 10n,
    signaled: true,
    remoteAddr: victim.va,
    rkey: victim.stag,
    sgl: [src.sge()],
  });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 10n, status: S.RECV_STAG_INVALID_ERR }]);
});

t.test("WRITE: unsignaled completes silently, signaled gives a CQE; no RQE consumed", async (t) => {
  const p = await pair();
  const src = await buffer(p.a.drv, p.a.pd, 8192);
  const dst = await buffer(p.b.drv, p.b.pd, 3 * 4096);
  src.write(0, pattern(8192, 4));
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge(0, 16) });
  p.a.drv.postSend(p.a.qp, [
    { opcode: "WRITE", wrId: 20n, remoteAddr: dst.va + 4000n, rkey: dst.stag, sgl: [src.sge(0, 6000)] },
    {
      opcode: "WRITE",
      wrId: 21n,
      signaled: true,
      remoteAddr: dst.va + 10000n,
      rkey: dst.stag,
      sgl: [src.sge(6000, 100), src.sge(7000, 100)],
    },
  ]);
  await p.settle();
  t.same(dst.read(4000, 6000), pattern(8192, 4).subarray(0, 6000), "across two remote pages");
  t.same(dst.read(10000, 100), pattern(8192, 4).subarray(6000, 6100));
  t.same(dst.read(10100, 100), pattern(8192, 4).subarray(7000, 7100));
  const wcs = p.a.drv.pollWc(p.a.scq);
  t.equal(wcs.length, 1, "only the signaled WRITE completes");
  t.match(wcs[0], { wrId: 21n, opcode: Op.WRITE, qeIdx: 2, status: 0, byteLen: 200 });
  t.same(p.b.drv.pollWc(p.b.rcq), [], "a plain WRITE leaves the responder's RQ alone");
  t.equal(p.mqp(p.b)?.rq.ci, 0);
  t.equal(p.a.drv.sqCi(p.a.qp), 4, "sq_ci moves past both 2-WQEBB SQEs");
  t.match(
    p.a.host.ofKind("wqe").filter((e) => e.queue === "sq"),
    [
      { index: 0, signaled: false, status: 0 },
      { index: 2, signaled: true, status: 0 },
    ],
  );
});

t.test("IB_SIGNAL_ALL_WR: every WR completes", async (t) => {
  const p = await pair();
  const src = await buffer(p.a.drv, p.a.pd, 8);
  const dst = await buffer(p.b.drv, p.b.pd, 8);
  p.a.drv.setSigAll(p.a.qp);
  p.a.drv.postSend(p.a.qp, [
    { opcode: "WRITE", wrId: 1n, remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge()] },
    { opcode: "WRITE", wrId: 2n, remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge()] },
  ]);
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((w) => w.wrId),
    [1n, 2n],
  );
});

t.test("READ and READ_WITH_INV fetch the remote bytes", async (t) => {
  const p = await pair();
  const local = await buffer(p.a.drv, p.a.pd, 8192);
  const remote = await buffer(p.b.drv, p.b.pd, 8192);
  remote.write(0, pattern(8192, 5));
  const inv = await buffer(p.a.drv, p.a.pd, 64);
  p.a.drv.postSend(p.a.qp, [
    {
      opcode: "READ",
      wrId: 30n,
      signaled: true,
      sgl: [local.sge(100, 5000)],
      remoteAddr: remote.va + 3000n,
      rkey: remote.stag,
    },
    {
      opcode: "READ_WITH_INV",
      wrId: 31n,
      signaled: true,
      sgl: [inv.sge(0, 64)],
      remoteAddr: remote.va,
      rkey: remote.stag,
      invalidate: inv.stag,
    },
  ]);
  await p.settle();
  t.same(local.read(100, 5000), pattern(8192, 5).subarray(3000, 8000));
  t.same(inv.read(0, 64), pattern(8192, 5).subarray(0, 64));
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 30n, opcode: Op.READ, status: 0, qeIdx: 0, byteLen: 5000 },
    { wrId: 31n, opcode: Op.READ_WITH_INV, status: 0, qeIdx: 2, byteLen: 64 },
  ]);
  t.equal(p.a.dev.state.mrs.get(inv.stag >>> 8)?.valid, false, "READ_WITH_INV invalidated the local MR");
  t.equal(p.a.drv.sqCi(p.a.qp), 4, "each READ SQE is 2 WQEBBs (header + remote SGE)");
  t.same(p.b.drv.pollWc(p.b.rcq), []);
});

t.test("REG_MR with an inline MTT, then a remote WRITE through it", async (t) => {
  const p = await pair();
  const { mr } = await p.a.drv.allocFrmr(p.a.pd, 16);
  const pages = [p.a.drv.mem.alloc(4096), p.a.drv.mem.alloc(4096)].reverse();
  const key = ((mr.stag & ~0xff) | 0x5c) >>> 0;
  const iova = 0x5555_0000n;
  p.a.drv.postSend(
    p.a.qp,
    p.a.drv.fastRegWr(mr, {
      wrId: 40n,
      signaled: true,
      key,
      iova,
      length: 8192,
      access: Acc.LW | Acc.RW | Acc.RR,
      pages,
    }),
  );
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 40n, opcode: Op.REG_MR, status: 0, qeIdx: 0 }]);
  t.equal(p.a.drv.sqCi(p.a.qp), 2, "2 pages inline: 32 + 16 bytes, 2 WQEBBs");
  const m = p.a.dev.state.mrs.get(mr.stag >>> 8);
  t.match(m, { key: 0x5c, valid: true, va: iova, length: 8192n });
  // the device keeps the inline list: the MTT buffer may change afterwards
  p.a.drv.mem.setU64(mr.table as bigint, 0x9999_0000n);
  const src = await buffer(p.b.drv, p.b.pd, 16);
  src.write(0, pattern(16, 6));
  p.b.drv.postSend(p.b.qp, {
    opcode: "WRITE",
    wrId: 41n,
    signaled: true,
    remoteAddr: iova + 4090n,
    rkey: key,
    sgl: [src.sge()],
  });
  await p.settle();
  t.match(p.b.drv.pollWc(p.b.scq), [{ wrId: 41n, status: 0 }]);
  t.same(p.a.drv.mem.bytes((pages[0] as bigint) + 4090n, 6), Buffer.from(pattern(16, 6).subarray(0, 6)));
  t.same(p.a.drv.mem.bytes(pages[1] as bigint, 10), Buffer.from(pattern(16, 6).subarray(6)));
  // the old key no longer works
  p.b.drv.postSend(p.b.qp, {
    opcode: "WRITE",
    wrId: 42n,
    signaled: true,
    remoteAddr: iova,
    rkey: mr.stag,
    sgl: [src.sge()],
  });
  await p.settle();
  t.match(p.b.drv.pollWc(p.b.scq), [{ wrId: 42n, status: S.RECV_STAG_INVALID_ERR }]);
});

t.test(
  "REG_MR of fewer pages than its length needs (erdma with a ULP's page size above PAGE_SIZE): the trace says what was registered, and the WRITE past the first page names it",
  async (t) => {
    const p = await pair();
    const { mr } = await p.a.drv.allocFrmr(p.a.pd, 1);
    // ib_map_mr_sg(..., 128 KiB) over one contiguous chunk: one "page" for the whole region, but the
    // REG_MR SQE carries no page size, and the MR was created with 4 KiB pages
    const chunk = p.a.drv.mem.alloc(8192);
    const key = ((mr.stag & ~0xff) | 0x01) >>> 0;
    const iova = 0x7000_0000n;
    p.a.drv.postSend(
      p.a.qp,
      p.a.drv.fastRegWr(mr, {
        wrId: 60n,
        signaled: true,
        key,
        iova,
        length: 8192,
        access: Acc.RW,
        pages: [chunk],
      }),
    );
    await p.settle();
    t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 60n, opcode: Op.REG_MR, status: 0 }]);
    t.match(
      p.a.host.ofKind("wqe").find((e) => e.op === "REG_MR"),
      {
        mr: {
          stag: `0x${key.toString(16)}`,
          va: "0x70000000",
          length: 8192,
          pages: 1,
          pageSize: 4096,
          mtt: "inline",
        },
      },
      "the registration in the trace: 1 page of 4096 bytes for 8192 bytes",
    );
    const src = await buffer(p.b.drv, p.b.pd, 16);
    p.b.drv.postSend(p.b.qp, {
      opcode: "WRITE",
      wrId: 61n,
      signaled: true,
      remoteAddr: iova + 4096n,
      rkey: key,
      sgl: [src.sge()],
    });
    await p.settle();
    t.notMatch(p.b.drv.pollWc(p.b.scq), [{ wrId: 61n, status: 0 }], "the WRITE into the second page fails");
    const write = p.a.host.ofKind("wqe").find((e) => e.op === "WRITE");
    t.match(
      write?.reason,
      /has no page 1: registered with 1 page\(s\) of 4096 bytes for 8192 bytes at 0x70000000/,
      "the error says why",
    );
  },
);

t.test("REG_MR with the MTT in the FRMR's table, LOCAL_INV after", async (t) => {
  const p = await pair();
  const { mr } = await p.a.drv.allocFrmr(p.a.pd, 16);
  const pages = Array.from({ length: 6 }, () => p.a.drv.mem.alloc(4096)).reverse();
  const key = ((mr.stag & ~0xff) | 0x01) >>> 0;
  const iova = 0x6000_0000n;
  p.a.drv.postSend(p.a.qp, [
    p.a.drv.fastRegWr(mr, { wrId: 50n, signaled: true, key, iova, length: 6 * 4096, access: Acc.RW, pages }),
  ]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 50n, opcode: Op.REG_MR, status: 0 }]);
  t.equal(p.a.drv.sqCi(p.a.qp), 1, "6 pages go by table: a 1-WQEBB SQE");
  const src = await buffer(p.b.drv, p.b.pd, 64);
  src.write(0, pattern(64, 7));
  p.b.drv.postSend(p.b.qp, {
    opcode: "WRITE",
    wrId: 51n,
    signaled: true,
    remoteAddr: iova + 5n * 4096n - 32n,
    rkey: key,
    sgl: [src.sge()],
  });
  await p.settle();
  t.match(p.b.drv.pollWc(p.b.scq), [{ wrId: 51n, status: 0 }]);
  t.same(p.a.drv.mem.bytes((pages[4] as bigint) + 4064n, 32), Buffer.from(pattern(64, 7).subarray(0, 32)));
  t.same(p.a.drv.mem.bytes(pages[5] as bigint, 32), Buffer.from(pattern(64, 7).subarray(32)));
  // LOCAL_INV: the MR stops admitting access
  p.a.drv.postSend(p.a.qp, { opcode: "LOCAL_INV", wrId: 52n, signaled: true, invalidate: key });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 52n, opcode: Op.LOCAL_INV, status: 0, qeIdx: 1 }]);
  t.equal(p.a.dev.state.mrs.get(mr.stag >>> 8)?.valid, false);
  p.b.drv.postSend(p.b.qp, {
    opcode: "WRITE",
    wrId: 53n,
    signaled: true,
    remoteAddr: iova,
    rkey: key,
    sgl: [src.sge()],
  });
  await p.settle();
  t.match(p.b.drv.pollWc(p.b.scq), [{ wrId: 53n, status: S.RECV_STAG_INVALID_ERR }]);
});

t.test("atomics on a device that advertises them", async (t) => {
  const p = await pair({ profile: atomicProfile });
  t.ok((p.a.drv.attrs?.capFlags ?? 0) & (1 << 7), "QUERY_DEVICE advertises ATOMIC");
  const target = await buffer(p.b.drv, p.b.pd, 64, Acc.RA | Acc.LW);
  const result = await buffer(p.a.drv, p.a.pd, 64);
  const u64 = (v: bigint) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, v, true);
    return b;
  };
  const get = (b: typeof target, off: number) => new DataView(b.read(off, 8).buffer).getBigUint64(0, true);
  target.write(0, u64(100n));
  target.write(8, u64(0xffff_ffff_ffff_fff0n));
  p.a.drv.postSend(p.a.qp, [
    {
      opcode: "ATOMIC_CAS",
      wrId: 60n,
      signaled: true,
      remoteAddr: target.va,
      rkey: target.stag,
      compare: 100n,
      swap: 555n,
      sgl: [result.sge(0, 8)],
    },
    {
      opcode: "ATOMIC_CAS",
      wrId: 61n,
      signaled: true,
      remoteAddr: target.va,
      rkey: target.stag,
      compare: 100n,
      swap: 777n,
      sgl: [result.sge(8, 8)],
    },
    {
      opcode: "ATOMIC_FAA",
      wrId: 62n,
      signaled: true,
      remoteAddr: target.va + 8n,
      rkey: target.stag,
      add: 0x20n,
      sgl: [result.sge(16, 8)],
    },
  ]);
  await p.settle();
  t.equal(get(target, 0), 555n, "CAS with a matching compare swapped");
  t.equal(get(result, 0), 100n, "and returned the old value");
  t.equal(get(result, 8), 555n, "the second CAS returned the current value");
  t.equal(get(target, 0), 555n, "and did not swap");
  t.equal(get(target, 8), 0x10n, "FAA wraps modulo 2^64");
  t.equal(get(result, 16), 0xffff_ffff_ffff_fff0n, "FAA returned the old value");
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 60n, opcode: Op.ATOMIC_CAS, status: 0, qeIdx: 0, byteLen: 8 },
    { wrId: 61n, opcode: Op.ATOMIC_CAS, status: 0, qeIdx: 2, byteLen: 8 },
    { wrId: 62n, opcode: Op.ATOMIC_FAA, status: 0, qeIdx: 4, byteLen: 8 },
  ]);
});

t.test("inline data and 6-SGE SQEs across the end of the SQ ring", async (t) => {
  // max_send_wr 4: a 16-WQEBB SQ
  const p = await pair({ maxSendWr: 4 });
  t.equal(p.a.qp.sqSize, 16);
  const src = await buffer(p.a.drv, p.a.pd, 4096);
  const dst = await buffer(p.b.drv, p.b.pd, 4096);
  src.write(0, pattern(4096, 8));
  const writes = Array.from({ length: 7 }, (_, i) => ({
    opcode: "WRITE" as const,
    wrId: BigInt(i),
    signaled: true,
    remoteAddr: dst.va + BigInt(i * 8),
    rkey: dst.stag,
    sgl: [src.sge(i * 8, 8)],
  }));
  t.same(p.a.drv.postSend(p.a.qp, writes).indices, [0, 2, 4, 6, 8, 10, 12]);
  await p.settle();
  t.equal(p.a.drv.pollWc(p.a.scq).length, 7);
  t.equal(p.a.drv.sqCi(p.a.qp), 14);
  const inline = [pattern(40, 9), pattern(50, 10), pattern(6, 11)];
  p.b.drv.postRecvWr(p.b.qp, { wrId: 70n, sge: dst.sge(1000, 200) });
  const sgl = Array.from({ length: 6 }, (_, i) => src.sge(1000 + i * 100, 10 + i));
  const r = p.a.drv.postSend(p.a.qp, [
    { opcode: "SEND", wrId: 71n, signaled: true, inline },
    { opcode: "WRITE", wrId: 72n, signaled: true, remoteAddr: dst.va + 2000n, rkey: dst.stag, sgl },
    {
      opcode: "WRITE",
      wrId: 73n,
      signaled: true,
      remoteAddr: dst.va + 3000n,
      rkey: dst.stag,
      inline: [pattern(96, 12)],
    },
  ]);
  t.same(r.indices, [14, 18, 22], "16 + 96 bytes and 32 + 6 x 16 bytes are 4 WQEBBs each");
  // the inline SEND occupies slots 14, 15, 0, 1 of the ring
  const hdr = p.a.drv.mem.u64(p.a.qp.sqBuf + 14n * 32n);
  t.equal(Number((hdr >> 52n) & 7n), 3, "WQEBB_CNT 3 (4 WQEBBs)");
  t.equal(Number((hdr >> 56n) & 0xffn), 96, "SGL_LEN = inline bytes");
  t.equal(Number((hdr >> 25n) & 1n), 1, "INLINE");
  await p.settle();
  t.same(
    dst.read(1000, 96),
    new Uint8Array([...pattern(40, 9), ...pattern(50, 10), ...pattern(6, 11)]),
    "the inline bytes, read across the ring's end",
  );
  const want = new Uint8Array(sgl.reduce((n, s) => n + s.length, 0));
  let at = 0;
  for (const [i, s] of sgl.entries()) {
    want.set(pattern(4096, 8).subarray(1000 + i * 100, 1000 + i * 100 + s.length), at);
    at += s.length;
  }
  t.same(dst.read(2000, want.length), want, "six SGEs gathered in order");
  t.same(dst.read(3000, 96), pattern(96, 12), "96 inline bytes of a WRITE");
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 71n, qeIdx: 14, status: 0, byteLen: 96, opcode: Op.SEND },
    { wrId: 72n, qeIdx: 18, status: 0, byteLen: want.length, opcode: Op.WRITE },
    { wrId: 73n, qeIdx: 22, status: 0, byteLen: 96, opcode: Op.WRITE },
  ]);
  t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 70n, byteLen: 96, opcode: Op.RECEIVE }]);
  t.equal(p.a.drv.sqCi(p.a.qp), 26);
});

t.test("more than 96 inline bytes or 6 SGEs: the driver refuses the WR (EINVAL)", async (t) => {
  const p = await pair();
  const src = await buffer(p.a.drv, p.a.pd, 256);
  const before = p.a.qp.sqPi;
  t.match(
    p.a.drv.postSend(p.a.qp, [
      { opcode: "SEND", inline: [pattern(8, 1)] },
      { opcode: "SEND", inline: [pattern(90, 1), pattern(7, 2)] },
    ]),
    { ret: "EINVAL", bad: 1 },
  );
  t.match(
    p.a.drv.postSend(p.a.qp, {
      opcode: "SEND",
      sgl: Array.from({ length: 7 }, () => src.sge(0, 1)),
    }),
    { ret: "EINVAL", bad: 0 },
  );
  t.equal(p.a.qp.sqPi, before + 1, "only the first WR was posted");
});

t.test("CQEs across a CQ wrap: owner flips, qe_idx and qpn stay right", async (t) => {
  const { p, src, dst } = await pairWithBuffers({ cqDepth: 8 });
  const post = (from: number, n: number) =>
    p.a.drv.postSend(
      p.a.qp,
      Array.from({ length: n }, (_, i) => ({
        opcode: "WRITE" as const,
        wrId: BigInt(from + i),
        signaled: true,
        remoteAddr: dst.va,
        rkey: dst.stag,
        sgl: [src.sge(0, from + i + 1)],
      })),
    );
  post(0, 6);
  await p.settle();
  const first = p.a.drv.pollWc(p.a.scq);
  post(6, 7);
  await p.settle();
  const second = p.a.drv.pollWc(p.a.scq);
  const all = [...first, ...second];
  t.equal(all.length, 13);
  for (const [i, w] of all.entries()) {
    t.match(
      w,
      { wrId: BigInt(i), cqIndex: i, owner: i < 8 ? 1 : 0, qeIdx: i * 2, qpn: p.a.qp.qpn, byteLen: i + 1 },
      `CQE ${i}`,
    );
  }
  t.match(
    p.a.host.ofKind("cqe").filter((e) => e.cq === p.a.scq.cqn),
    all.map((_, i) => ({ index: i, owner: i < 8 ? 1 : 0 })),
  );
});

t.test(
  "a SEND with no RQE at the peer terminates the connection (RFC 5041 7.2, no untagged buffer)",
  async (t) => {
    const p = await pair();
    const src = await buffer(p.a.drv, p.a.pd, 32);
    p.a.drv.postRecvWr(p.a.qp, { wrId: 90n, sge: src.sge() });
    p.a.drv.postSend(p.a.qp, [
      { opcode: "SEND", wrId: 80n, signaled: true, sgl: [src.sge()] },
      { opcode: "SEND", wrId: 81n, signaled: true, sgl: [src.sge(0, 4)] },
    ]);
    await p.settle();
    t.match(p.a.drv.pollWc(p.a.scq), [
      { wrId: 80n, status: S.RECV_WQE_FORMAT_ERR },
      { wrId: 81n, status: S.FLUSH_ERR },
    ]);
    t.match(
      p.a.drv.pollWc(p.a.rcq),
      [{ wrId: 90n, status: S.FLUSH_ERR }],
      "the requester's receive flushed too",
    );
    t.equal(p.mqp(p.a)?.stateName, "ERROR");
    t.match(p.mqp(p.b)?.stateName, /^ERROR/, "the responder terminated");
    t.ok(
      p.b.host.ofKind("state").some((e) => e.id === p.b.qp.qpn && /no untagged buffer/.test(e.to)),
      "the responder's ERROR says why",
    );
  },
);

t.test("recvNotPosted wait: a SEND waits for the peer's RQE, then completes", async (t) => {
  const p = await pair({ profile: { ...profileReflush, recvNotPosted: "wait" } });
  const src = await buffer(p.a.drv, p.a.pd, 32);
  const dst = await buffer(p.b.drv, p.b.pd, 32);
  src.write(0, pattern(32, 13));
  p.a.drv.postSend(p.a.qp, [
    { opcode: "SEND", wrId: 80n, signaled: true, sgl: [src.sge()] },
    { opcode: "WRITE", wrId: 81n, signaled: true, remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge(0, 4)] },
  ]);
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), [], "nothing completes: the SEND waits, the WRITE behind it");
  t.match(p.a.host.ofKind("wait"), [
    { qpn: p.a.qp.qpn, queue: "sq", index: 0, reason: new RegExp(`no RQE posted at .* QP ${p.b.qp.qpn}`) },
  ]);
  t.equal(p.mqp(p.a)?.stateName, "RTS");
  p.b.drv.postRecvWr(p.b.qp, { wrId: 82n, sge: dst.sge() });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 80n, status: 0 },
    { wrId: 81n, status: 0 },
  ]);
  t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 82n, status: 0, byteLen: 32 }]);
  t.same(dst.read(4, 28), pattern(32, 13).subarray(4), "the SEND landed first, the WRITE after it");
});

t.test("a SEND waits for its peer to reach RTS", async (t) => {
  const p = await pair({ idle: true });
  const src = await buffer(p.a.drv, p.a.pd, 8);
  const dst = await buffer(p.b.drv, p.b.pd, 8);
  const tuple = { sip: 0x0a00_0001, dip: 0x0a00_0001, sendNxt: 1, recvNxt: 1 };
  await p.a.drv.modifyQp(p.a.qp, QpState.RTS, { ...tuple, cookie: p.b.qp.cookie, sport: 1, dport: 2 });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge() });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 2n, signaled: true, sgl: [src.sge()] });
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), []);
  t.match(p.a.host.ofKind("wait"), [{ reason: "peer not in RTS" }]);
  await p.b.drv.modifyQp(p.b.qp, QpState.RTS, { ...tuple, cookie: p.a.qp.cookie, sport: 2, dport: 1 });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 2n, status: 0 }]);
  t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 1n, status: 0 }]);
});

t.test("a QP whose tuple mirrors nobody's never sends", async (t) => {
  const p = await pair({ idle: true });
  const src = await buffer(p.a.drv, p.a.pd, 8);
  const tuple = { sip: 0x0a00_0001, dip: 0x0a00_0002, sendNxt: 1, recvNxt: 1, cookie: 0 };
  await p.a.drv.modifyQp(p.a.qp, QpState.RTS, { ...tuple, sport: 1, dport: 2 });
  // B's tuple is A's with one port different: not the mirror
  await p.b.drv.modifyQp(p.b.qp, QpState.RTS, {
    ...tuple,
    sip: tuple.dip,
    dip: tuple.sip,
    sport: 2,
    dport: 3,
  });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: src.sge() });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 2n, signaled: true, sgl: [src.sge()] });
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), []);
  t.same(p.b.drv.pollWc(p.b.rcq), []);
  t.equal(p.mqp(p.b)?.rq.ci, 0, "B's RQE untouched");
});

t.test("two devices on one fabric", async (t) => {
  const p = await pair({ fabric: true });
  t.not(p.a.dev, p.b.dev);
  const a = await buffer(p.a.drv, p.a.pd, 8192);
  const b = await buffer(p.b.drv, p.b.pd, 8192);
  a.write(0, pattern(8192, 14));
  b.write(0, pattern(8192, 15));
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: b.sge(0, 100) });
  p.a.drv.postSend(p.a.qp, [
    { opcode: "SEND", wrId: 2n, signaled: true, sgl: [a.sge(0, 100)] },
    {
      opcode: "WRITE",
      wrId: 3n,
      signaled: true,
      remoteAddr: b.va + 4096n,
      rkey: b.stag,
      sgl: [a.sge(200, 300)],
    },
  ]);
  await p.settle();
  t.same(b.read(0, 100), pattern(8192, 14).subarray(0, 100), "SEND: A's bytes in B's memory");
  t.same(b.read(4096, 300), pattern(8192, 14).subarray(200, 500), "WRITE: A's bytes in B's memory");
  p.b.drv.postSend(p.b.qp, {
    opcode: "READ",
    wrId: 4n,
    signaled: true,
    sgl: [b.sge(6000, 50)],
    remoteAddr: a.va + 7000n,
    rkey: a.stag,
  });
  await p.settle();
  t.same(b.read(6000, 50), pattern(8192, 14).subarray(7000, 7050), "READ: B pulled A's bytes");
  t.same(a.read(0, 8192), pattern(8192, 14), "A's buffer untouched by all of it");
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 2n, status: 0, qpn: p.a.qp.qpn },
    { wrId: 3n, status: 0 },
  ]);
  t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 1n, status: 0, qpn: p.b.qp.qpn, byteLen: 100 }]);
  t.match(p.b.drv.pollWc(p.b.scq), [{ wrId: 4n, status: 0, byteLen: 50, opcode: Op.READ }]);
  t.match(
    p.b.host.ofKind("wqe").find((e) => e.queue === "rq"),
    { dev: "devB", peer: "devA" },
    "B's receive was fed by devA",
  );
  const dataCqes = (h: typeof p.a.host) => h.ofKind("cqe").filter((e) => e.cq !== "cmdq");
  t.same(
    dataCqes(p.a.host).map((e) => e.cq),
    [p.a.scq.cqn, p.a.scq.cqn],
    "devA wrote only its sender's two CQEs",
  );
  t.same(
    dataCqes(p.b.host).map((e) => e.cq),
    [p.b.rcq.cqn, p.b.scq.cqn],
    "devB wrote its receive and its READ CQE",
  );
});

t.test("solicited events: a CQ armed for solicited completions wakes only for SE", async (t) => {
  const p = await pair();
  const src = await buffer(p.a.drv, p.a.pd, 8);
  const dst = await buffer(p.b.drv, p.b.pd, 64);
  p.b.drv.notifyCq(p.b.rcq, true);
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge(0, 8) });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 2n, sge: dst.sge(8, 8) });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 3n, sgl: [src.sge()] });
  await p.settle();
  t.equal(p.b.rcq.events, 0, "an unsolicited SEND does not wake a solicited-armed CQ");
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 4n, solicited: true, sgl: [src.sge()] });
  await p.settle();
  t.equal(p.b.rcq.events, 1, "a solicited SEND does");
  t.equal(p.b.drv.pollWc(p.b.rcq).length, 2);
});

t.test("a fenced SEND after a READ runs after it", async (t) => {
  const p = await pair();
  const local = await buffer(p.a.drv, p.a.pd, 64);
  const remote = await buffer(p.b.drv, p.b.pd, 64);
  remote.write(0, pattern(64, 16));
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: remote.sge(32, 32) });
  p.a.drv.postSend(p.a.qp, [
    {
      opcode: "READ",
      wrId: 2n,
      signaled: true,
      sgl: [local.sge(0, 32)],
      remoteAddr: remote.va,
      rkey: remote.stag,
    },
    { opcode: "SEND", wrId: 3n, signaled: true, fence: true, sgl: [local.sge(0, 32)] },
  ]);
  const hdr = p.a.drv.mem.u64(p.a.qp.sqBuf + 2n * 32n);
  t.equal(Number((hdr >> 24n) & 1n), 1, "FENCE set in the SEND's header");
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 2n, status: 0 },
    { wrId: 3n, status: 0 },
  ]);
  t.same(remote.read(32, 32), pattern(64, 16).subarray(0, 32), "the SEND carried what the READ fetched");
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
