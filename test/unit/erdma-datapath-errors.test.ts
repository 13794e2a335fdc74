/**
 * Error paths of the data path: a WQE that fails gives its error completion (even unsignaled, IB
 * 10.7.3.1) with the erdma_wc_status the driver maps (erdma_cq.c:68-107), the QP goes to ERROR
 * with a QP_FATAL async event naming it (erdma_eq.c:30-80), and the WRs behind it are flushed, in
 * order, on their own CQs. Remote access errors take the responder's QP down too.
 */
import t, { type Test } from "tap";
import { buffer, pair, pairWithBuffers, pattern, type Side } from "../doubles/erdma-dp-fixture.ts";
import { Acc } from "../doubles/erdma-driver.ts";
import { ErdmaOp as Op, Qtype, Syndrome as S, type SendWr } from "../doubles/erdma-sqe.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

/** ERDMA_AE_TYPE_QP_FATAL_EVENT (erdma_hw.h:550) */
const QP_FATAL = 0;

type Pair = Awaited<ReturnType<typeof pair>>;

function fatalFor(side: Side): number {
  return side.drv.aeqEvents.filter((e) => e.type === QP_FATAL && e.data0 === side.qp.qpn).length;
}

/**
 * Posts an RQE at each side (to see the receive queues flushed), then `bad` followed by two
 * unsignaled WRITEs, and checks the SQ's completions: the error, then both WRITEs flushed.
 */
async function sqError(
  t: Test,
  p: Pair,
  bad: SendWr,
  status: number,
  opts: {
    remote?: boolean;
    patch?: Parameters<Side["drv"]["postSend"]>[2];
    badOpcode?: number;
    /** post the bad SQE as a bare header of this opcode (postSendRaw), not from `bad` */
    raw?: number;
  } = {},
) {
  const ok = await buffer(p.b.drv, p.b.pd, 64);
  const src = await buffer(p.a.drv, p.a.pd, 64);
  p.a.drv.postRecvWr(p.a.qp, { wrId: 0xa1n, sge: src.sge() });
  const follow = (wrId: bigint): SendWr => ({
    opcode: "WRITE",
    wrId,
    remoteAddr: ok.va,
    rkey: ok.stag,
    sgl: [src.sge(0, 8)],
  });
  const raw = opts.raw;
  const r1 =
    raw === undefined
      ? p.a.drv.postSend(p.a.qp, { ...bad, wrId: 1n, signaled: false }, opts.patch ?? {})
      : (() => {
          const at = p.a.qp.sqPi;
          p.a.drv.postSendRaw(p.a.qp, 1, raw);
          return { ret: 0, indices: [at] };
        })();
  const r2 = p.a.drv.postSend(p.a.qp, [follow(2n), follow(3n)]);
  t.equal(r1.ret, 0);
  t.equal(r2.ret, 0);
  const indices = [...r1.indices, ...r2.indices];
  await p.settle();
  const wcs = p.a.drv.pollWc(p.a.scq);
  t.match(
    wcs,
    [
      {
        wrId: raw === undefined ? 1n : undefined,
        status,
        qtype: Qtype.SQ,
        qpn: p.a.qp.qpn,
        qeIdx: indices[0],
      },
      { wrId: 2n, status: S.FLUSH_ERR, qtype: Qtype.SQ, qpn: p.a.qp.qpn, qeIdx: indices[1] },
      { wrId: 3n, status: S.FLUSH_ERR, qtype: Qtype.SQ, qpn: p.a.qp.qpn, qeIdx: indices[2] },
    ],
    "the error (although unsignaled), then each WR behind it flushed, in order",
  );
  t.equal(wcs.length, 3);
  if (opts.badOpcode !== undefined) t.equal(wcs[0]?.opcode, opts.badOpcode);
  t.same(ok.read(0, 8), new Uint8Array(8), "the WRITEs behind the error did not run");
  t.match(
    p.a.drv.pollWc(p.a.rcq),
    [{ wrId: 0xa1n, status: S.FLUSH_ERR, qtype: Qtype.RQ }],
    "A's RQE flushed",
  );
  t.equal(p.mqp(p.a)?.stateName, "ERROR");
  t.equal(fatalFor(p.a), 1, "one QP_FATAL for the requester");
  if (opts.remote) {
    t.equal(p.mqp(p.b)?.stateName, "ERROR", "a remote error takes the responder's QP down");
    t.equal(fatalFor(p.b), 1, "and raises its QP_FATAL");
  } else {
    t.equal(p.mqp(p.b)?.stateName, "RTS", "a local error leaves the peer alone");
    t.equal(fatalFor(p.b), 0);
  }
  t.ok(
    p.a.host.ofKind("flush").some((e) => e.qpn === p.a.qp.qpn && e.queue === "sq" && e.count === 2),
    "a flush trace event for the two WRs",
  );
  return wcs;
}

