import t, { type Test } from "tap";
import { CmdStatus, type ErdmaProfile, profileReflush } from "../../qemu/erdma/index.ts";
import { CmdTimeout, QpState, setupErdma } from "../doubles/erdma-driver.ts";
import * as R from "../doubles/erdma-requests.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";

const S = CmdStatus;
const HOLE = 0x7_0000_0000n; // far outside the fake guest memory

/** REG_MR of a valid MR in PD 1, 4 KiB pages, access 6: local read and write (erdma_verbs.h:83-84, 6.12). */
const mrRequest = (o: Pick<R.RegMrArgs, "stag" | "level" | "count"> & Partial<R.RegMrArgs>) =>
  R.regMr({ pd: 1, type: 0, access: 6, valid: true, pageShift: 12, ...o });
/**
 * REG_MR of a fast-registration MR in PD 1: not valid until a REG_MR WQE, 4 KiB pages, a level-1
 * table, access 30: local and remote read and write (erdma_verbs.h:83-86, 6.12).
 */
const frmrRequest = (o: Pick<R.RegMrArgs, "stag" | "count"> & Partial<R.RegMrArgs>) =>
  R.regMr({ pd: 1, type: 1, access: 30, valid: false, pageShift: 12, level: 1, ...o });

async function stillWorks(t: Test, drv: Awaited<ReturnType<typeof setupErdma>>["drv"]) {
  const out = await drv.post(R.queryFwInfo());
  t.equal(out.status, 0, "the command queue still works");
}

type Setup = Awaited<ReturnType<typeof setupErdma>>;

function noInternalErrors(t: Test, s: Setup) {
  t.equal(s.host.ofKind("internal-error").length, 0, "no internal errors");
  t.equal(s.host.dma.outOfBounds, 0, "no access outside guest memory");
}

/**
 * A 6.12 device (with `profile`, if given) and one IDLE QP on a CQ of 8; `send` posts MODIFY_QP to
 * a state and gives the command's status, `mqp` is the device's QP.
 */
async function oneQp(profile?: ErdmaProfile) {
  const s = await setupErdma({ version: "6.12", ...(profile ? { profile } : {}) });
  const { cq } = await s.drv.createCq(8);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  const mqp = s.dev.state.qps.get(qp.qpn);
  const send = async (to: number) => (await s.drv.post(R.modifyQp(qp.qpn, to))).status;
  return { s, qp, mqp, send };
}

t.test("unknown opcodes and sub modules complete with an error and are traced", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const cases: Array<[number, number]> = [
    [0, 7],
    [0, 10],
    [0, 255],
    [1, 6],
    [1, 7],
    [1, 10],
    [2, 0],
    [3, 1],
    // RoCEv2 commands on an iWARP device
    [0, 14],
    [0, 15],
    [0, 16],
    [0, 17],
  ];
  for (const [submod, opcode] of cases) {
    const out = await s.drv.post(new R.ReqBuf(16).hdr(submod, opcode).bytes);
    t.equal(out.status, S.BAD_OPCODE, `${submod}/${opcode}`);
  }
  const traced = s.host.ofKind("cmd").filter((e) => e.status === S.BAD_OPCODE);
  t.equal(traced.length, cases.length);
  t.match(traced[0], { statusName: "BAD_OPCODE", reason: /no command 0\/7/ });
  await stillWorks(t, s.drv);
  noInternalErrors(t, s);
});

t.test("commands a profile leaves out are unknown opcodes", async (t) => {
  const s = await setupErdma({
    version: "6.12",
    profile: { ...profileReflush, reflush: "unsupported", statsCommand: false, confDeviceCommand: false },
  });
  const { cq } = await s.drv.createCq(8);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  const sent = await s.drv.modifyQp(qp, QpState.ERROR);
  t.same(
    sent.map((o) => o.status),
    [0, S.BAD_OPCODE],
    "REFLUSH fails; the 6.12 driver ignores its status",
  );
  t.equal((await s.drv.getStats()).out.status, S.BAD_OPCODE);
  t.equal((await s.drv.post(R.confDevice(12))).status, S.BAD_OPCODE);
  noInternalErrors(t, s);
});

