import t from "tap";
import {
  CmdStatus,
  ErdmaDevice,
  profile2022,
  profileIbCompliant,
  profileReflush,
} from "../../qemu/erdma/index.ts";
import { transitionAllowed } from "../../qemu/erdma/qp.ts";
import { Acc, QpState, setupErdma } from "../doubles/erdma-driver.ts";
import * as R from "../doubles/erdma-requests.ts";
import { FakeHost, traceSchemaProblems } from "../doubles/fake-guest.ts";

const rts = {
  cookie: 0xc0ffee,
  sip: 0xc0a80001,
  dip: 0xc0a80002,
  sport: 40000,
  dport: 4791,
  sendNxt: 7,
  recvNxt: 9,
  cc: 1,
};

t.test("the iWARP state table", async (t) => {
  const names = ["IDLE", "RTR", "RTS", "CLOSING", "TERMINATE", "ERROR"];
  const allowed = new Set([
    "IDLE>RTR",
    "IDLE>RTS",
    "IDLE>ERROR",
    "RTR>RTS",
    "RTR>ERROR",
    "RTS>CLOSING",
    "RTS>TERMINATE",
    "RTS>ERROR",
    "CLOSING>CLOSING",
    "CLOSING>IDLE",
    "CLOSING>ERROR",
    "TERMINATE>CLOSING",
    "TERMINATE>ERROR",
    "ERROR>ERROR",
  ]);
  for (let from = 0; from < 6; from++) {
    for (let to = 0; to < 6; to++) {
      const key = `${names[from]}>${names[to]}`;
      t.equal(transitionAllowed("iwarp", from, to), allowed.has(key), key);
    }
  }
  t.notOk(transitionAllowed("iwarp", 9, 5), "unknown source state");
  t.ok(transitionAllowed("rocev2", 3, 0), "RoCEv2: anything may reset");
  t.ok(transitionAllowed("rocev2", 0, 6), "RoCEv2: anything may error");
  t.notOk(transitionAllowed("rocev2", 0, 3), "RoCEv2: RESET -> RTS");
  t.notOk(transitionAllowed("rocev2", 9, 1));
});

t.test("connect and disconnect sequences of each driver version", async (t) => {
  for (const version of ["6.1", "6.12", "7.2"] as const) {
    const s = await setupErdma({ version });
    const { cq } = await s.drv.createCq(8);
    const mk = async () => {
      const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 8, maxRecvWr: 8 });
      await s.drv.modifyQp(qp, QpState.RTS, rts);
      return { qp, m: s.dev.state.qps.get(qp.qpn) };
    };
    const a = await mk();
    t.same(
      a.m?.connection,
      {
        cookie: 0xc0ffee,
        sip: "192.168.0.1",
        dip: "192.168.0.2",
        sport: 40000,
        dport: 4791,
        sendNxt: 7,
        recvNxt: 9,
        cc: 1,
      },
      `${version}: the TCP tuple and sequence numbers`,
    );
    // graceful close (erdma_qp_llp_close: RTS -> CLOSING), then destroy (CLOSING -> ERROR)
    await s.drv.modifyQp(a.qp, QpState.CLOSING);
    await s.dev.idle();
    t.equal(a.m?.stateName, "IDLE", "with nothing outstanding the close completes: CLOSING -> IDLE");
    await s.drv.destroyQp(a.qp);
    t.notOk(s.dev.state.qps.has(a.qp.qpn));
    // terminate: RTS -> TERMINATE (a command), TERMINATE -> ERROR (driver-only)
    const b = await mk();
    await s.drv.modifyQp(b.qp, QpState.TERMINATE);
    t.equal(b.m?.stateName, "TERMINATE");
    const sent = await s.drv.modifyQp(b.qp, QpState.ERROR);
    t.same(sent, [], "TERMINATE -> ERROR sends nothing");
    t.equal(b.m?.stateName, "TERMINATE", "the device stays in TERMINATE");
    // a QP that never connected goes IDLE -> ERROR
    const { qp: c } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 8, maxRecvWr: 8 });
    await s.drv.destroyQp(c);
    t.ok(
      s.host
        .ofKind("state")
        .some((e) => e.object === "qp" && e.id === c.qpn && e.from === "IDLE" && e.to === "ERROR"),
    );
    t.equal(
      s.host.ofKind("cmd").filter((e) => e.status !== 0).length,
      0,
      `${version}: every command accepted`,
    );
  }
});