t.test("local access errors", async (t) => {
  await t.test("bad lkey", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.b.drv.postRecvWr(p.b.qp, { wrId: 9n, sge: dst.sge() });
    await sqError(
      t,
      p,
      { opcode: "SEND", sgl: [{ ...src.sge(), lkey: (src.stag ^ 0x11) >>> 0 }] },
      S.SEND_STAG_INVALID_ERR,
    );
    t.equal(p.mqp(p.b)?.rq.ci, 0, "the peer's RQE was not consumed");
  });
  await t.test("an MR of another PD", async (t) => {
    const p = await pair();
    const other = await buffer(p.a.drv, p.a.drv.allocPd(), 64);
    const dst = await buffer(p.b.drv, p.b.pd, 64);
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: dst.stag, sgl: [other.sge()] },
      S.SEND_PDID_ERR,
    );
  });
  await t.test("a READ into an MR without local write", async (t) => {
    const p = await pair();
    const ro = await buffer(p.a.drv, p.a.pd, 64, Acc.RR);
    const remote = await buffer(p.b.drv, p.b.pd, 64);
    remote.write(0, pattern(64, 1));
    await sqError(
      t,
      p,
      { opcode: "READ", sgl: [ro.sge()], remoteAddr: remote.va, rkey: remote.stag },
      S.SEND_RIGHT_VIOLATION_ERR,
    );
    t.same(ro.read(0, 64), new Uint8Array(64), "nothing written to the read-only MR");
  });
  await t.test("an SGE beyond its MR", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge(60, 8)] },
      S.SEND_ADDR_VIOLATION_ERR,
    );
  });
  await t.test("REG_MR of an MR that is not an FRMR", async (t) => {
    const p = await pair();
    const normal = await buffer(p.a.drv, p.a.pd, 64);
    await sqError(
      t,
      p,
      {
        opcode: "REG_MR",
        key: normal.stag,
        iova: 0n,
        length: 4096,
        access: Acc.RW,
        pages: [normal.pages[0] ?? 0n],
      },
      S.SEND_STAG_INVALID_ERR,
      { badOpcode: Op.REG_MR },
    );
  });
  await t.test("LOCAL_INV of a stag that does not exist", async (t) => {
    const p = await pair();
    await sqError(t, p, { opcode: "LOCAL_INV", invalidate: 0x7777_7700 }, S.SEND_STAG_INVALID_ERR);
  });
});