t.test("bad lengths", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const { cq } = await s.drv.createCq(8);
  t.equal(
    (await s.drv.post(R.queryFwInfo(), { wqebbCnt: 8, advance: 8 })).status,
    S.BAD_LENGTH,
    "an SQE of 8 WQEBBs",
  );
  t.equal(
    (await s.drv.post(R.queryFwInfo(), { wqebbCnt: 5, advance: 5 })).status,
    S.BAD_LENGTH,
    "an SQE of 5 WQEBBs",
  );
  t.equal(
    (await s.drv.post(R.queryFwInfo(), { wqebbCnt: 4, advance: 1 })).status,
    S.BAD_LENGTH,
    "an SQE longer than the doorbell covers",
  );
  const q = (buf: bigint, dbrec: bigint) => R.inlineQueueMtt(buf, cq.cqn, dbrec);
  const m = s.host.dma;
  const qpReq = R.createQp("6.12", {
    qpn: 5,
    pd: 1,
    sqDepthLog: 4,
    rqDepthLog: 4,
    sq: q(m.alloc(4096), m.alloc(8, 8)),
    rq: q(m.alloc(4096), m.alloc(8, 8)),
  });
  t.equal(
    (await s.drv.post(qpReq.slice(0, 32), { wqebbCnt: 1, advance: 1 })).status,
    S.BAD_LENGTH,
    "CREATE_QP in a one-WQEBB SQE",
  );
  t.equal(
    (await s.drv.post(R.getStats({ target: m.alloc(256), length: 16 }))).status,
    S.BAD_LENGTH,
    "stats target too short",
  );
  t.equal(
    (await s.drv.post(R.getStats({ target: m.alloc(256), length: 4096 }))).status,
    S.BAD_LENGTH,
    "stats target too long",
  );
  t.equal(s.dev.state.qps.size, 0);
  await stillWorks(t, s.drv);
  noInternalErrors(t, s);

  // a 6.1 driver's 64-byte SQE cannot carry inline MTT entries beyond the first
  const old = await setupErdma({ version: "6.1" });
  const { cq: cq1 } = await old.drv.createCq(8);
  const m1 = old.host.dma;
  const two = (dbrec: bigint): R.QueueMtt => ({
    pageShift: 12,
    level: 0,
    count: 2,
    offset: 0,
    entries: [m1.alloc(4096), m1.alloc(4096)],
    cqn: cq1.cqn,
    dbrec,
  });
  const req = R.createQp("6.1", {
    qpn: 3,
    pd: 1,
    sqDepthLog: 8,
    rqDepthLog: 4,
    sq: two(m1.alloc(8, 8)),
    rq: two(m1.alloc(8, 8)),
  });
  const out = await old.drv.post(req);
  t.equal(out.status, S.BAD_LENGTH, "mtt_entry beyond a 64-byte SQE");
  t.match(old.host.ofKind("cmd").at(-1), { reason: /mtt_entry at byte 64 beyond the 64-byte SQE/ });
  noInternalErrors(t, old);
});

