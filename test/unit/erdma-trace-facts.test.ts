// The facts the device model writes into its trace for rule hw-protocol: a refused command names
// the object it was refused for (`object`), and an SQ, RQ or CQ doorbell carries the device's view
// of the ring it arrived at (`ring`: depth, and the consumer or producer index it is judged
// against). Every event is checked against the trace schema (FakeHost), so a reader can rely on it.
import t from "tap";
import type { ErdmaTraceEventOf } from "../../qemu/erdma/trace-schema.ts";
import { QpState, setupErdma } from "../doubles/erdma-driver.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

t.test("a refused command names the object it was refused for", async (t) => {
  const s = await setupErdma();
  const { cq } = await s.drv.createCq(8);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  await s.drv.destroyQp(qp);
  const out = await s.drv.flushWorker(qp);
  t.not(out.status, 0, "REFLUSH of a destroyed QP is refused");
  const refused = s.host.ofKind("cmd").filter((e) => e.status !== 0);
  t.same(
    refused.map((e) => [e.name, e.statusName, e.object]),
    [["REFLUSH", "NOT_FOUND", { kind: "qp", id: qp.qpn }]],
  );
  await s.drv.destroyCq(cq);
  await s.drv.destroyCq(cq);
  const again = s.host.ofKind("cmd").filter((e) => e.status !== 0 && e.name === "DESTROY_CQ");
  t.same(again[0]?.object, { kind: "cq", id: cq.cqn }, "a second DESTROY_CQ names its CQ");
  const { cq: other } = await s.drv.createCq(8);
  const ok = s.host.ofKind("cmd").filter((e) => e.status === 0);
  t.ok(
    ok.every((e) => e.object === undefined),
    "a command that succeeded names no object (its detail says what it did)",
  );
  await s.drv.destroyCq(other);
  t.same(traceSchemaProblems(), [], "every event fits the trace schema");
});

t.test("SQ, RQ and CQ doorbells carry the device's view of their ring", async (t) => {
  const s = await setupErdma();
  const { cq } = await s.drv.createCq(16);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 2, maxRecvWr: 4 });
  s.host.clearEvents();
  s.drv.postRecv(qp);
  s.drv.postRecv(qp);
  s.drv.postSendRaw(qp, 2);
  s.drv.notifyCq(cq);
  await s.drv.settle();
  const bells = s.host.ofKind("doorbell").filter((e) => e.db === "sq" || e.db === "rq" || e.db === "cq");
  const seen = (e: ErdmaTraceEventOf<"doorbell">) => [e.db, e.id, e.detail?.pi, e.ring];
  t.same(bells.map(seen), [
    ["rq", qp.qpn, 1, { depth: 4, ci: 0 }],
    ["rq", qp.qpn, 2, { depth: 4, ci: 0 }],
    // the QP is not connected: the device has not taken the SQE, its consumer index stays 0
    ["sq", qp.qpn, 2, { depth: 8, ci: 0 }],
    ["cq", cq.cqn, undefined, { depth: 16, pi: 0 }],
  ]);
  // into ERROR: the device flushes what was posted, its consumer indexes move to the producer's
  await s.drv.modifyQp(qp, QpState.ERROR);
  await s.drv.settle();
  s.host.clearEvents();
  s.drv.postRecv(qp);
  s.drv.notifyCq(cq);
  await s.drv.settle();
  const after = s.host.ofKind("doorbell").filter((e) => e.db === "rq" || e.db === "cq");
  t.same(after[0]?.ring, { depth: 4, ci: 2 }, "the RQ's consumer index after the flush of its two RQEs");
  t.same(after[1]?.ring?.pi, 3, "the CQ's producer index: two receive flushes and one send flush written");
  t.same(traceSchemaProblems(), [], "every event fits the trace schema");
});

t.test("a doorbell for a QP the device does not have carries no ring", async (t) => {
  const s = await setupErdma();
  const { cq } = await s.drv.createCq(8);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 2, maxRecvWr: 4 });
  await s.drv.destroyQp(qp);
  s.host.clearEvents();
  s.drv.postRecv(qp);
  await s.drv.settle();
  const [bell] = s.host.ofKind("doorbell");
  t.equal(bell?.ring, undefined);
  t.match(s.host.ofKind("warn")[0]?.message, /RQ doorbell for a QP that does not exist/);
});