t.test("REFLUSH under each profile", async (t) => {
  for (const [profile, honoured] of [
    [profileReflush, true],
    [profile2022, false],
    [profileIbCompliant, true],
  ] as const) {
    const s = await setupErdma({ version: "6.12", profile });
    const { cq } = await s.drv.createCq(8);
    const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 8, maxRecvWr: 8 });
    await s.drv.modifyQp(qp, QpState.RTS, rts);
    s.drv.postRecv(qp, { addr: 0x1000n, length: 64, lkey: 0x100 });
    s.drv.postRecv(qp);
    s.drv.postSendRaw(qp, 2);
    s.drv.postSendRaw(qp, 1);
    const m = s.dev.state.qps.get(qp.qpn);
    t.equal(m?.sq.pi, 3, "SQ doorbells move the producer index (WQEBBs)");
    t.equal(m?.rq.pi, 2, "RQ doorbells carry qe_idx = rq_pi + 1");
    const sent = await s.drv.modifyQp(qp, QpState.ERROR);
    t.same(
      sent.map((o) => o.status),
      [0, 0],
    );
    t.same(m?.errorAt, { sqPi: 3, rqPi: 2 }, "what was posted when the QP entered ERROR");
    s.drv.postRecv(qp);
    await s.drv.flushWorker(qp);
    const ev = s.host.ofKind("reflush");
    t.equal(ev.length, 2);
    t.match(ev[1], { qpn: qp.qpn, sqPi: 3, rqPi: 3, mode: profile.reflush });
    if (honoured) {
      t.same(m?.reflushTo, { sqPi: 3, rqPi: 3 }, `${profile.name}: the flush target follows the posts`);
      t.equal(m?.reflushCount, 2);
    } else {
      t.equal(m?.reflushTo, undefined, `${profile.name}: ignored`);
    }
  }
});

t.test("doorbells reach the data path hooks", async (t) => {
  const host = new FakeHost();
  const seen: string[] = [];
  const dev = new ErdmaDevice({
    host,
    mac: "02:00:00:00:00:01",
    dataPath: {
      sqDoorbell: (qp) => seen.push(`sq${qp.qpn}:${qp.sq.pi}`),
      rqDoorbell: (qp) => seen.push(`rq${qp.qpn}:${qp.rq.pi}`),
    },
  });
  const { ErdmaDriver } = await import("../doubles/erdma-driver.ts");
  const drv = new ErdmaDriver(dev, host, { version: "6.12" });
  await drv.probe();
  const { cq } = await drv.createCq(8);
  const { qp } = await drv.createQp({ scq: cq, rcq: cq, maxSendWr: 8, maxRecvWr: 8 });
  drv.postSendRaw(qp, 1);
  drv.postRecv(qp);
  t.same(seen, [`sq${qp.qpn}:1`, `rq${qp.qpn}:1`]);
  t.match(host.ofKind("doorbell").filter((e) => e.db === "sq")[0], {
    id: qp.qpn,
    detail: { pi: 1, page: 95 },
  });
});