t.test("bad queue and table addresses", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const m = s.host.dma;
  const dbrec = () => m.alloc(8, 8);
  const cqArgs = (o: Partial<R.CreateCqArgs>) =>
    R.inlineCqArgs({ cqn: 50, depthLog: 4, eqn: 1, qbuf: m.alloc(4096), dbrec: dbrec(), ...o });
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ qbuf: HOLE })))).status,
    S.DMA_FAULT,
    "CQ buffer outside memory",
  );
  const holed = m.alloc(8192);
  m.unmap(holed + 4096n, 4096);
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ qbuf: holed, depthLog: 8, pageShift: 13 })))).status,
    S.DMA_FAULT,
    "CQ buffer running into an unmapped page",
  );
  t.equal((await s.drv.post(R.createCq(cqArgs({ dbrec: HOLE })))).status, S.DMA_FAULT, "CQ doorbell record");
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ level: 1, mttCount: 2, qbuf: HOLE })))).status,
    S.DMA_FAULT,
    "level-1 MTT table unmapped",
  );
  const table = m.alloc(16, 16);
  m.setU64(table, m.alloc(4096));
  m.setU64(table + 8n, HOLE);
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ level: 1, mttCount: 2, qbuf: table, depthLog: 8 })))).status,
    S.DMA_FAULT,
    "an MTT entry pointing outside memory",
  );
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ depthLog: 8 })))).status,
    S.BAD_PARAM,
    "one 4 KiB page cannot hold 256 CQEs",
  );
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ level: 0, mttCount: 2 })))).status,
    S.BAD_PARAM,
    "level 0 with two pages",
  );
  t.equal(
    (await s.drv.post(R.createCq(cqArgs({ firstPageOffset: 8192 })))).status,
    S.BAD_PARAM,
    "first page offset beyond the page",
  );
  t.equal((await s.drv.post(R.createCq(cqArgs({ mttCount: 0 })))).status, S.BAD_PARAM, "no pages");
  t.equal(s.dev.state.cqs.size, 0, "no CQ was created");

  const { cq } = await s.drv.createCq(8);
  const q = (o: Partial<R.QueueMtt>): R.QueueMtt => ({
    ...R.inlineQueueMtt(m.alloc(4096), cq.cqn, dbrec()),
    ...o,
  });
  const qp = (sq: Partial<R.QueueMtt>, rq: Partial<R.QueueMtt> = {}) =>
    R.createQp("6.12", { qpn: 9, pd: 1, sqDepthLog: 4, rqDepthLog: 4, sq: q(sq), rq: q(rq) });
  t.equal((await s.drv.post(qp({ entries: [HOLE] }))).status, S.DMA_FAULT, "SQ buffer unmapped");
  t.equal((await s.drv.post(qp({}, { dbrec: HOLE }))).status, S.DMA_FAULT, "RQ doorbell record unmapped");
  t.equal(
    (await s.drv.post(qp({ level: 1, count: 3, entries: [HOLE] }))).status,
    S.DMA_FAULT,
    "SQ MTT unmapped",
  );
  t.equal((await s.drv.post(qp({ level: 0, count: 5 }))).status, S.BAD_PARAM, "5 inline entries");
  t.equal((await s.drv.post(qp({ count: 0 }))).status, S.BAD_PARAM, "no SQ pages");
  t.equal(s.dev.state.qps.size, 0);

  const eq = (o: { qbuf?: bigint; dbrec?: bigint; eqn?: number; depthLog?: number; vector?: number }) =>
    R.createEq({
      eqn: o.eqn ?? 20,
      vector: o.vector ?? 1,
      depthLog: o.depthLog ?? 4,
      qbuf: o.qbuf ?? m.alloc(4096),
      dbrec: o.dbrec ?? dbrec(),
    });
  t.equal((await s.drv.post(eq({ qbuf: HOLE }))).status, S.DMA_FAULT, "EQ buffer unmapped");
  t.equal((await s.drv.post(eq({ dbrec: HOLE }))).status, S.DMA_FAULT, "EQ doorbell record unmapped");

  const frmr = frmrRequest({ stag: 0x4000, count: 8, phys: [HOLE] });
  t.equal((await s.drv.post(frmr)).status, S.DMA_FAULT, "FRMR table unmapped");
  const normal = (o: Partial<R.RegMrArgs>) =>
    mrRequest({ stag: 0x4100, level: 1, count: 8, va: 0x10000n, size: 0x8000n, phys: [HOLE], ...o });
  t.equal((await s.drv.post(normal({}))).status, S.DMA_FAULT, "MR level-1 table unmapped");
  t.equal(
    (await s.drv.post(normal({ level: 2, version1: { mttPageField: 0 } }))).status,
    S.DMA_FAULT,
    "MR level-2 top unmapped",
  );
  t.equal(
    (await s.drv.post(R.getStats({ target: HOLE, length: 256 }))).status,
    S.DMA_FAULT,
    "stats target unmapped",
  );
  t.equal(s.dev.state.mrs.size, 0);
  await stillWorks(t, s.drv);
  noInternalErrors(t, s);
});

