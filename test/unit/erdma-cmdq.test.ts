import t from "tap";
import { CmdStatus, profileReflush } from "../../qemu/erdma/index.ts";
import { type DriverVersion, QpState, setupErdma } from "../doubles/erdma-driver.ts";
import * as R from "../doubles/erdma-requests.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

const versions: DriverVersion[] = ["6.1", "6.12", "7.2"];
const extDbProfile = { ...profileReflush, caps: { ...profileReflush.caps, extendDb: true } };

for (const version of versions) {
  t.test(`Linux ${version}: probe, then every command the driver sends`, async (t) => {
    const { host, dev, drv } = await setupErdma({ version, cpus: 3 });
    const attrs = drv.attrs;
    if (!attrs) throw new Error("no attrs");
    t.equal(attrs.mac, "52:54:00:12:34:56", "MAC from the NETDEV_MAC registers");
    t.equal(attrs.fwVersion, profileReflush.fwVersion);
    t.equal(attrs.maxQp, 1024);
    t.equal(attrs.maxCqe, 2 ** profileReflush.caps.maxCqeLog2);
    t.equal(attrs.localDmaKey, profileReflush.caps.localDmaKey);
    t.equal(attrs.capFlags, 1 << 5, "MTT_VA only");
    t.equal(drv.ceqs.length, 3, "one CEQ per vector beyond the first");
    t.equal(dev.state.ceqs.size, 3);
    t.ok(drv.irqCount > 0, "commands after finish_cmdq_init complete by interrupt");
    t.equal(host.irqLog.filter((v) => v === 0).length, drv.irqCount, "all on vector 0");

    const { cq, out: cqOut } = await drv.createCq(100, 1);
    t.equal(cqOut.status, 0, "CREATE_CQ");
    t.equal(dev.state.cqs.get(cq.cqn)?.depth, 128);
    t.equal(dev.state.cqs.get(cq.cqn)?.eqn, 2);
    const { qp, out: qpOut } = await drv.createQp({ scq: cq, rcq: cq, maxSendWr: 16, maxRecvWr: 16 });
    t.equal(qpOut.status, 0, "CREATE_QP");
    const mqp = dev.state.qps.get(qp.qpn);
    t.equal(mqp?.sq.depth, 64);
    t.equal(mqp?.rq.depth, 16);
    t.equal(qp.cookie, mqp?.cookie, "the response carries the QP's MPA cookie");
    const rts = await drv.modifyQp(qp, QpState.RTS, {
      cookie: 0xdead,
      sip: 0x0a000001,
      dip: 0x0a000002,
      sport: 4791,
      dport: 1234,
      sendNxt: 100,
      recvNxt: 200,
    });
    t.same(
      rts.map((o) => o.status),
      [0],
      "MODIFY_QP to RTS",
    );
    t.equal(mqp?.stateName, "RTS");
    const err = await drv.modifyQp(qp, QpState.ERROR);
    t.same(
      err.map((o) => o.status),
      version === "6.1" ? [0] : [0, 0],
      version === "6.1" ? "6.1 sends MODIFY_QP only" : "6.2+ follows with REFLUSH",
    );
    t.equal(mqp?.stateName, "ERROR");
    t.equal((await drv.setMtu(1500)).status, 0, "CONF_MTU");
    t.equal(dev.state.mtu, 1500);
    const stats = await drv.getStats();
    t.equal(stats.out.status, 0, "GET_STATS");
    t.equal(stats.magic, 0x5566);
    t.equal(stats.counters.length, 11);
    const dma = await drv.getDmaMr(drv.allocPd());
    t.equal(dma.out.status, 0, "REG_MR (DMA, stale fields ignored)");
    const frmr = await drv.allocFrmr(1, 32);
    t.equal(frmr.out.status, 0, "REG_MR (FRMR)");
    t.equal((await drv.deregMr(dma.mr)).status, 0, "DEREG_MR");
    t.equal((await drv.deregMr(frmr.mr)).status, 0);
    t.equal((await drv.destroyQp(qp)).status, 0, "DESTROY_QP");
    t.equal((await drv.destroyCq(cq)).status, 0, "DESTROY_CQ");
    await drv.remove();
    t.equal(dev.state.ceqs.size, 0, "DESTROY_EQ for every CEQ");
    t.equal(Number(dev.bar0Read(0x14, 4)) & 2, 0, "remove resets the hardware");
    const names = new Set(host.ofKind("cmd").map((e) => e.name));
    for (const n of [
      "CREATE_EQ",
      "QUERY_DEVICE",
      "QUERY_FW_INFO",
      "CREATE_CQ",
      "CREATE_QP",
      "MODIFY_QP",
      "CONF_MTU",
      "GET_STATS",
      "REG_MR",
      "DEREG_MR",
      "DESTROY_QP",
      "DESTROY_CQ",
      "DESTROY_EQ",
    ]) {
      t.ok(names.has(n), `${n} traced`);
    }
    t.equal(names.has("REFLUSH"), version !== "6.1");
    t.ok(
      host.ofKind("cmd").every((e) => e.status === CmdStatus.OK),
      "every command succeeded",
    );
    t.equal(host.ofKind("internal-error").length, 0);
    t.equal(host.ofKind("warn").length, 0, "no warnings for a well-behaved driver");
  });
}

