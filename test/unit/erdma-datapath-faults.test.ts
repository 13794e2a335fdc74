/**
 * Fault injection (faults.ts) through the driver double: each fault kind's effect on what the
 * driver sees, its "fault" trace events (armed, fired with the event's context), nth/count, and
 * the validation of fault specs.
 */
import t from "tap";
import { ZodError } from "zod";
import { profileReflush } from "../../qemu/erdma/index.ts";
import { type PairOptions, writePair } from "../doubles/erdma-dp-fixture.ts";
import { QpState } from "../doubles/erdma-driver.ts";
import { Syndrome as S } from "../doubles/erdma-sqe.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

async function writes(opts: PairOptions = {}) {
  const { p, src, dst, w } = await writePair(true, opts);
  const faultEvents = () => p.a.host.ofKind("fault");
  return { p, src, dst, w, faultEvents };
}

t.test("error-wqe: the nth SQE completes with the chosen status", async (t) => {
  const { p, w, faultEvents } = await writes();
  const id = p.a.dev.faults.add({ kind: "error-wqe", qpn: p.a.qp.qpn, status: S.RETRY_EXC_ERR, nth: 2 });
  t.equal(typeof id, "number");
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n, false), w(3n)]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 1n, status: S.SUCCESS, qeIdx: 0 },
    { wrId: 2n, status: S.RETRY_EXC_ERR, qeIdx: 2 },
    { wrId: 3n, status: S.FLUSH_ERR, qeIdx: 4 },
  ]);
  t.equal(p.mqp(p.a)?.stateName, "ERROR");
  t.equal(p.a.drv.aeqEvents.filter((e) => e.type === 0 && e.data0 === p.a.qp.qpn).length, 1, "QP_FATAL");
  t.match(faultEvents(), [
    {
      action: "armed",
      id,
      fault: { kind: "error-wqe", status: S.RETRY_EXC_ERR, nth: 2, count: 1, queue: "sq" },
    },
    { action: "fired", id, context: { qpn: p.a.qp.qpn, queue: "sq", index: 2 } },
  ]);
  t.same(p.a.dev.faults.active, [], "spent");
  t.match(
    p.a.host.ofKind("wqe").find((e) => e.index === 2 && e.queue === "sq"),
    { status: S.RETRY_EXC_ERR, reason: "injected" },
  );
});

t.test("error-wqe for another QP does not fire", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "error-wqe", qpn: p.a.qp.qpn + 100, status: 1 });
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n, status: 0 }]);
  t.equal(faultEvents().filter((e) => e.action === "fired").length, 0);
  t.equal(p.a.dev.faults.active.length, 1, "still armed");
});

t.test("drop-cqe: the 2nd and 3rd CQEs vanish", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "drop-cqe", queue: "sq", nth: 2, count: 2 });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n), w(3n), w(4n)]);
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
    [1n, 4n],
  );
  t.match(
    faultEvents().filter((e) => e.action === "fired"),
    [{ context: { index: 2 } }, { context: { index: 4 } }],
  );
  t.equal(p.mqp(p.a)?.sq.ci, 8, "the WQEs themselves ran");
});

t.test("wrong-cq: a receive completion written on the send CQ", async (t) => {
  const { p, src, dst, faultEvents } = await writes();
  p.b.dev.faults.add({ kind: "wrong-cq", queue: "rq" });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 9n, sge: dst.sge() });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 1n, signaled: true, sgl: [src.sge(0, 8)] });
  await p.settle();
  t.same(p.b.drv.pollWc(p.b.rcq), [], "nothing on the receive CQ");
  t.match(p.b.drv.pollWc(p.b.scq), [{ wrId: 9n, status: 0 }], "the RECV's completion is on the send CQ");
  t.match(
    faultEvents().filter((e) => e.action === "fired"),
    [{ fault: { kind: "wrong-cq" } }],
  );
});

t.test("drop-cqe on the RQ leaves the SQ alone", async (t) => {
  const { p, src, dst } = await writes();
  p.a.dev.faults.add({ kind: "drop-cqe", queue: "rq" });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 9n, sge: dst.sge() });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 1n, signaled: true, sgl: [src.sge(0, 8)] });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n, status: 0 }]);
  t.same(p.b.drv.pollWc(p.b.rcq), [], "the receive CQE was dropped");
});