t.test("unknown QPN, CQN, EQN, MR and doorbell pages", async (t) => {
  const s = await setupErdma({ version: "7.2" });
  const { cq } = await s.drv.createCq(8);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  t.equal((await s.drv.post(R.destroyQp(999))).status, S.NOT_FOUND, "DESTROY_QP");
  t.equal((await s.drv.post(R.modifyQp(999, QpState.ERROR))).status, S.NOT_FOUND, "MODIFY_QP");
  t.equal((await s.drv.post(R.reflush({ qpn: 999, sqPi: 0, rqPi: 0 }))).status, S.NOT_FOUND, "REFLUSH");
  t.equal((await s.drv.post(R.destroyCq(999))).status, S.NOT_FOUND, "DESTROY_CQ");
  t.equal((await s.drv.post(R.destroyEq({ eqn: 30, vector: 30 }))).status, S.NOT_FOUND, "DESTROY_EQ");
  t.equal((await s.drv.post(R.deregMr(0x7700))).status, S.NOT_FOUND, "DEREG_MR");
  const dma = await s.drv.getDmaMr(1);
  t.equal(
    (await s.drv.post(R.deregMr(dma.mr.stag | 0x5))).status,
    S.BAD_PARAM,
    "DEREG_MR with the wrong key",
  );
  const m = s.host.dma;
  const q = (cqn: number) => R.inlineQueueMtt(m.alloc(4096), cqn, m.alloc(8, 8));
  t.equal(
    (
      await s.drv.post(
        R.createQp("7.2", { qpn: 77, pd: 1, sqDepthLog: 4, rqDepthLog: 4, sq: q(cq.cqn), rq: q(1234) }),
      )
    ).status,
    S.NOT_FOUND,
    "CREATE_QP with an RQ CQ that does not exist",
  );
  t.equal(
    (
      await s.drv.post(
        R.createCq(
          R.inlineCqArgs({ cqn: 60, depthLog: 4, eqn: 9, qbuf: m.alloc(4096), dbrec: m.alloc(8, 8) }),
        ),
      )
    ).status,
    S.NOT_FOUND,
    "CREATE_CQ on an EQ that does not exist",
  );
  t.equal(
    (
      await s.drv.post(
        R.createCq(
          R.inlineCqArgs({
            cqn: 61,
            depthLog: 4,
            eqn: 1,
            qbuf: m.alloc(4096),
            dbrec: m.alloc(8, 8),
            cdb: 200,
          }),
        ),
      )
    ).status,
    S.BAD_PARAM,
    "CREATE_CQ naming a doorbell page nobody allocated",
  );
  const ext = R.createQp("7.2", {
    qpn: 78,
    pd: 1,
    sqDepthLog: 4,
    rqDepthLog: 4,
    sq: q(cq.cqn),
    rq: q(cq.cqn),
    extDb: { sdb: 3, rdb: 100 },
  });
  t.equal((await s.drv.post(ext)).status, S.BAD_PARAM, "CREATE_QP naming unallocated doorbell pages");
  t.ok(s.dev.state.qps.has(qp.qpn), "the real QP is untouched");
  // doorbells naming objects that do not exist are traced and dropped
  s.dev.bar0Write(0x79000, 8, (999n << 32n) | (1n << 31n));
  s.dev.bar0Write(0x5f000, 8, (999n << 32n) | 1n);
  s.dev.bar0Write(0x61000, 8, (999n << 32n) | 1n);
  s.dev.bar0Write(0x100 + 8 * 9, 8, 1n << 31n);
  await s.dev.idle();
  t.equal(s.host.ofKind("warn").filter((e) => /does not exist/.test(e.message)).length, 4);
  noInternalErrors(t, s);
});