t.test("memory regions: kinds, keys, rights and translation", async (t) => {
  const s = await setupErdma({ version: "6.12", memSize: 32 << 20 });
  const pd = s.drv.allocPd();
  const dma = await s.drv.getDmaMr(pd, Acc.LW | Acc.RR);
  const mdma = s.dev.state.mrs.get(dma.mr.stag >>> 8);
  t.equal(mdma?.kind, "dma");
  t.equal(mdma?.valid, true, "DMA MRs are usable although the driver sends valid = 0");
  t.same(JSON.parse(JSON.stringify(mdma)).rights, ["local_read", "local_write", "remote_read"]);
  t.same(await mdma?.translate(0x1234_5678n, 100, "t"), [{ address: 0x1234_5678n, length: 100 }]);
  t.same(await mdma?.translate(0n, 0, "t"), []);

  const frmr = await s.drv.allocFrmr(pd, 64);
  const mf = s.dev.state.mrs.get(frmr.mr.stag >>> 8);
  t.match(mf, { kind: "frmr", valid: false });
  t.equal(mf?.mtt?.count, 64);
  t.equal(mf?.mtt?.entries[0], frmr.mr.table);

  // inline: 3 pages of 4 KiB, IOVA not page aligned
  const pages3 = [s.host.dma.alloc(4096), s.host.dma.alloc(4096), s.host.dma.alloc(4096)].reverse();
  const inl = await s.drv.regUserMr({
    pd,
    va: 0x7f00_0000_0800n,
    length: 0x2000n,
    pages: pages3,
    pageShift: 12,
    access: Acc.LW | Acc.RW,
  });
  t.equal(inl.out.status, 0);
  t.equal(inl.level, 0);
  const mi = s.dev.state.mrs.get(inl.mr.stag >>> 8);
  t.ok(mi?.allows(1 << 5), "remote write");
  t.notOk(mi?.allows(1 << 4), "no remote read");
  t.same(await mi?.translate(0x7f00_0000_0800n, 0x1000, "t"), [
    { address: (pages3[0] ?? 0n) + 0x800n, length: 0x800 },
    { address: pages3[1] ?? 0n, length: 0x800 },
  ]);
  await t.rejects(async () => {
    await mi?.translate(0x7f00_0000_0000n, 16, "t");
  }, RangeError);
  await t.rejects(async () => {
    await mi?.translate(0x7f00_0000_2800n, 1, "t");
  }, RangeError);

  // level 2: 1500 pages through scattered table pages
  const many = Array.from({ length: 1500 }, (_, i) => 0x40_0000_0000n + BigInt(i) * 0x10000n);
  const l2 = await s.drv.regUserMr({
    pd,
    va: 0x1000_0000n,
    length: 1500n * 4096n,
    pages: many,
    pageShift: 12,
  });
  t.equal(l2.out.status, 0, "REG_MR with a 2-level MTT");
  t.equal(l2.level, 2);
  const m2 = s.dev.state.mrs.get(l2.mr.stag >>> 8);
  for (const i of [0, 1, 511, 512, 1023, 1024, 1499]) {
    const seg = await m2?.translate(0x1000_0000n + BigInt(i) * 4096n + 5n, 10, "t");
    t.same(seg, [{ address: (many[i] ?? 0n) + 5n, length: 10 }], `page ${i}`);
  }
  const across = await m2?.translate(0x1000_0000n + 4096n - 4n, 8, "t");
  t.same(
    across,
    [
      { address: (many[0] ?? 0n) + 4092n, length: 4 },
      { address: many[1] ?? 0n, length: 4 },
    ],
    "a range across two pages",
  );

  // level 3: more than 512 x 512 pages
  const huge = Array.from({ length: 512 * 512 + 3 }, (_, i) => BigInt(i) << 12n);
  const l3 = await s.drv.regUserMr({
    pd,
    va: 0n,
    length: BigInt(huge.length) * 4096n,
    pages: huge,
    pageShift: 12,
  });
  t.equal(l3.out.status, 0, "REG_MR with a 3-level MTT");
  t.equal(l3.level, 3);
  const m3 = s.dev.state.mrs.get(l3.mr.stag >>> 8);
  t.same(await m3?.translate(BigInt(512 * 512 + 2) * 4096n, 4, "t"), [
    { address: BigInt(512 * 512 + 2) << 12n, length: 4 },
  ]);
  t.same(await m3?.translate(777n * 4096n, 4, "t"), [{ address: 777n << 12n, length: 4 }]);

  for (const mr of [dma.mr, frmr.mr, inl.mr, l2.mr, l3.mr]) t.equal((await s.drv.deregMr(mr)).status, 0);
  t.equal(s.dev.state.mrs.size, 0);
  t.ok(s.host.ofKind("state").some((e) => e.object === "mr" && e.to === "deregistered"));
});

t.test("without MTT_VA the driver uses one continuous level-1 table", async (t) => {
  const s = await setupErdma({
    version: "6.12",
    profile: { ...profileReflush, caps: { ...profileReflush.caps, mttVa: false } },
  });
  const pages = Array.from({ length: 9 }, (_, i) => 0x2_0000_0000n + BigInt(i) * 0x200000n);
  const r = await s.drv.regUserMr({ pd: 1, va: 0x600000n, length: 9n * 0x200000n, pages, pageShift: 21 });
  t.equal(r.level, 1);
  const m = s.dev.state.mrs.get(r.mr.stag >>> 8);
  t.same(await m?.translate(0x600000n + 8n * 0x200000n + 3n, 1, "t"), [
    { address: (pages[8] ?? 0n) + 3n, length: 1 },
  ]);
});