t.test("duplicate-cqe: the same completion twice", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "duplicate-cqe", qpn: p.a.qp.qpn });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n)]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 1n, qeIdx: 0 },
    { wrId: 1n, qeIdx: 0 },
    { wrId: 2n, qeIdx: 2 },
  ]);
  t.equal(faultEvents().filter((e) => e.action === "fired").length, 1);
});

t.test("delay-cqe: the completion comes later, after the next one", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "delay-cqe", ms: 40 });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n)]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 2n }], "only the undelayed CQE so far");
  await new Promise((r) => setTimeout(r, 80));
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n, qeIdx: 0, status: 0 }], "then the delayed one");
  t.match(faultEvents(), [
    { action: "armed", fault: { ms: 40 } },
    { action: "fired", context: { index: 0 } },
  ]);
});

t.test("reorder-cqe: a CQE is written after the next one on its CQ", async (t) => {
  const { p, w } = await writes();
  p.a.dev.faults.add({ kind: "reorder-cqe", queue: "sq" });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n), w(3n)]);
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
    [2n, 1n, 3n],
  );
});

t.test("wrong-index: qe_idx off by delta", async (t) => {
  const { p, w } = await writes();
  p.a.dev.faults.add({ kind: "wrong-index", delta: 2, nth: 2 });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n), w(3n)]);
  await p.settle();
  const wcs = p.a.drv.pollWc(p.a.scq);
  t.same(
    wcs.map((c) => c.qeIdx),
    [0, 4, 4],
    "the second CQE names the third SQE's index",
  );
  t.same(
    wcs.map((c) => c.wrId),
    [1n, 3n, 3n],
    "so the driver reports the wrong wr_id",
  );
});

t.test("lose-irq: the CEQ interrupt of an armed CQ is not delivered", async (t) => {
  const { p, w } = await writes();
  const vector = p.a.scq.eqn; // comp vector 0 -> CEQ 1 -> MSI-X vector 1
  p.a.drv.notifyCq(p.a.scq);
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.equal(p.a.scq.events, 1, "without the fault the completion event arrives");
  p.a.dev.faults.add({ kind: "lose-irq", vector });
  p.a.drv.pollWc(p.a.scq);
  p.a.drv.notifyCq(p.a.scq);
  p.a.drv.postSend(p.a.qp, [w(2n)]);
  await p.settle();
  t.equal(p.a.scq.events, 1, "the second event's interrupt was lost");
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 2n }], "the CQE itself is there");
  t.match(
    p.a.host.ofKind("irq").filter((e) => !e.delivered),
    [{ vector, source: /lost: injected/ }],
  );
  t.match(
    p.a.host.ofKind("fault").filter((e) => e.action === "fired"),
    [{ fault: { kind: "lose-irq", vector }, context: { vector } }],
  );
  // the EQE was written: a handler run (e.g. by polling) finds it
  p.a.drv.ceqHandler(vector);
  t.equal(p.a.scq.events, 2);
});

t.test(
  "coalesce-irq: a CEQ interrupt held for ms, then raised once for what was written meanwhile",
  async (t) => {
    const { p, w } = await writes();
    const vector = p.a.scq.eqn;
    p.a.dev.faults.add({ kind: "coalesce-irq", vector, ms: 300 });
    p.a.drv.notifyCq(p.a.scq);
    p.a.drv.postSend(p.a.qp, [w(1n)]);
    await p.settle();
    t.equal(p.a.scq.events, 0, "held: no completion event yet");
    t.same(
      p.a.host.ofKind("irq").filter((e) => e.vector === vector),
      [],
      "no interrupt on the vector while it is held",
    );
    t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n }], "the CQE is written; only its interrupt waits");
    await new Promise((resolve) => setTimeout(resolve, 400));
    await p.settle();
    t.equal(p.a.scq.events, 1, "the held interrupt arrived");
    t.match(
      p.a.host.ofKind("irq").filter((e) => e.vector === vector),
      [{ delivered: true, source: /held 300 ms: injected/ }],
    );
    p.a.drv.notifyCq(p.a.scq);
    p.a.drv.postSend(p.a.qp, [w(2n)]);
    await p.settle();
    t.equal(p.a.scq.events, 2, "count 1: the next interrupt is not held");
  },
);

