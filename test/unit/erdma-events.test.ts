import t from "tap";
import type { CqeFields } from "../../qemu/erdma/cq.ts";
import { setupErdma } from "../doubles/erdma-driver.ts";
import * as R from "../doubles/erdma-requests.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

type Setup = Awaited<ReturnType<typeof setupErdma>>;

/** What the data path will do: write a CQE (as deferred device work). */
function postCqe(s: Setup, cqn: number, f: Partial<CqeFields> = {}) {
  return s.dev.submit("test-cqe", async (st) => {
    const cq = st.cqs.get(cqn);
    if (!cq) throw new Error(`no CQ ${cqn}`);
    return cq.post({ opcode: 4, qtype: 1, syndrome: 0, qeIdx: 7, qpn: 3, size: 64, ...f });
  });
}

t.test("an armed CQ raises one completion event on its EQ's vector", async (t) => {
  const s = await setupErdma({ version: "6.12", cpus: 3 });
  const { cq } = await s.drv.createCq(16, 1); // EQ 2, vector 2
  s.host.irqLog.length = 0;
  await postCqe(s, cq.cqn);
  await s.drv.settle();
  t.same(s.host.irqLog, [], "no event while not armed");
  t.equal(cq.events, 0);
  s.drv.notifyCq(cq);
  await postCqe(s, cq.cqn);
  await postCqe(s, cq.cqn);
  await s.drv.settle();
  t.same(s.host.irqLog, [2], "one interrupt on the CQ's vector");
  t.equal(cq.events, 1, "one CEQE naming the CQ");
  t.equal(cq.cmdsn, 1, "the handler bumps cmdsn (erdma_eq.c:164-165)");
  const ceqe = s.host.ofKind("eqe").at(-1);
  t.match(ceqe, { eq: 2, detail: { cqn: cq.cqn } });
  t.equal(s.dev.state.cqs.get(cq.cqn)?.armed, "no", "disarmed after the event");
  const cqes = s.drv.pollCq(cq);
  t.equal(cqes.length, 3);
  t.match(cqes[0], { owner: 1, opcode: 4, qtype: 1, syndrome: 0, qeIdx: 7, qpn: 3, size: 64 });
  // re-arm with nothing pending: no event until the next CQE
  s.drv.notifyCq(cq);
  await s.drv.settle();
  t.equal(cq.events, 1);
  await postCqe(s, cq.cqn);
  await s.drv.settle();
  t.equal(cq.events, 2);
  t.equal(s.dev.state.cqs.get(cq.cqn)?.cmdsn, 1, "the arm doorbell carried cmdsn");
});

t.test("arming with unpolled CQEs raises the event at once", async (t) => {
  const s = await setupErdma({ version: "7.2" });
  const { cq } = await s.drv.createCq(16);
  await postCqe(s, cq.cqn);
  s.drv.notifyCq(cq);
  await s.drv.settle();
  t.equal(cq.events, 1, "missed events are not missed");
  s.drv.pollCq(cq);
  s.drv.notifyCq(cq);
  await s.drv.settle();
  t.equal(cq.events, 1, "nothing pending after polling");
});

t.test("solicited-only arming", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const { cq } = await s.drv.createCq(16);
  s.drv.notifyCq(cq, true);
  await postCqe(s, cq.cqn);
  await s.drv.settle();
  t.equal(cq.events, 0, "an unsolicited success does not fire");
  await postCqe(s, cq.cqn, { solicited: true });
  await s.drv.settle();
  t.equal(cq.events, 1, "a solicited CQE fires");
  s.drv.notifyCq(cq, true);
  await postCqe(s, cq.cqn, { syndrome: 15 });
  await s.drv.settle();
  t.equal(cq.events, 2, "an error CQE fires");
  s.drv.pollCq(cq);
  await postCqe(s, cq.cqn);
  s.drv.notifyCq(cq, true);
  await s.drv.settle();
  t.equal(cq.events, 2, "arming solicited-only over an unsolicited CQE waits");
  await postCqe(s, cq.cqn, { solicited: true });
  s.drv.pollCq(cq);
  await postCqe(s, cq.cqn);
  s.drv.notifyCq(cq, true);
  await s.drv.settle();
  t.equal(cq.events, 3, "a solicited CQE the driver has not consumed fires on arm");
});

t.test("CQE layout, owner bits and wrap on a data CQ", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const { cq } = await s.drv.createCq(4);
  const seen: number[] = [];
  for (let i = 0; i < 13; i++) {
    await postCqe(s, cq.cqn, { qeIdx: i, word3: { value: 0x11223344, endian: "le" }, info: 0xabc });
    const got = s.drv.pollCq(cq);
    t.equal(got.length, 1, `CQE ${i} visible`);
    seen.push(got[0]?.owner ?? -1);
    t.equal(got[0]?.qeIdx, i);
  }
  t.same(seen, [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0]);
  const at = cq.qbuf + BigInt(((12 & 3) >>> 0) * 32);
  t.equal(s.host.dma.u32(at + 12n), 0x11223344, "imm data little-endian");
  t.equal(s.host.dma.be32(at + 28n), 0xabc, "UD info big-endian");
});

