/**
 * Regression tests for what coverage-guided fuzzing (npm run fuzz, test/fuzz/) found in the erdma
 * model's decoders of guest-written data; the reproducers themselves are replayed by
 * fuzz-corpus.test.ts. Each test builds the finding's situation by hand.
 */
import t from "tap";
import { profileReflush } from "../../qemu/erdma/index.ts";
import { buffer, pair, pattern } from "../doubles/erdma-dp-fixture.ts";
import { QpState } from "../doubles/erdma-driver.ts";
import { field, Hdr, Qtype, Syndrome as S } from "../doubles/erdma-sqe.ts";

t.test("an SQE header claiming WQEBBs past the flush limit ends the flush at the limit", async (t) => {
  const p = await pair({ profile: { ...profileReflush, recvNotPosted: "wait" } });
  // a SEND that waits (the peer has no receive posted), its header claiming 8 WQEBBs instead of 1
  const posted = p.a.drv.postSend(
    p.a.qp,
    { opcode: "SEND", wrId: 1n, signaled: true, inline: [new Uint8Array(8)] },
    { patch: ({ hdr }) => (hdr & ~field(7, Hdr.WQEBB_CNT)) | field(7, Hdr.WQEBB_CNT) },
  );
  t.same(posted.indices, [0]);
  await p.settle();
  // before the fix, the flush stepped from 0 to 8 over its limit 1, and the wrapped distance
  // kept it reading and completing stale entries without ever yielding the event loop
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR, undefined, { reflush: false });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ status: S.FLUSH_ERR, qtype: Qtype.SQ, qeIdx: 0 }]);
  t.match(
    p.a.host.ofKind("flush").filter((f) => f.queue === "sq"),
    [{ from: 0, to: 1, count: 1 }],
  );
  t.same(p.a.host.ofKind("internal-error"), []);
});

t.test("an SQE header claiming WQEBBs past the producer index takes the SQ to it, not over it", async (t) => {
  const p = await pair();
  const dst = await buffer(p.b.drv, p.b.pd, 64);
  // one WRITE posted (2 WQEBBs with its inline data), its header claiming 8
  p.a.drv.postSend(
    p.a.qp,
    {
      opcode: "WRITE",
      wrId: 1n,
      signaled: true,
      remoteAddr: dst.va,
      rkey: dst.stag,
      inline: [pattern(8, 1)],
    },
    { patch: ({ hdr }) => (hdr & ~field(7, Hdr.WQEBB_CNT)) | field(7, Hdr.WQEBB_CNT) },
  );
  await p.settle();
  // before the fix, the consumer index went to 8, past the producer index 2: the wrapped distance
  // had the SQ run 2^16 stale WQEBBs without ever yielding the event loop
  t.equal(p.a.qp.sqPi, 2);
  t.equal(p.mqp(p.a)?.sq.ci, 2, "the SQ stops at the producer index");
  t.ok(p.a.drv.pollWc(p.a.scq).length <= 1, "one completion at most: no stale entry ran");
  t.same(p.a.host.ofKind("internal-error"), []);
});