t.test("coalesce-irq without ms holds until a raise-irq; clear() raises what is still held", async (t) => {
  const { p, w, faultEvents } = await writes();
  const vector = p.a.scq.eqn;
  p.a.dev.faults.add({ kind: "coalesce-irq", vector });
  p.a.drv.notifyCq(p.a.scq);
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await p.settle();
  t.equal(p.a.scq.events, 0, "held, with no time of its own");
  t.same(p.a.dev.faults.timers(), [], "nothing the device will do by itself: it waits for the harness");
  const other = p.a.dev.faults.add({ kind: "raise-irq", vector: vector + 1 });
  await p.settle();
  t.equal(p.a.scq.events, 0, "a raise-irq of another vector leaves it held");
  t.match(faultEvents().at(-1), { id: other, action: "fired", context: { raised: 0 } });
  const raise = p.a.dev.faults.add({ kind: "raise-irq", vector });
  await p.settle();
  t.equal(p.a.scq.events, 1, "raised");
  t.match(faultEvents().at(-1), { id: raise, action: "fired", context: { raised: 1 } });
  t.match(
    p.a.host.ofKind("irq").filter((e) => e.vector === vector),
    [{ delivered: true, source: /held until raised: injected/ }],
  );
  p.a.dev.faults.add({ kind: "coalesce-irq", vector });
  p.a.drv.notifyCq(p.a.scq);
  p.a.drv.postSend(p.a.qp, [w(2n)]);
  await p.settle();
  t.equal(p.a.scq.events, 1, "held again");
  p.a.dev.faults.clear();
  await p.settle();
  t.equal(p.a.scq.events, 2, "the faults cleared: the interrupt is not left held");
});

t.test("coalesce-irq holds completion-event interrupts only", async (t) => {
  const { p, w } = await writes();
  p.a.dev.faults.add({ kind: "coalesce-irq", ms: 60_000 });
  p.a.drv.notifyCq(p.a.scq);
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.equal(p.a.scq.events, 0);
  t.ok(
    p.a.host.ofKind("fault").some((e) => e.action === "fired" && /^ceq/.test(String(e.context?.source))),
    "it fired on a CEQ interrupt",
  );
  p.a.dev.faults.clear();
});

t.test("ignore-doorbell: the SQ doorbell's producer index is not taken", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "ignore-doorbell", queue: "sq", qpn: p.a.qp.qpn });
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.equal(p.mqp(p.a)?.sq.pi, 0, "the device still has PI 0");
  t.same(p.a.drv.pollWc(p.a.scq), []);
  t.match(
    faultEvents().filter((e) => e.action === "fired"),
    [{ context: { queue: "sq", pi: 2 } }],
  );
  p.a.drv.postSend(p.a.qp, [w(2n)]);
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
    [1n, 2n],
    "the next doorbell's PI covers both",
  );
});

t.test("ignore-doorbell on the RQ: a SEND waits for the next RQ doorbell", async (t) => {
  // recvNotPosted wait: the SEND finding no RQE waits rather than terminating
  const { p, src, dst } = await writes({ profile: { ...profileReflush, recvNotPosted: "wait" } });
  p.b.dev.faults.add({ kind: "ignore-doorbell", queue: "rq", qpn: p.b.qp.qpn });
  p.b.drv.postRecvWr(p.b.qp, { wrId: 1n, sge: dst.sge(0, 8) });
  p.a.drv.postSend(p.a.qp, { opcode: "SEND", wrId: 3n, signaled: true, sgl: [src.sge(0, 8)] });
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), [], "no RQE seen: the SEND waits");
  p.b.drv.postRecvWr(p.b.qp, { wrId: 2n, sge: dst.sge(8, 8) });
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 3n, status: 0 }]);
  t.match(p.b.drv.pollWc(p.b.rcq), [{ wrId: 1n, qeIdx: 0 }], "the first RQE was used");
});

t.test("clear() disarms and is traced", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "drop-cqe" });
  p.a.dev.faults.clear();
  t.same(p.a.dev.faults.active, []);
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.equal(p.a.drv.pollWc(p.a.scq).length, 1);
  t.match(faultEvents(), [{ action: "armed" }, { action: "cleared" }]);
});