t.test("CONF_DEVICE, ALLOC_DB and FREE_DB when the device advertises EXTEND_DB", async (t) => {
  for (const version of ["6.12", "7.2"] as const) {
    const { host, dev, drv } = await setupErdma({ version, profile: extDbProfile });
    t.equal(drv.attrs?.capFlags, (1 << 5) | (1 << 3));
    const conf = host.ofKind("cmd").find((e) => e.name === "CONF_DEVICE");
    t.equal(conf?.status, 0, `${version}: CONF_DEVICE during probe`);
    t.equal(dev.state.hostPageShift, 12);
    const a = await drv.allocDb();
    t.equal(a.out.status, 0, "ALLOC_DB");
    t.ok(a.sdb > 0 && a.sdb !== 95, "a private SQ doorbell page");
    t.ok(a.rdb !== a.cdb);
    const b = await drv.allocDb();
    t.not(b.sdb, a.sdb, "pages are per context");
    t.equal((await drv.freeDb(a)).status, 0, "FREE_DB");
    t.equal((await drv.freeDb(a)).status, CmdStatus.NOT_FOUND, "twice: not allocated");
    t.equal((await drv.post(R.allocDb(1))).status, CmdStatus.BAD_PARAM, "partial enable");
  }
  const { host } = await setupErdma({ version: "6.1", profile: extDbProfile });
  t.notOk(
    host.ofKind("cmd").some((e) => e.name === "CONF_DEVICE"),
    "6.1 never configures the device",
  );
  const plain = await setupErdma({ version: "6.12" });
  t.notOk(
    plain.host.ofKind("cmd").some((e) => e.name === "CONF_DEVICE"),
    "no EXTEND_DB, no CONF_DEVICE",
  );
  t.equal((await plain.drv.post(R.allocDb())).status, CmdStatus.BAD_OPCODE, "ALLOC_DB without EXTEND_DB");
  t.equal((await plain.drv.post(R.confDevice(12))).status, 0, "CONF_DEVICE is still implemented");
  t.equal((await plain.drv.post(R.confDevice(12, false))).status, 0, "and can be switched off");
  t.equal(plain.dev.state.hostPageShift, undefined);
});

t.test("polled mode: no interrupt before the CMDQ CQ is armed", async (t) => {
  const { host, dev, drv } = await setupErdma({ version: "6.12", probe: false });
  drv.aeqInit();
  drv.cmdqInit();
  await drv.waitInitDone();
  drv.cmdqOk = true;
  for (let i = 0; i < 5; i++) t.equal((await drv.post(R.queryFwInfo())).status, 0);
  t.equal(host.irqLog.length, 0, "no interrupt in polled mode");
  t.equal(dev.state.aeq?.pi, 0);
  t.ok(host.ofKind("cqe").length === 5, "CQEs were written");
  t.equal(host.ofKind("eqe").length, 0, "no EQE without an armed CQ");
});

t.test("7.2 mixes sleepable (interrupt) and atomic (polled) commands", async (t) => {
  const { drv, host } = await setupErdma({ version: "7.2" });
  const before = host.irqLog.length;
  for (let i = 0; i < 10; i++) {
    t.equal((await drv.post(R.queryFwInfo(), { sleepable: i % 2 === 0 })).status, 0);
  }
  t.ok(host.irqLog.length > before, "interrupts keep coming");
  await drv.settle();
  t.equal((await drv.post(R.queryFwInfo())).status, 0, "and completions are never lost");
});