t.test("duplicates and out-of-range numbers", async (t) => {
  const s = await setupErdma({ version: "6.12" });
  const m = s.host.dma;
  const { cq } = await s.drv.createCq(8);
  const cq2 = (o: Partial<R.CreateCqArgs>) =>
    R.createCq(
      R.inlineCqArgs({ cqn: cq.cqn, depthLog: 3, eqn: 1, qbuf: m.alloc(4096), dbrec: m.alloc(8, 8), ...o }),
    );
  t.equal((await s.drv.post(cq2({}))).status, S.EXISTS, "CQN in use");
  t.equal((await s.drv.post(cq2({ cqn: 0 }))).status, S.BAD_PARAM, "CQN 0");
  t.equal((await s.drv.post(cq2({ cqn: 4096 }))).status, S.BAD_PARAM, "CQN beyond max_cq");
  t.equal((await s.drv.post(cq2({ cqn: 70, depthLog: 30 }))).status, S.BAD_PARAM, "depth beyond max_cqe");
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 4, maxRecvWr: 4 });
  const q = () => R.inlineQueueMtt(m.alloc(4096), cq.cqn, m.alloc(8, 8));
  const qpReq = (o: Partial<R.CreateQpArgs>) =>
    R.createQp("6.12", { qpn: qp.qpn, pd: 1, sqDepthLog: 4, rqDepthLog: 4, sq: q(), rq: q(), ...o });
  t.equal((await s.drv.post(qpReq({}))).status, S.EXISTS, "QPN in use");
  t.equal((await s.drv.post(qpReq({ qpn: 0 }))).status, S.BAD_PARAM, "QPN 0");
  t.equal((await s.drv.post(qpReq({ qpn: 1024 }))).status, S.BAD_PARAM, "QPN beyond max_qp");
  t.equal(
    (await s.drv.post(qpReq({ qpn: 30, sqDepthLog: 16 }))).status,
    S.BAD_PARAM,
    "SQ deeper than 8192 x 4 WQEBBs",
  );
  t.equal(
    (await s.drv.post(qpReq({ qpn: 30, rqDepthLog: 14 }))).status,
    S.BAD_PARAM,
    "RQ deeper than max_recv_wr",
  );
  const eq = (o: { eqn?: number; vector?: number; depthLog?: number; qtype?: number }) => {
    const b = R.createEq({
      eqn: o.eqn ?? 1,
      vector: o.vector ?? 1,
      depthLog: o.depthLog ?? 4,
      qbuf: m.alloc(4096),
      dbrec: m.alloc(8, 8),
    });
    if (o.qtype !== undefined) b[19] = o.qtype;
    return b;
  };
  t.equal((await s.drv.post(eq({}))).status, S.EXISTS, "EQN in use");
  t.equal((await s.drv.post(eq({ eqn: 0 }))).status, S.BAD_PARAM, "EQN 0 is the CMDQ EQ");
  t.equal((await s.drv.post(eq({ eqn: 32 }))).status, S.BAD_PARAM, "EQN beyond the vectors");
  t.equal((await s.drv.post(eq({ eqn: 5, vector: 40 }))).status, S.BAD_PARAM, "vector beyond the function's");
  t.equal((await s.drv.post(eq({ eqn: 5, depthLog: 20 }))).status, S.BAD_PARAM, "EQ too deep");
  t.equal((await s.drv.post(eq({ eqn: 5, qtype: 0 }))).status, S.BAD_PARAM, "an AEQ by command");
  const dEq = R.destroyEq({ eqn: 1, vector: 1 });
  dEq[19] = 0;
  t.equal((await s.drv.post(dEq)).status, S.BAD_PARAM, "DESTROY_EQ of the AEQ type");
  const mr = (o: Partial<R.RegMrArgs>) =>
    mrRequest({ stag: 0x100, level: 0, count: 1, va: 0x1000n, size: 0x1000n, phys: [m.alloc(4096)], ...o });
  t.equal((await s.drv.post(mr({}))).status, 0, "REG_MR");
  t.equal((await s.drv.post(mr({}))).status, S.EXISTS, "MPT index in use");
  t.equal((await s.drv.post(mr({ stag: 0x0fff_ff00 }))).status, S.BAD_PARAM, "MPT index beyond max_mr");
  t.equal((await s.drv.post(mr({ stag: 0x200, type: 3 as 0 }))).status, S.BAD_PARAM, "MR type 3");
  t.equal((await s.drv.post(mr({ stag: 0x200, pageShift: 11 }))).status, S.BAD_PARAM, "page size 2 KiB");
  t.equal((await s.drv.post(mr({ stag: 0x200, size: 0n }))).status, S.BAD_PARAM, "size 0");
  t.equal(
    (await s.drv.post(mr({ stag: 0x200, size: 0x2000n }))).status,
    S.BAD_PARAM,
    "one page cannot hold 8 KiB",
  );
  t.equal((await s.drv.post(mr({ stag: 0x200, count: 5 }))).status, S.BAD_PARAM, "5 inline pages");
  t.equal((await s.drv.post(mr({ stag: 0x200, level: 2 }))).status, S.BAD_PARAM, "level 2 without version 1");
  t.equal(
    (
      await s.drv.post(
        mr({ stag: 0x200, level: 3, count: 0xfffff, version1: { mttPageField: 0 }, size: 1n << 40n }),
      )
    ).status,
    S.BAD_PARAM,
    "larger than max_mr_size",
  );
  const frmr = (o: Partial<R.RegMrArgs>) =>
    frmrRequest({ stag: 0x300, count: 4, phys: [m.alloc(4096)], ...o });
  t.equal((await s.drv.post(frmr({ level: 0 }))).status, S.BAD_PARAM, "FRMR without a table");
  t.equal((await s.drv.post(frmr({ count: 0 }))).status, S.BAD_PARAM, "FRMR of 0 pages");
  t.equal((await s.drv.post(frmr({ pageShift: 40 }))).status, S.BAD_PARAM, "FRMR page size");
  t.equal((await s.drv.setMtu(10)).status, S.BAD_PARAM, "MTU 10");
  t.equal((await s.drv.post(R.confDevice(40))).status, S.BAD_PARAM, "page shift 40");
  noInternalErrors(t, s);
});