t.test("fault specs are validated", async (t) => {
  const { p } = await writes();
  const bad: Array<[string, unknown]> = [
    ["unknown kind", { kind: "melt" }],
    ["no kind", { qpn: 1 }],
    ["not an object", "drop-cqe"],
    ["error-wqe without a status", { kind: "error-wqe" }],
    ["error-wqe with status 0 (success is no error)", { kind: "error-wqe", status: 0 }],
    ["error-wqe with status 256", { kind: "error-wqe", status: 256 }],
    ["delay-cqe without ms", { kind: "delay-cqe" }],
    ["delay-cqe of 0 ms", { kind: "delay-cqe", ms: 0 }],
    ["delay-cqe over a minute", { kind: "delay-cqe", ms: 60_001 }],
    ["wrong-index without delta", { kind: "wrong-index" }],
    ["wrong-index with a fractional delta", { kind: "wrong-index", delta: 0.5 }],
    ["stall-queue without a queue", { kind: "stall-queue" }],
    ["ignore-doorbell of the CQ", { kind: "ignore-doorbell", queue: "cq" }],
    ["nth 0", { kind: "drop-cqe", nth: 0 }],
    ["count -1", { kind: "drop-cqe", count: -1 }],
    ["negative qpn", { kind: "drop-cqe", qpn: -1 }],
    ["lose-irq on vector -1", { kind: "lose-irq", vector: -1 }],
    ["raise-irq on vector -1", { kind: "raise-irq", vector: -1 }],
    ["coalesce-irq of 0 ms", { kind: "coalesce-irq", ms: 0 }],
    ["coalesce-irq past a minute", { kind: "coalesce-irq", ms: 60_001 }],
  ];
  for (const [name, spec] of bad) {
    t.throws(() => p.a.dev.faults.add(spec), ZodError, name);
  }
  t.equal(p.a.host.ofKind("fault").length, 0, "nothing armed, nothing traced");
  const good = [
    { kind: "stall-queue", queue: "sq", ms: 5 },
    { kind: "ignore-doorbell", queue: "rq" },
    { kind: "lose-irq" },
    { kind: "reorder-cqe", queue: "rq", count: 3 },
  ];
  const ids = good.map((g) => p.a.dev.faults.add(g));
  t.same(ids, [1, 2, 3, 4], "ids count up");
  t.match(p.a.dev.faults.active, [
    { kind: "stall-queue", nth: 1, count: 1 },
    { kind: "ignore-doorbell" },
    { kind: "lose-irq" },
    { kind: "reorder-cqe", count: 3 },
  ]);
  t.equal(p.a.host.ofKind("fault").filter((e) => e.action === "armed").length, 4);
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});

t.test("stall-queue after k, until error: k WQEs run, the rest wait and are flushed at ERROR", async (t) => {
  const { p, w, faultEvents } = await writes();
  const id = p.a.dev.faults.add({
    kind: "stall-queue",
    qpn: p.a.qp.qpn,
    queue: "sq",
    after: 2,
    until: "error",
  });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n), w(3n), w(4n)]);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 1n, status: S.SUCCESS },
    { wrId: 2n, status: S.SUCCESS },
  ]);
  t.match(faultEvents(), [
    { action: "armed", id, fault: { kind: "stall-queue", after: 2, nth: 3, until: "error" } },
    { action: "fired", id, context: { qpn: p.a.qp.qpn, queue: "sq", wqe: true, index: 4 } },
  ]);
  t.equal(p.mqp(p.a)?.sq.ci, 4, "two WRITEs of two blocks ran, the third waits");
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [
    { wrId: 3n, status: S.FLUSH_ERR },
    { wrId: 4n, status: S.FLUSH_ERR },
  ]);
  t.match(faultEvents().at(-1), { action: "cleared", context: { qpn: p.a.qp.qpn, queue: "sq" } });
  t.match(
    p.a.host.ofKind("flush").find((e) => e.queue === "sq"),
    { wqes: [4, 6], blocks: [2, 2] },
  );
});