t.test("remote access errors", async (t) => {
  await t.test("a WRITE with a bad rkey", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb1n, sge: dst.sge() });
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: (dst.stag ^ 0x5a) >>> 0, sgl: [src.sge(0, 8)] },
      S.RECV_STAG_INVALID_ERR,
      { remote: true },
    );
    t.match(
      p.b.drv.pollWc(p.b.rcq),
      [{ wrId: 0xb1n, status: S.FLUSH_ERR, qpn: p.b.qp.qpn }],
      "B's RQE flushed",
    );
  });
  await t.test("a WRITE into an MR of another PD", async (t) => {
    const p = await pair();
    const src = await buffer(p.a.drv, p.a.pd, 64);
    const dst = await buffer(p.b.drv, p.b.drv.allocPd(), 64);
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge(0, 8)] },
      S.RECV_PDID_ERR,
      { remote: true },
    );
  });
  await t.test("a WRITE into an MR without remote write", async (t) => {
    const p = await pair();
    const src = await buffer(p.a.drv, p.a.pd, 64);
    const dst = await buffer(p.b.drv, p.b.pd, 64, Acc.LW | Acc.RR);
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge(0, 8)] },
      S.RECV_RIGHT_VIOLATION_ERR,
      { remote: true },
    );
    t.same(dst.read(0, 8), new Uint8Array(8));
  });
  await t.test("a READ from an MR without remote read", async (t) => {
    const p = await pair();
    const local = await buffer(p.a.drv, p.a.pd, 64);
    const remote = await buffer(p.b.drv, p.b.pd, 64, Acc.LW | Acc.RW);
    await sqError(
      t,
      p,
      { opcode: "READ", sgl: [local.sge(0, 8)], remoteAddr: remote.va, rkey: remote.stag },
      S.RECV_RIGHT_VIOLATION_ERR,
      { remote: true },
    );
  });
  await t.test("a WRITE beyond the remote MR", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va + 60n, rkey: dst.stag, sgl: [src.sge(0, 8)] },
      S.RECV_ADDR_VIOLATION_ERR,
      { remote: true },
    );
  });
});

t.test("receive-side errors of a SEND", async (t) => {
  await t.test("an RQE too small for the message", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb1n, sge: dst.sge(0, 16) });
    p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb2n, sge: dst.sge(16, 48) });
    await sqError(t, p, { opcode: "SEND", sgl: [src.sge(0, 32)] }, S.GENERAL_ERR, { remote: true });
    t.match(
      p.b.drv.pollWc(p.b.rcq),
      [
        { wrId: 0xb1n, status: S.RECV_WQE_FORMAT_ERR, qtype: Qtype.RQ, qeIdx: 0, qpn: p.b.qp.qpn },
        { wrId: 0xb2n, status: S.FLUSH_ERR, qtype: Qtype.RQ, qeIdx: 1 },
      ],
      "the responder's RQE fails (INVALID_RQE), the next one is flushed",
    );
    t.same(dst.read(0, 64), new Uint8Array(64), "no bytes landed");
  });
  await t.test("an RQE with a bad lkey", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb1n, sge: { ...dst.sge(), lkey: 0x4242_4200 } });
    await sqError(t, p, { opcode: "SEND", sgl: [src.sge(0, 32)] }, S.RECV_STAG_INVALID_ERR, { remote: true });
    t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 0xb1n, status: S.RECV_STAG_INVALID_ERR, qtype: Qtype.RQ }]);
  });
  await t.test("an RQE buffer without local write", async (t) => {
    const p = await pair();
    const src = await buffer(p.a.drv, p.a.pd, 64);
    const dst = await buffer(p.b.drv, p.b.pd, 64, Acc.RR);
    p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb1n, sge: dst.sge() });
    await sqError(t, p, { opcode: "SEND", sgl: [src.sge(0, 32)] }, S.RECV_RIGHT_VIOLATION_ERR, {
      remote: true,
    });
    t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 0xb1n, status: S.RECV_RIGHT_VIOLATION_ERR }]);
  });
});

