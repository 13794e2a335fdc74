/**
 * A QP in ERROR under each behaviour profile (flush.ts): what is flushed when the QP enters ERROR,
 * what happens to WRs posted in ERROR (ib-compliant: flushed at once; erdma-2022: never, REFLUSH
 * or not; erdma-reflush: when the driver's REFLUSH names them, erdma_flush_worker,
 * erdma_verbs.c:429-442), one completion per WR, in order, on the WR's own CQ, signaled or not.
 * And the graceful close: CLOSING ends in IDLE, or in ERROR with the outstanding WRs flushed.
 */
import t from "tap";
import { profile2022, profileIbCompliant, profileReflush } from "../../qemu/erdma/index.ts";
import { buffer, pair, pairWithBuffers, pattern } from "../doubles/erdma-dp-fixture.ts";
import { QpState } from "../doubles/erdma-driver.ts";
import { Qtype, Syndrome as S } from "../doubles/erdma-sqe.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

const QP_FATAL = 0;

for (const [profile, mode] of [
  [profileReflush, "reflush"],
  [profile2022, "stop"],
  [profileIbCompliant, "always"],
] as const) {
  t.test(`${profile.name}: flush on ERROR, then WRs posted in ERROR`, async (t) => {
    t.equal(profile.errorFlush, mode);
    // the SEND waits for a receive B never posts (recvNotPosted wait): WRs outstanding at the error
    const { p, src, dst } = await pairWithBuffers({ profile: { ...profile, recvNotPosted: "wait" } });
    p.a.drv.postRecvWr(p.a.qp, { wrId: 100n, sge: src.sge(0, 32) });
    p.a.drv.postRecvWr(p.a.qp, { wrId: 101n, sge: src.sge(32, 32) });
    // the SEND waits (B has no RQE); the WRITE and the SEND behind it wait too
    const posted = p.a.drv.postSend(p.a.qp, [
      { opcode: "SEND", wrId: 1n, signaled: true, sgl: [src.sge(0, 8)] },
      { opcode: "WRITE", wrId: 2n, remoteAddr: dst.va, rkey: dst.stag, sgl: [src.sge(0, 8)] },
      { opcode: "SEND", wrId: 3n, inline: [pattern(40, 1)] },
    ]);
    t.same(posted.indices, [0, 1, 3], "1, 2 and 2 WQEBBs (16 + 40 inline bytes)");
    await p.settle();
    t.same(p.a.drv.pollWc(p.a.scq), [], "nothing completed before the error");
    // the driver moves the QP to ERROR (no REFLUSH yet: the flush worker runs later)
    await p.a.drv.modifyQp(p.a.qp, QpState.ERROR, undefined, { reflush: false });
    await p.settle();
    t.equal(p.mqp(p.a)?.stateName, "ERROR");
    t.same(p.mqp(p.a)?.errorAt, { sqPi: 5, rqPi: 2 });
    const sq1 = p.a.drv.pollWc(p.a.scq);
    t.match(
      sq1,
      [
        { wrId: 1n, status: S.FLUSH_ERR, qtype: Qtype.SQ, qeIdx: 0, qpn: p.a.qp.qpn },
        { wrId: 2n, status: S.FLUSH_ERR, qtype: Qtype.SQ, qeIdx: 1 },
        { wrId: 3n, status: S.FLUSH_ERR, qtype: Qtype.SQ, qeIdx: 3 },
      ],
      "every SQ WR outstanding at the error, unsignaled ones too, in order",
    );
    t.equal(sq1.length, 3, "each exactly once");
    const rq1 = p.a.drv.pollWc(p.a.rcq);
    t.match(rq1, [
      { wrId: 100n, status: S.FLUSH_ERR, qtype: Qtype.RQ, qeIdx: 0 },
      { wrId: 101n, status: S.FLUSH_ERR, qtype: Qtype.RQ, qeIdx: 1 },
    ]);
    t.equal(rq1.length, 2, "receive flushes on the receive CQ only");
    t.equal(p.a.drv.sqCi(p.a.qp), 5);
    t.equal(
      p.a.drv.aeqEvents.filter((e) => e.type === QP_FATAL).length,
      0,
      "a requested ERROR is no async error",
    );
    t.same(p.b.drv.pollWc(p.b.rcq), [], "the peer saw nothing");
    t.match(
      p.a.host.ofKind("flush"),
      [
        { queue: "sq", from: 0, to: 5, count: 3, limit: mode === "always" ? "pi" : "error" },
        { queue: "rq", from: 0, to: 2, count: 2, limit: mode === "always" ? "pi" : "error" },
      ],
      "traced: how far each queue flushed and what bounded it",
    );

    // WRs posted in ERROR
    p.a.drv.postSend(p.a.qp, {
      opcode: "WRITE",
      wrId: 4n,
      remoteAddr: dst.va,
      rkey: dst.stag,
      sgl: [src.sge(0, 8)],
    });
    p.a.drv.postRecvWr(p.a.qp, { wrId: 102n, sge: src.sge() });
    await p.settle();
    const sq2 = p.a.drv.pollWc(p.a.scq);
    const rq2 = p.a.drv.pollWc(p.a.rcq);
    if (mode === "always") {
      t.match(sq2, [{ wrId: 4n, status: S.FLUSH_ERR, qeIdx: 5 }], "ib-compliant: flushed at once");
      t.match(rq2, [{ wrId: 102n, status: S.FLUSH_ERR, qeIdx: 2 }]);
    } else {
      t.same(sq2, [], `${profile.name}: a WR posted in ERROR is not flushed by its doorbell`);
      t.same(rq2, []);
    }
    // erdma_flush_worker: REFLUSH with the driver's producer indices
    const out = await p.a.drv.flushWorker(p.a.qp);
    t.equal(out.status, 0, "REFLUSH completes");
    await p.settle();
    const sq3 = p.a.drv.pollWc(p.a.scq);
    const rq3 = p.a.drv.pollWc(p.a.rcq);
    if (mode === "reflush") {
      t.match(sq3, [{ wrId: 4n, status: S.FLUSH_ERR, qeIdx: 5 }], "erdma-reflush: flushed by REFLUSH");
      t.match(rq3, [{ wrId: 102n, status: S.FLUSH_ERR, qeIdx: 2 }]);
      t.ok(p.a.host.ofKind("flush").some((e) => e.limit === "reflush" && e.queue === "sq" && e.count === 1));
    } else if (mode === "stop") {
      t.same(sq3, [], "erdma-2022: REFLUSH changes nothing");
      t.same(rq3, []);
      t.match(p.a.host.ofKind("reflush"), [{ mode: "ignore" }]);
    } else {
      t.same(sq3, [], "ib-compliant: nothing left, nothing twice");
      t.same(rq3, []);
    }
    t.same(p.b.drv.pollWc(p.b.scq), [], "the peer's send CQ is untouched");
  });
}