t.test("stall-queue until error on a queue already in ERROR holds nothing back", async (t) => {
  const { p, w } = await writes();
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR);
  await p.settle();
  p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "sq", until: "error" });
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.a.drv.flushWorker(p.a.qp);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n, status: S.FLUSH_ERR }]);
});

t.test("a stall without `after` is not fired by the WQEs it holds back", async (t) => {
  const { p, w, faultEvents } = await writes();
  p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "sq", ms: 50 });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n)]);
  await p.settle();
  t.equal(faultEvents().filter((e) => e.action === "fired").length, 1, "fired once, by the schedule");
  await new Promise((r) => setTimeout(r, 80));
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
    [1n, 2n],
    "both ran once the stall was over",
  );
});

t.test("resume-queue ends a stall at once and disarms one not fired yet; the queue runs again", async (t) => {
  const { p, w, faultEvents } = await writes();
  const stall = p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "sq" });
  p.a.drv.postSend(p.a.qp, [w(1n), w(2n)]);
  await p.settle();
  await new Promise((r) => setTimeout(r, 30));
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), [], "stalled: nothing ran");
  const resume = p.a.dev.faults.add({ kind: "resume-queue", qpn: p.a.qp.qpn, queue: "sq" });
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
    [1n, 2n],
    "both ran once resumed",
  );
  t.match(
    faultEvents().filter((e) => e.id === resume),
    [
      { action: "armed", fault: { kind: "resume-queue", queue: "sq" } },
      { action: "fired", context: { queue: "sq", qpn: p.a.qp.qpn, stallsEnded: 1, disarmed: [] } },
    ],
    "armed and fired at once, saying what it ended",
  );
  t.ok(
    faultEvents().some((e) => e.id === stall && e.action === "fired"),
    "the stall had fired",
  );
  // a stall of the other queue is left alone; one of this queue not fired yet is disarmed
  const other = p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "rq" });
  const unfired = p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "sq" });
  p.a.dev.faults.add({ kind: "resume-queue", qpn: p.a.qp.qpn, queue: "sq" });
  t.match(faultEvents().at(-1), { action: "fired", context: { stallsEnded: 0, disarmed: [unfired] } });
  t.same(
    p.a.dev.faults.active.map((f) => f.kind === "stall-queue" && f.queue),
    ["rq"],
    `the rq's stall (fault ${other}) is still armed`,
  );
  p.a.drv.postSend(p.a.qp, [w(3n)]);
  await p.settle();
  t.same(
    p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
    [3n],
    "the sq is not stalled again",
  );
});

// hil's user executor rings the doorbells, then resumes over the control socket; on a loaded host
// the queue's job may not have run yet when the resume comes
t.test(
  "a resume-queue right after the doorbell, before the queue's job ran, ends a stall that fired",
  async (t) => {
    const { p, w, faultEvents } = await writes();
    const stall = p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "sq" });
    p.a.drv.postSend(p.a.qp, [w(1n), w(2n)]);
    const resume = p.a.dev.faults.add({ kind: "resume-queue", qpn: p.a.qp.qpn, queue: "sq" });
    await p.settle();
    t.ok(
      faultEvents().some((e) => e.id === stall && e.action === "fired"),
      "the stall fired at the doorbell",
    );
    t.match(
      faultEvents().find((e) => e.id === resume && e.action === "fired"),
      {
        context: { stallsEnded: 1, disarmed: [] },
      },
    );
    t.same(
      p.a.drv.pollWc(p.a.scq).map((c) => c.wrId),
      [1n, 2n],
      "both ran",
    );
  },
);

t.test("DESTROY_QP says what the device still had to complete or flush", async (t) => {
  const { p } = await writes();
  // the receives' flush waits a second after the ERR transition: the destroy comes first
  p.a.dev.faults.add({ kind: "stall-queue", qpn: p.a.qp.qpn, queue: "rq", ms: 1000 });
  for (let i = 0; i < 3; i++) p.a.drv.postRecv(p.a.qp);
  await p.settle();
  await p.a.drv.destroyQp(p.a.qp);
  const destroy = p.a.host.ofKind("cmd").find((e) => e.name === "DESTROY_QP");
  t.match(destroy?.detail, { qpn: p.a.qp.qpn, pending: { rq: 3 } });
});