t.test("SQE format errors", async (t) => {
  const hdrWith = (hdr: bigint, [hi, lo]: [number, number], v: number) => {
    const mask = ((1n << BigInt(hi - lo + 1)) - 1n) << BigInt(lo);
    return (hdr & ~mask) | ((BigInt(v) << BigInt(lo)) & mask);
  };
  const cases: Array<{
    name: string;
    wr: (p: Pair, src: Awaited<ReturnType<typeof buffer>>) => SendWr;
    patch?: NonNullable<Parameters<Side["drv"]["postSend"]>[2]>["patch"];
    opcode: number;
    raw?: boolean;
  }> = [
    {
      name: "an opcode the device does not know",
      wr: (_p, src) => ({ opcode: "SEND", sgl: [src.sge(0, 8)] }),
      patch: ({ hdr }) => hdrWith(hdr, [31, 27], 7),
      opcode: 7,
    },
    {
      name: "a length field that disagrees with the SGL",
      wr: (_p, src) => ({ opcode: "SEND", sgl: [src.sge(0, 8)] }),
      patch: ({ put }) => {
        put(12, new Uint8Array([9, 0, 0, 0]));
        return undefined;
      },
      opcode: Op.SEND,
    },
    {
      name: "seven SGEs",
      wr: (_p, src) => ({ opcode: "SEND", sgl: [src.sge(0, 8)] }),
      patch: ({ hdr }) => hdrWith(hdr, [63, 56], 7),
      opcode: Op.SEND,
    },
    {
      name: "97 inline bytes",
      wr: () => ({ opcode: "SEND", inline: [pattern(96, 1)] }),
      patch: ({ hdr }) => hdrWith(hdr, [63, 56], 97),
      opcode: Op.SEND,
    },
    {
      name: "a READ of one WQEBB (no source SGE)",
      wr: (p, src) => ({ opcode: "READ", sgl: [src.sge(0, 8)], remoteAddr: 0n, rkey: p.b.pd }),
      opcode: Op.READ,
      raw: true,
    },
    {
      name: "REG_MR with MTT type 2",
      wr: () => ({ opcode: "REG_MR", key: 0x100, iova: 0n, length: 4096, access: 0, pages: [0x1000n] }),
      patch: ({ put }) => {
        // attrs @24: MTT_TYPE bits 7:6 = 2, ACCESS LR, MTT_CNT 1
        put(24, new Uint8Array([0x80 | 0x04, 0x10, 0, 0]));
        return undefined;
      },
      opcode: Op.REG_MR,
    },
    {
      name: "an atomic on a device that does not advertise atomics",
      wr: (_p, src) => ({
        opcode: "ATOMIC_FAA",
        remoteAddr: 0n,
        rkey: src.stag,
        add: 1n,
        sgl: [src.sge(0, 8)],
      }),
      patch: () => undefined,
      opcode: Op.ATOMIC_FAA,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const p = await pair();
      t.notOk((p.a.drv.attrs?.capFlags ?? 0) & (1 << 7), "ATOMIC not advertised");
      const src = await buffer(p.a.drv, p.a.pd, 64);
      p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb1n, sge: (await buffer(p.b.drv, p.b.pd, 64)).sge() });
      await sqError(t, p, c.wr(p, src), S.SEND_WQE_FORMAT_ERR, {
        ...(c.patch ? { patch: { patch: c.patch } } : {}),
        ...(c.raw ? { raw: c.opcode } : {}),
        badOpcode: c.opcode,
      });
      t.same(p.b.drv.pollWc(p.b.rcq), [], "the peer saw nothing");
      t.ok(
        p.a.host
          .ofKind("wqe")
          .some((e) => e.queue === "sq" && e.status === S.SEND_WQE_FORMAT_ERR && e.reason),
        "the trace says why",
      );
    });
  }
});

/**
 * Buffers outside what the guest mapped for DMA: the device never reaches them (the guest memory
 * refuses the access, nothing is read or written beyond it), a dma-fault event names the access,
 * and the WQE completes in error (GENERAL_ERR) like any failed WQE, rather than stalling its queue.
 */