for (const version of versions) {
  t.test(`Linux ${version}: owner bits and wrap over several laps of SQ, CQ and EQ`, async (t) => {
    const { host, dev, drv } = await setupErdma({ version });
    const laps = 3;
    const n = drv.cq.depth * laps + 7;
    host.clearEvents();
    for (let i = 0; i < n; i++) {
      const out = await drv.post(R.queryFwInfo(), { sleepable: i % 3 !== 0 });
      if (out.status !== 0 || out.resp0 !== BigInt(profileReflush.fwVersion)) {
        t.fail(`command ${i}: ${JSON.stringify({ status: out.status, resp0: out.resp0.toString(16) })}`);
        return;
      }
    }
    const cqes = host.ofKind("cqe").filter((e) => e.cq === "cmdq");
    t.equal(cqes.length, n);
    const depth = drv.cq.depth;
    t.ok(
      cqes.every((e) => e.owner === (Math.floor(e.index / depth) % 2 === 0 ? 1 : 0)),
      "owner 1 on even laps, 0 on odd laps",
    );
    const cmds = host.ofKind("cmd");
    t.ok(
      cmds.every((c, i) => c.sqeIdx === (((cmds[0]?.sqeIdx ?? 0) + i * drv.wqebbCnt) & 0xffff)),
      "SQEs are consumed in order, WQEBB by WQEBB, across the wrap",
    );
    t.ok(
      cmds.every((c) => c.cookie >= 0 && c.cookie < 128),
      "the driver's cookie is traced",
    );
    const m = dev.snapshot().cmdq as { ci: number; pi: number };
    t.equal(m.ci, m.pi, "the device consumed everything");
    t.equal(m.ci, drv.sq.pi);
    t.ok(drv.eq.events > 128, "the CMDQ EQ wrapped");
    t.equal(host.ofKind("warn").length, 0);
  });
}

t.test("commands queued faster than the device runs are all completed in order", async (t) => {
  const { drv, dev, host } = await setupErdma({ version: "6.12" });
  // ring 100 doorbells before the device runs (credits: 128)
  host.clearEvents();
  for (let i = 0; i < 100; i++) drv.pushSqe(R.queryFwInfo(), i);
  await dev.idle();
  const cmds = host.ofKind("cmd");
  t.equal(cmds.length, 100);
  t.same(
    cmds.map((c) => c.cookie),
    [...Array(100).keys()],
  );
  t.ok(host.irqLog.length >= 1);
});

t.test("a doorbell claiming more than the SQ holds is ignored", async (t) => {
  const { dev, drv, host } = await setupErdma({ version: "6.12" });
  dev.bar0Write(0x200, 8, BigInt((drv.sq.pi + drv.sq.depth + 4) & 0xffff));
  await dev.idle();
  t.ok(host.ofKind("warn").some((e) => /beyond the SQ depth/.test(e.message)));
  t.equal((await drv.post(R.queryFwInfo())).status, 0, "the queue still works");
});

t.test("SQE header index mismatches are reported, not fatal", async (t) => {
  const { drv, host } = await setupErdma({ version: "6.12" });
  const out = await drv.post(R.queryFwInfo(), { index: 0x1234 });
  t.equal(out.status, 0);
  t.ok(host.ofKind("warn").some((e) => /header index/.test(e.message)));
});

t.test("one-WQEBB SQEs, and an SQE straddling the end of the ring", async (t) => {
  const { drv, host } = await setupErdma({ version: "6.12" });
  t.equal(
    (await drv.post(R.queryFwInfo(), { wqebbCnt: 1, advance: 1 })).status,
    0,
    "a 32-byte SQE is a valid SQE",
  );
  while (((drv.sq.pi & (drv.sq.depth - 1)) >>> 0) + drv.wqebbCnt <= drv.sq.depth) {
    t.equal((await drv.post(R.queryFwInfo())).status, 0);
  }
  host.clearEvents();
  const out = await drv.post(R.queryDevice());
  t.equal(out.status, 0, "the SQE that wraps is read in two pieces");
  t.equal(out.resp1 >> 32n, BigInt(profileReflush.caps.localDmaKey));
  t.equal(host.ofKind("cmd")[0]?.sqeIdx, drv.sq.depth - 3);
  t.equal((await drv.post(R.queryFwInfo())).status, 0);
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