t.test("user queues located through their MTT", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const m = s.host.dma;
  // a user CQ of 256 CQEs on two scattered 4 KiB pages, through a level-1 table
  const p0 = m.alloc(4096);
  m.alloc(4096);
  const p1 = m.alloc(4096);
  const table = m.alloc(16, 16);
  m.setU64(table, p0);
  m.setU64(table + 8n, p1);
  const out = await s.drv.post(
    R.createCq({
      cqn: 100,
      depthLog: 8,
      eqn: 1,
      pageShift: 12,
      qbuf: table,
      mttCount: 2,
      level: 1,
      dbrec: m.alloc(8, 8),
      firstPageOffset: 0,
    }),
  );
  t.equal(out.status, 0);
  await s.dev.submit("fill", async (st) => {
    const cq = st.cqs.get(100);
    for (let i = 0; i < 130; i++)
      await cq?.post({ opcode: 4, qtype: 1, syndrome: 0, qeIdx: i, qpn: 1, size: 0 });
  });
  t.equal(m.be32(p0 + 4n), 0, "CQE 0 in the first page");
  t.equal(m.be32(p0 + 127n * 32n + 4n), 127, "CQE 127 at the end of the first page");
  t.equal(m.be32(p1 + 4n), 128, "CQE 128 at the start of the second page");
  t.equal(m.be32(p1 + 32n + 4n), 129);

  // a 6.1 user CQ on one page: "indirect" type with the page itself, at an offset
  const old = await setupErdma({ version: "6.1" });
  const page = old.host.dma.alloc(8192);
  const o = await old.drv.post(
    R.createCq({
      cqn: 7,
      depthLog: 4,
      eqn: 1,
      pageShift: 13,
      qbuf: page,
      mttCount: 1,
      level: 1,
      dbrec: old.host.dma.alloc(8, 8),
      firstPageOffset: 0x1000,
    }),
  );
  t.equal(o.status, 0, "6.1's one-page CQ");
  await old.dev.submit("one", async (st) =>
    st.cqs.get(7)?.post({ opcode: 4, qtype: 1, syndrome: 0, qeIdx: 5, qpn: 1, size: 0 }),
  );
  t.equal(old.host.dma.be32(page + 0x1000n + 4n), 5, "written at the first page offset");

  // a user QP: 4 SQ pages inline (6.12), RQ through a level-1 table (as 6.1 did for both)
  const sqPages = [m.alloc(4096), m.alloc(4096), m.alloc(4096), m.alloc(4096)];
  const rqTable = m.alloc(8, 8);
  m.setU64(rqTable, m.alloc(4096));
  const { cq } = await s.drv.createCq(8);
  const req = R.createQp("6.12", {
    qpn: 33,
    pd: 2,
    sqDepthLog: 9,
    rqDepthLog: 7,
    sq: { pageShift: 12, level: 0, count: 4, offset: 0, entries: sqPages, cqn: cq.cqn, dbrec: m.alloc(8, 8) },
    rq: {
      pageShift: 12,
      level: 1,
      count: 1,
      offset: 0,
      entries: [rqTable],
      cqn: cq.cqn,
      dbrec: m.alloc(8, 8),
    },
  });
  t.equal((await s.drv.post(req)).status, 0);
  const qp = s.dev.state.qps.get(33);
  t.equal(qp?.sq.buffer.address(3 * 4096 + 32), (sqPages[3] ?? 0n) + 32n);
  t.equal(qp?.rq.buffer.address(0), m.u64(rqTable));
  t.throws(() => qp?.sq.buffer.address(16 * 4096));
});