t.test("buffers outside what the guest mapped: an error completion, no access", async (t) => {
  /** outside the fixture's guest memory: never mapped */
  const HOLE = 0x9_0000_0000n;
  const contained = (t: Test, side: Side, context: RegExp) => {
    t.ok(
      side.host.ofKind("dma-fault").some((e) => context.test(String(e.context))),
      `a dma-fault event names the access (${context})`,
    );
    t.ok(side.host.dma.faults.length > 0, "the guest memory refused the access");
    t.equal(side.host.dma.outOfBounds, 0, "nothing was read or written outside guest memory");
    t.same(side.host.ofKind("internal-error"), [], "no internal error");
  };

  await t.test("an SGE of the local DMA lkey pointing outside guest memory", async (t) => {
    const p = await pair();
    const dst = await buffer(p.b.drv, p.b.pd, 64);
    p.b.drv.postRecvWr(p.b.qp, { wrId: 9n, sge: dst.sge() });
    const lkey = p.a.drv.attrs?.localDmaKey ?? 0;
    await sqError(t, p, { opcode: "SEND", sgl: [{ addr: HOLE, length: 16, lkey }] }, S.GENERAL_ERR);
    t.equal(p.mqp(p.b)?.rq.ci, 0, "the peer's RQE was not consumed");
    contained(t, p.a, /^QP \d+ SGE$/);
  });
  await t.test("an MR whose pages the guest unmapped after registering it", async (t) => {
    const p = await pair();
    const src = await buffer(p.a.drv, p.a.pd, 8192);
    const dst = await buffer(p.b.drv, p.b.pd, 64);
    p.a.host.dma.unmap(src.pages[1] as bigint, 4096);
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge(4000, 200)] },
      S.GENERAL_ERR,
    );
    t.same(dst.read(0, 64), new Uint8Array(64), "nothing landed at the responder");
    contained(t, p.a, /^QP \d+ SGE$/);
  });
  await t.test("a WRITE into a responder's MR whose pages are unmapped", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.b.host.dma.unmap(dst.pages[0] as bigint, 4096);
    await sqError(
      t,
      p,
      { opcode: "WRITE", remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge()] },
      S.GENERAL_ERR,
      { remote: true },
    );
    contained(t, p.b, /WRITE sink$/);
  });
  await t.test("a SEND into an RQE whose buffer is unmapped", async (t) => {
    const p = await pair();
    const src = await buffer(p.a.drv, p.a.pd, 64);
    const lkey = p.b.drv.attrs?.localDmaKey ?? 0;
    p.b.drv.postRecvWr(p.b.qp, { wrId: 0xb1n, sge: { addr: HOLE, length: 64, lkey } });
    await sqError(t, p, { opcode: "SEND", sgl: [src.sge(0, 32)] }, S.GENERAL_ERR, { remote: true });
    t.match(
      p.b.drv.pollWc(p.b.rcq),
      [{ wrId: 0xb1n, status: S.GENERAL_ERR, qtype: Qtype.RQ, qeIdx: 0, qpn: p.b.qp.qpn }],
      "the responder's RQE completes in error too",
    );
    contained(t, p.b, /RQE$/);
  });
  await t.test("a READ from a responder's MR whose pages are unmapped", async (t) => {
    const p = await pair();
    const sink = await buffer(p.a.drv, p.a.pd, 64);
    const remote = await buffer(p.b.drv, p.b.pd, 64);
    p.b.host.dma.unmap(remote.pages[0] as bigint, 4096);
    await sqError(
      t,
      p,
      { opcode: "READ", sgl: [sink.sge()], remoteAddr: remote.va, rkey: remote.stag },
      S.GENERAL_ERR,
      { remote: true },
    );
    t.same(sink.read(0, 64), new Uint8Array(64), "nothing was written into the sink");
    contained(t, p.b, /READ source$/);
  });
  await t.test("a doorbell for an SQ the guest unmapped: the SQE fetch fails, the QP errs", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.a.host.dma.unmap(p.a.qp.sqBuf, p.a.qp.sqSize * 32);
    const r = p.a.drv.postSend(p.a.qp, {
      opcode: "WRITE",
      wrId: 1n,
      remoteAddr: dst.va,
      rkey: dst.stag,
      sgl: [src.sge(0, 8)],
    });
    t.equal(r.ret, 0);
    await p.settle();
    t.match(
      p.a.drv.pollWc(p.a.scq),
      [{ wrId: 1n, status: S.GENERAL_ERR, qtype: Qtype.SQ, qeIdx: r.indices[0] }],
      "an error completion at the SQE's index",
    );
    t.equal(p.mqp(p.a)?.stateName, "ERROR");
    t.equal(fatalFor(p.a), 1, "one QP_FATAL");
    t.same(dst.read(0, 8), new Uint8Array(8), "the WRITE did not run");
    contained(t, p.a, /^QP \d+ SQE$/);
  });
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