t.test("a shared CQ: flushes of both queues land on it, each WR once", async (t) => {
  const p = await pair({ profile: { ...profileIbCompliant, recvNotPosted: "wait" }, sharedCq: true });
  const src = await buffer(p.a.drv, p.a.pd, 64);
  p.a.drv.postRecvWr(p.a.qp, { wrId: 100n, sge: src.sge() });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 1n, sgl: [src.sge(0, 4)] });
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR, undefined, { reflush: false });
  await p.settle();
  const wcs = p.a.drv.pollWc(p.a.scq);
  t.same(
    wcs.map((w) => [w.qtype, w.wrId, w.status]).sort((x, y) => Number(x[0]) - Number(y[0])),
    [
      [Qtype.SQ, 1n, S.FLUSH_ERR],
      [Qtype.RQ, 100n, S.FLUSH_ERR],
    ],
  );
});

t.test("an error WQE under erdma-reflush: flush to the index at the error, then REFLUSH", async (t) => {
  const { p, src, dst } = await pairWithBuffers({ profile: profileReflush });
  const w = (wrId: bigint, rkey = dst.stag) => ({
    opcode: "WRITE" as const,
    wrId,
    remoteAddr: dst.va,
    rkey,
    sgl: [src.sge(0, 8)],
  });
  p.a.drv.postSend(p.a.qp, [w(1n, 0x0bad_0000), w(2n), w(3n)]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 1n, status: S.RECV_STAG_INVALID_ERR },
    { wrId: 2n, status: S.FLUSH_ERR },
    { wrId: 3n, status: S.FLUSH_ERR },
  ]);
  t.equal(p.a.drv.aeqEvents.filter((e) => e.type === QP_FATAL && e.data0 === p.a.qp.qpn).length, 1);
  // the ULP reacts to QP_FATAL with ERROR; the driver's flush worker sends REFLUSH (6.2+)
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR);
  p.a.drv.postSend(p.a.qp, [w(4n), w(5n)]);
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), [], "posted after the error: waiting for REFLUSH");
  await p.a.drv.flushWorker(p.a.qp);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 4n, status: S.FLUSH_ERR },
    { wrId: 5n, status: S.FLUSH_ERR },
  ]);
});