t.test("EQs disarm on interrupt and re-arm through notify_eq; pending EQEs re-interrupt", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const { cq: a } = await s.drv.createCq(8);
  const { cq: b } = await s.drv.createCq(8);
  s.host.irqLog.length = 0;
  s.drv.notifyCq(a);
  s.drv.notifyCq(b);
  await postCqe(s, a.cqn);
  await postCqe(s, b.cqn);
  await s.dev.idle();
  t.same(s.host.irqLog, [1], "the second CEQE found the EQ disarmed: no second interrupt");
  t.equal(s.dev.state.ceqs.get(1)?.pi, 2);
  // the driver re-arms having seen nothing (as if the handler ran before the EQEs landed)
  s.host.pendingIrqs.length = 0;
  s.drv.notifyEq(s.drv.ceqs[0] as NonNullable<(typeof s.drv.ceqs)[0]>);
  await s.dev.idle();
  t.same(s.host.irqLog, [1, 1], "re-arming over unconsumed EQEs interrupts again");
  await s.drv.settle();
  t.equal(a.events + b.events, 2, "both CEQEs handled");
});

t.test("an EQ that overflows drops EQEs and says so", async (t) => {
  const s = await setupErdma({ version: "6.12", cpus: 1 });
  const m = s.host.dma;
  const qbuf = m.alloc(4 * 16);
  t.equal(
    (await s.drv.post(R.createEq({ eqn: 5, vector: 1, depthLog: 2, qbuf, dbrec: m.alloc(8, 8) }))).status,
    0,
  );
  const out = await s.drv.post(
    R.createCq(R.inlineCqArgs({ cqn: 40, depthLog: 6, eqn: 5, qbuf: m.alloc(4096), dbrec: m.alloc(8, 8) })),
  );
  t.equal(out.status, 0);
  for (let i = 0; i < 6; i++) {
    s.dev.bar0Write(0x79000, 8, (40n << 32n) | (1n << 31n) | BigInt(i));
    await postCqe(s, 40);
  }
  const eq = s.dev.state.ceqs.get(5);
  t.equal(eq?.pi, 4);
  t.equal(eq?.overflows, 2);
  t.equal(s.host.ofKind("warn").filter((e) => /overflow/.test(e.message)).length, 2);
  t.equal((await s.drv.post(R.destroyEq({ eqn: 5, vector: 1 }))).status, 0);
  t.ok(
    s.host.ofKind("warn").some((e) => /CQs still use it/.test(e.message)),
    "destroying an EQ in use is reported",
  );
  s.dev.bar0Write(0x79000, 8, (40n << 32n) | (1n << 31n) | 6n);
  await postCqe(s, 40);
  t.ok(s.host.ofKind("warn").some((e) => /EQ that does not exist/.test(e.message)));
});

t.test("asynchronous events reach the driver's AEQ handler on vector 0", async (t) => {
  const s = await setupErdma({ version: "7.2" });
  const { cq } = await s.drv.createCq(8);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  s.host.irqLog.length = 0;
  s.dev.state.queueAsyncEvent(0, 0, qp.qpn, 0);
  await s.dev.idle();
  t.same(s.host.irqLog, [0]);
  await s.drv.settle();
  t.same(s.drv.aeqEvents, [{ type: 0, subtype: 0, data0: qp.qpn, data1: 0 }], "QP_FATAL with the QPN");
  t.equal(s.drv.aeq.ci, 1);
  for (let i = 0; i < 20; i++) s.dev.state.queueAsyncEvent(4, i, i, i);
  await s.drv.settle();
  t.equal(s.drv.aeqEvents.length, 21, "more than one handler chunk (16) arrives: the re-arm re-interrupts");
});

t.test("events before INIT and interrupts nobody can take", async (t) => {
  const s = await setupErdma({ version: "6.12", probe: false });
  t.equal(await s.dev.submit("aeqe", (st) => st.postAsyncEvent(0, 0, 1, 0)), false);
  t.ok(s.host.ofKind("warn").some((e) => /before INIT/.test(e.message)));
  const p = await setupErdma({ version: "6.12" });
  p.host.masked.add(0);
  await t.rejects(p.drv.post(R.queryFwInfo()), /timed out/, "a masked vector loses the completion interrupt");
  t.ok(p.host.ofKind("irq").some((e) => e.vector === 0 && e.delivered === false));
});

t.test("snapshots are JSON", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const { cq } = await s.drv.createCq(8);
  await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  await s.drv.getDmaMr(1);
  const snap = JSON.parse(JSON.stringify(s.dev.snapshot()));
  t.equal(snap.qps.length, 1);
  t.equal(snap.cqs.length, 1);
  t.equal(snap.mrs.length, 1);
  t.equal(snap.ceqs.length, 2);
  t.match(snap.cmdq, { sqDepth: 512 });
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