t.test("a RoCEv2 device: its commands and state machine", async (t) => {
  const profile = { ...profileReflush, name: "rocev2", protocol: "rocev2" as const };
  const s = await setupErdma({ version: "7.2", profile });
  t.equal(s.drv.proto, 1, "7.2 reads DEV_PROTO");
  const gid = new Uint8Array(16).fill(0xfe);
  t.equal((await s.drv.post(R.setGid({ index: 0, gid }))).status, 0, "SET_GID add");
  t.equal(s.dev.state.gids.get(0)?.gid, "fe".repeat(16));
  t.equal((await s.drv.post(R.setGid({ index: 0, del: true }))).status, 0, "SET_GID del");
  t.equal((await s.drv.post(R.setGid({ index: 0, del: true }))).status, CmdStatus.NOT_FOUND);
  t.equal((await s.drv.post(R.setGid({ index: 99, gid }))).status, CmdStatus.BAD_PARAM);
  t.equal((await s.drv.post(R.createAh({ pdn: 1, ahn: 5 }))).status, 0, "CREATE_AH");
  t.match(s.dev.state.ahs.get(5), { ahn: 5, pdn: 1, av: { flowLabel: 0x12345 } });
  t.equal((await s.drv.post(R.createAh({ pdn: 1, ahn: 5 }))).status, CmdStatus.EXISTS);
  t.equal((await s.drv.post(R.createAh({ pdn: 1, ahn: 1 << 20 }))).status, CmdStatus.BAD_PARAM);
  t.equal((await s.drv.post(R.destroyAh({ pdn: 1, ahn: 5 }))).status, 0, "DESTROY_AH");
  t.equal((await s.drv.post(R.destroyAh({ pdn: 1, ahn: 5 }))).status, CmdStatus.NOT_FOUND);
  const { cq } = await s.drv.createCq(8);
  const m = s.host.dma;
  const q = () => R.inlineQueueMtt(m.alloc(4096), cq.cqn, m.alloc(8, 8));
  t.equal(
    (
      await s.drv.post(
        R.createQp("7.2", { qpn: 1, pd: 1, sqDepthLog: 4, rqDepthLog: 4, sq: q(), rq: q(), type: 1 }),
      )
    ).status,
    0,
    "a UD QP (GSI is QPN 1)",
  );
  t.equal(s.dev.state.qps.get(1)?.type, "ud");
  t.equal(
    (
      await s.drv.post(
        R.createQp("7.2", { qpn: 2, pd: 1, sqDepthLog: 4, rqDepthLog: 4, sq: q(), rq: q(), type: 7 }),
      )
    ).status,
    CmdStatus.BAD_PARAM,
  );
  const mod = (state: number, mask = 1, extra: Partial<Parameters<typeof R.modifyQpRocev2>[0]> = {}) =>
    s.drv.post(R.modifyQpRocev2({ qpn: 1, state, mask, ...extra }));
  t.equal((await mod(3)).status, CmdStatus.BAD_STATE, "RESET -> RTS");
  t.equal((await mod(1, 1 | 2, { qkey: 0x11 })).status, 0, "RESET -> INIT with a qkey");
  t.equal((await mod(2, 1 | 4 | 16 | 32, { rqPsn: 0x1234, dstQpn: 9 })).status, 0, "INIT -> RTR");
  t.equal((await mod(3, 1 | 8, { sqPsn: 0x5678 })).status, 0, "RTR -> RTS");
  t.equal((await mod(9)).status, CmdStatus.BAD_PARAM, "state 9");
  t.equal((await mod(0, 0)).status, 0, "no STATE bit: attributes only");
  const query = await s.drv.post(R.queryQp(1));
  t.equal(query.status, 0, "QUERY_QP");
  t.equal(Number(query.resp0 & 0xffffffn), 0x5678, "sq psn");
  t.equal(Number((query.resp0 >> 24n) & 0xffffffn), 0x1234, "rq psn");
  t.equal(Number((query.resp0 >> 48n) & 0xffn), 3, "state RTS");
  t.match(s.dev.state.qps.get(1)?.rocev2, { qkey: 0x11, dstQpn: 9 });
  t.equal((await mod(6)).status, 0, "RTS -> ERROR");
  t.same(s.dev.state.qps.get(1)?.errorAt, { sqPi: 0, rqPi: 0 });
  t.equal((await s.drv.post(R.queryQp(50))).status, CmdStatus.NOT_FOUND);
  t.equal(s.host.ofKind("internal-error").length, 0);
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