t.test("bad state transitions fail and leave the state alone", async (t) => {
  const { s, qp, mqp, send } = await oneQp();
  t.equal(await send(QpState.CLOSING), S.BAD_STATE, "IDLE -> CLOSING");
  t.equal(await send(QpState.TERMINATE), S.BAD_STATE, "IDLE -> TERMINATE");
  t.equal(await send(QpState.IDLE), S.BAD_STATE, "IDLE -> IDLE");
  t.equal(await send(6), S.BAD_PARAM, "state 6");
  t.equal(await send(7), S.BAD_PARAM, "state 7 (UNDEF)");
  t.equal(await send(255), S.BAD_PARAM, "state 255");
  t.equal(mqp?.stateName, "IDLE");
  const rts = { cookie: 1, sip: 1, dip: 2, sport: 3, dport: 4, sendNxt: 5, recvNxt: 6 };
  t.equal((await s.drv.post(R.modifyQp(qp.qpn, QpState.RTS, rts))).status, 0);
  t.equal((await s.drv.post(R.modifyQp(qp.qpn, QpState.RTS, rts))).status, S.BAD_STATE, "RTS -> RTS");
  t.equal(await send(QpState.IDLE), S.BAD_STATE, "RTS -> IDLE");
  t.equal(await send(QpState.RTR), S.BAD_STATE, "RTS -> RTR");
  t.equal(mqp?.stateName, "RTS");
  t.equal(await send(QpState.ERROR), 0);
  t.equal((await s.drv.post(R.modifyQp(qp.qpn, QpState.RTS, rts))).status, S.BAD_STATE, "ERROR -> RTS");
  t.equal(await send(QpState.IDLE), S.BAD_STATE, "ERROR -> IDLE");
  t.equal(await send(QpState.ERROR), 0, "ERROR -> ERROR is a no-op");
  t.equal(mqp?.stateName, "ERROR");
  const bad = s.host.ofKind("cmd").filter((e) => e.status === S.BAD_STATE);
  t.match(bad[0], { reason: "IDLE -> CLOSING" });
  noInternalErrors(t, s);
});

t.test(
  "the default (closeInError accept): MODIFY_QP to CLOSING or TERMINATE in ERROR completes, the QP stays in ERROR",
  async (t) => {
    t.equal(profileReflush.closeInError, "accept", "the default profile accepts");
    const { s, mqp, send } = await oneQp();
    t.equal(await send(QpState.CLOSING), S.BAD_STATE, "IDLE -> CLOSING is still refused");
    t.equal(await send(QpState.ERROR), 0);
    t.equal(await send(QpState.CLOSING), 0, "ERROR -> CLOSING accepted");
    t.equal(await send(QpState.TERMINATE), 0, "ERROR -> TERMINATE accepted");
    t.equal(mqp?.stateName, "ERROR", "and the QP stays in ERROR");
    t.equal(await send(QpState.IDLE), S.BAD_STATE, "ERROR -> IDLE still refused");
    const accepted = s.host.ofKind("cmd").filter((e) => e.detail?.accepted !== undefined);
    t.match(accepted[0], {
      status: 0,
      detail: { from: "ERROR", to: "ERROR", accepted: "CLOSING in ERROR (closeInError: accept)" },
    });
    noInternalErrors(t, s);
  },
);

t.test(
  "closeInError refuse: MODIFY_QP to CLOSING or TERMINATE in ERROR is BAD_STATE, the QP stays in ERROR",
  async (t) => {
    const { s, mqp, send } = await oneQp({ ...profileReflush, closeInError: "refuse" });
    t.equal(await send(QpState.ERROR), 0);
    t.equal(await send(QpState.CLOSING), S.BAD_STATE, "ERROR -> CLOSING refused");
    t.equal(await send(QpState.TERMINATE), S.BAD_STATE, "ERROR -> TERMINATE refused");
    t.equal(await send(QpState.ERROR), 0, "ERROR -> ERROR is still a no-op");
    t.equal(mqp?.stateName, "ERROR");
    const bad = s.host.ofKind("cmd").filter((e) => e.status === S.BAD_STATE);
    t.match(
      bad.map((e) => e.reason),
      ["ERROR -> CLOSING", "ERROR -> TERMINATE"],
    );
    noInternalErrors(t, s);
  },
);