t.test("graceful close", async (t) => {
  await t.test("after traffic, with nothing outstanding: CLOSING -> IDLE", async (t) => {
    const { p, src, dst } = await pairWithBuffers();
    p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge() });
    p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 2n, signaled: true, sgl: [src.sge()] });
    await p.settle();
    t.equal(p.a.drv.pollWc(p.a.scq).length, 1);
    await p.a.drv.modifyQp(p.a.qp, QpState.CLOSING);
    await p.settle();
    t.equal(p.mqp(p.a)?.stateName, "IDLE");
    t.same(p.a.drv.pollWc(p.a.scq), []);
    t.same(p.a.drv.pollWc(p.a.rcq), []);
    t.ok(
      p.a.host.ofKind("state").some((e) => e.id === p.a.qp.qpn && e.from === "CLOSING" && /^IDLE/.test(e.to)),
    );
  });
  await t.test("with WRs outstanding: CLOSING -> ERROR, all flushed, no QP_FATAL", async (t) => {
    const p = await pair({ profile: { ...profileReflush, recvNotPosted: "wait" } });
    const src = await buffer(p.a.drv, p.a.pd, 64);
    p.a.drv.postRecvWr(p.a.qp, { wrId: 100n, sge: src.sge() });
    p.a.drv.postSend(p.a.qp, [
      { opcode: "SEND", wrId: 1n, sgl: [src.sge(0, 8)] }, // waits: B has no RQE
      { opcode: "SEND", wrId: 2n, signaled: true, sgl: [src.sge(0, 8)] },
    ]);
    await p.settle();
    // 6.12: MODIFY_QP(CLOSING) then the flush worker's REFLUSH
    const sent = await p.a.drv.modifyQp(p.a.qp, QpState.CLOSING);
    t.same(
      sent.map((o) => o.status),
      [0, 0],
    );
    await p.settle();
    t.equal(p.mqp(p.a)?.stateName, "ERROR");
    t.match(p.a.drv.pollWc(p.a.scq), [
      { wrId: 1n, status: S.FLUSH_ERR },
      { wrId: 2n, status: S.FLUSH_ERR },
    ]);
    t.match(p.a.drv.pollWc(p.a.rcq), [{ wrId: 100n, status: S.FLUSH_ERR }]);
    t.equal(p.a.drv.aeqEvents.filter((e) => e.type === QP_FATAL).length, 0, "a close is no fatal error");
  });
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});

t.test(
  "a REFLUSH naming WQEs whose doorbells the device dropped flushes them, on the SQ as on the RQ",
  async (t) => {
    const p = await pair({ profile: profileReflush });
    const src = await buffer(p.a.drv, p.a.pd, 64);
    p.a.dev.faults.add({ kind: "ignore-doorbell", qpn: p.a.qp.qpn, queue: "sq", count: 2 });
    p.a.dev.faults.add({ kind: "ignore-doorbell", qpn: p.a.qp.qpn, queue: "rq", count: 2 });
    p.a.drv.postSend(p.a.qp, [
      { opcode: "SEND", wrId: 1n, signaled: true, sgl: [src.sge(0, 8)] },
      { opcode: "SEND", wrId: 2n, signaled: true, sgl: [src.sge(0, 8)] },
    ]);
    p.a.drv.postRecvWr(p.a.qp, { wrId: 100n, sge: src.sge(0, 32) });
    p.a.drv.postRecvWr(p.a.qp, { wrId: 101n, sge: src.sge(32, 32) });
    await p.settle();
    t.equal(p.mqp(p.a)?.sq.pi, 0, "the device took no SQ doorbell");
    // the driver's ERR transition: MODIFY_QP, then the flush worker's REFLUSH with its own indexes
    await p.a.drv.modifyQp(p.a.qp, QpState.ERROR);
    await p.settle();
    t.match(p.a.drv.pollWc(p.a.scq), [
      { wrId: 1n, status: S.FLUSH_ERR },
      { wrId: 2n, status: S.FLUSH_ERR },
    ]);
    t.match(p.a.drv.pollWc(p.a.rcq), [
      { wrId: 100n, status: S.FLUSH_ERR },
      { wrId: 101n, status: S.FLUSH_ERR },
    ]);
  },
);