t.test("guest memory vanishing under the device", async (t) => {
  await t.test("CMDQ SQ unmapped: the header read faults, the command fails", async (t) => {
    const s = await setupErdma({ version: "6.12" });
    s.host.dma.unmap(s.drv.sq.qbuf, s.drv.sq.depth * 32);
    const out = await s.drv.post(R.queryFwInfo());
    t.equal(out.status, S.DMA_FAULT);
    t.ok(s.host.ofKind("dma-fault").some((e) => e.context === "CMDQ SQE"));
    s.host.dma.remapAll();
    await stillWorks(t, s.drv);
    noInternalErrors(t, s);
  });
  await t.test("CMDQ SQE body unmapped after the header", async (t) => {
    const s = await setupErdma({ version: "6.12" });
    const slot = s.drv.sq.qbuf + BigInt((s.drv.sq.pi & (s.drv.sq.depth - 1)) * 32);
    s.host.dma.unmap(slot + 32n, 32);
    t.equal((await s.drv.post(R.queryFwInfo())).status, S.DMA_FAULT);
    noInternalErrors(t, s);
  });
  await t.test(
    "CMDQ CQ unmapped: completions are lost, the driver times out, the device survives",
    async (t) => {
      const s = await setupErdma({ version: "6.12" });
      s.host.dma.unmap(s.drv.cq.qbuf, s.drv.cq.depth * 32);
      await t.rejects(s.drv.post(R.queryFwInfo()), CmdTimeout);
      t.ok(s.host.ofKind("state").some((e) => e.object === "cmdq" && e.to === "broken"));
      noInternalErrors(t, s);
    },
  );
  await t.test("CMDQ EQ unmapped: the event is lost, the interrupt never comes", async (t) => {
    const s = await setupErdma({ version: "7.2" });
    s.host.dma.unmap(s.drv.eq.qbuf, s.drv.eq.depth * 16);
    await t.rejects(s.drv.post(R.queryFwInfo()), CmdTimeout);
    noInternalErrors(t, s);
  });
  await t.test("a data CQ unmapped: CQ_ERR on the AEQ", async (t) => {
    const s = await setupErdma({ version: "6.12" });
    const { cq } = await s.drv.createCq(8);
    s.host.dma.unmap(cq.qbuf, cq.depth * 32);
    const ok = await s.dev.submit(
      "cqe",
      (st) =>
        st.cqs.get(cq.cqn)?.post({ opcode: 4, qtype: 1, syndrome: 0, qeIdx: 0, qpn: 1, size: 0 }) ??
        Promise.resolve(false),
    );
    t.equal(ok, false);
    await s.drv.settle();
    t.same(s.drv.aeqEvents, [{ type: 3, subtype: 0, data0: cq.cqn, data1: 0 }], "CQ_ERR with the CQN");
    const again = await s.dev.submit(
      "cqe",
      (st) =>
        st.cqs.get(cq.cqn)?.post({ opcode: 4, qtype: 1, syndrome: 0, qeIdx: 0, qpn: 1, size: 0 }) ??
        Promise.resolve(false),
    );
    t.equal(again, false, "a broken CQ stays broken");
    noInternalErrors(t, s);
  });
  await t.test("a CEQ unmapped: the EQ breaks, the device survives", async (t) => {
    const s = await setupErdma({ version: "6.12" });
    const { cq } = await s.drv.createCq(8);
    const eq = s.drv.ceqs[0];
    if (!eq) throw new Error("no CEQ");
    s.host.dma.unmap(eq.qbuf, eq.depth * 16);
    s.drv.notifyCq(cq);
    await s.dev.submit("cqe", async (st) =>
      st.cqs.get(cq.cqn)?.post({ opcode: 4, qtype: 1, syndrome: 0, qeIdx: 0, qpn: 1, size: 0 }),
    );
    await s.drv.settle();
    t.equal(s.dev.state.ceqs.get(1)?.broken, true);
    t.equal(s.drv.pollCq(cq).length, 1, "the CQE itself was written");
    noInternalErrors(t, s);
  });
});

t.test("every event the model wrote matches the hardware trace's schema", async (t) => {
  t.same(traceSchemaProblems(), []);
});
