// Rule hw-protocol (README, What is judged, rule 10) on hardware traces: hand-made ones for each
// check (a command for a destroyed object, a doorbell past the ring, a REFLUSH whose indexes no
// doorbell carried, a CQ doorbell past the CQ, a DMA fault, a refusal no check explains), and the
// device model's own, driven by the driver double, where the check reads a fact the model writes
// (the refused command's object, the doorbell's ring, the model's own warnings and reasons).
import t from "tap";
import { TraceModel } from "../../harness/oracle/model.ts";
import type { RuleResult } from "../../harness/oracle/rule.ts";
import { hwProtocolRule } from "../../harness/oracle/rules/hw-protocol.ts";
import type { HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import { profileReflush } from "../../qemu/erdma/profile.ts";
import type { ErdmaTraceEvent } from "../../qemu/erdma/trace-schema.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { connectQps, QpState, setupErdma } from "../doubles/erdma-driver.ts";
import { traceSchemaProblems } from "../doubles/fake-guest.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";

type Ev = ErdmaTraceEvent;
let clock = 0;
const at = (dev = "erdma") => ({ t: ++clock, dev });

const cmd = (name: string, status: number, extra: Partial<Extract<Ev, { kind: "cmd" }>> = {}): Ev => ({
  ...at(),
  ...cmdEventBody(name, status, extra),
});
const state = (object: "qp" | "cq" | "eq" | "mr" | "device", id: number, from: string, to: string): Ev => ({
  ...at(),
  kind: "state",
  object,
  id,
  from,
  to,
});
const createQp = (qpn: number, cqn = 1, depth = { sq: 8, rq: 4 }): Ev[] => [
  state("qp", qpn, "none", "IDLE"),
  cmd("CREATE_QP", 0, {
    detail: {
      qpn,
      sqDepthLog: Math.log2(depth.sq),
      rqDepthLog: Math.log2(depth.rq),
      sqCqn: cqn,
      rqCqn: cqn,
    },
  }),
];
const destroyQp = (qpn: number): Ev[] => [
  state("qp", qpn, "ERROR", "destroyed"),
  cmd("DESTROY_QP", 0, { detail: { qpn, state: "ERROR" } }),
];
const doorbell = (db: "sq" | "rq", qpn: number, pi: number, ring?: { depth: number; ci: number }): Ev => ({
  ...at(),
  kind: "doorbell",
  db,
  value: `0x${((BigInt(qpn) << 32n) | BigInt(pi)).toString(16)}`,
  id: qpn,
  detail: { pi, page: db === "sq" ? 95 : 96 },
  ...(ring ? { ring } : {}),
});
const cqDoorbell = (cqn: number, ci: number, ring: { depth: number; pi: number }): Ev => ({
  ...at(),
  kind: "doorbell",
  db: "cq",
  value: `0x${((BigInt(cqn) << 32n) | (1n << 31n) | BigInt(ci)).toString(16)}`,
  id: cqn,
  detail: { page: 128 },
  ring,
});
const cqe = (cq: number, index: number): Ev => ({
  ...at(),
  kind: "cqe",
  cq,
  index,
  owner: 1,
  qpn: 3,
  syndrome: 0,
  opcode: 0,
});
const reflush = (qpn: number, sqPi: number, rqPi: number): Ev =>
  cmd("REFLUSH", 0, { opcode: 6, detail: { qpn, sqPi, rqPi, mode: "honour", state: "ERROR" } });
const warn = (message: string, detail?: Record<string, unknown>): Ev => ({
  ...at(),
  kind: "warn",
  message,
  ...(detail ? { detail } : {}),
});
const fired = (kind: string, context: Record<string, unknown>): Ev => ({
  ...at(),
  kind: "fault",
  action: "fired",
  id: 1,
  fault: { kind },
  context,
});

function judge(hw: readonly HwTraceEvent[] | undefined): RuleResult {
  for (const e of hw ?? []) if (!("src" in e)) erdmaTraceEventSchema.parse(e);
  return hwProtocolRule.judge({
    model: new TraceModel([]),
    observations: [],
    profile: "linux",
    ...(hw ? { hw } : {}),
  });
}

function reasons(r: RuleResult): string[] {
  return (r.problems ?? []).map((p) => p.reason);
}

/** The device model and the driver double with one CQ of `cqDepth` entries and one QP on it. */
async function modelQp(cqDepth: number, maxSendWr: number) {
  const s = await setupErdma();
  const { cq } = await s.drv.createCq(cqDepth);
  const { qp } = await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr, maxRecvWr: 4 });
  return { s, qp };
}

t.test("no hardware trace: not judged; a trace with nothing the driver did: nothing to judge", async (t) => {
  const none = judge(undefined);
  t.same([none.verdict, none.applies], ["SKIP", false]);
  const empty = judge([cqe(1, 0)]);
  t.same([empty.verdict, empty.applies, empty.judged], ["SKIP", true, 0]);
});

t.test(
  "(a) a driver that sends a command for a destroyed QP FAILs, naming the command and the QP",
  async (t) => {
    const hw = [
      ...createQp(3),
      ...destroyQp(3),
      cmd("REFLUSH", 4, { reason: "qpn 3 does not exist", object: { kind: "qp", id: 3 } }),
    ];
    const r = judge(hw);
    t.equal(r.verdict, "FAIL");
    t.match(reasons(r), [
      /^REFLUSH for QP 3 after DESTROY_QP of QP 3 \(t=\d+\): NOT_FOUND \(qpn 3 does not exist\)$/,
    ]);
    t.match(r.evidence?.join("\n"), /contract \(a, lifetime\).*erdma_destroy_qp.*cancel_delayed_work_sync/);
    t.match(r.evidence?.join("\n"), /"name":"REFLUSH"/, "quotes the command's event");
    t.equal(r.judged, 3, "three commands checked");
  },
);

t.test(
  "(a) the same, written by the device model for the driver double's REFLUSH after DESTROY_QP",
  async (t) => {
    const { s, qp } = await modelQp(8, 4);
    await s.drv.destroyQp(qp);
    await s.drv.flushWorker(qp);
    const r = judge(s.host.events);
    t.equal(r.verdict, "FAIL", r.reason);
    t.match(r.reason, new RegExp(`^REFLUSH for QP ${qp.qpn} after DESTROY_QP of QP ${qp.qpn} \\(t=`));
    t.same(traceSchemaProblems(), []);
  },
);

t.test("(a) objects that never existed, that exist, and a refused DEREG_MR key", async (t) => {
  const never = judge([
    cmd("DESTROY_CQ", 4, { reason: "cqn 9 does not exist", object: { kind: "cq", id: 9 } }),
  ]);
  t.match(reasons(never), [
    /^DESTROY_CQ for CQ 9, which the device does not have \(no creation of CQ 9 in this trace\)/,
  ]);
  const twice = judge([
    ...createQp(5),
    cmd("CREATE_QP", 5, { reason: "qpn 5 exists", object: { kind: "qp", id: 5 } }),
  ]);
  t.match(reasons(twice), [/^CREATE_QP for QP 5, which exists \(created t=\d+, never destroyed\)/]);
  const mr = judge([
    state("mr", 0x1600, "none", "registered"),
    {
      ...at(),
      kind: "wqe",
      qpn: 3,
      queue: "sq",
      index: 0,
      opcode: 8,
      op: "REG_MR",
      status: 0,
      mr: { stag: "0x1601", va: "0x1000", length: 4096, pages: 1, pageSize: 4096, mtt: "inline" },
    },
    cmd("DEREG_MR", 3, { reason: "key 2 does not match 1", object: { kind: "mr", id: 0x1601 } }),
  ]);
  t.match(reasons(mr), [
    /^DEREG_MR names an MR its MPT does not hold: the device's MPT 0x16 holds key 1 \(set by the REG_MR WQE QP 3 sq WQE 0, t=\d+\)/,
  ]);
  const cqInUse = judge([
    ...createQp(3, 7),
    warn("CQ destroyed while QPs still use it", { cqn: 7, qps: [3] }),
  ]);
  t.match(reasons(cqInUse), [/^DESTROY_CQ of CQ 7 while QP 3 still complete\(s\) on it/]);
  const lostCq = judge([
    state("cq", 7, "none", "created"),
    state("cq", 7, "created", "destroyed"),
    warn("completion for a CQ that does not exist: dropped", { qpn: 3, cqn: 7 }),
  ]);
  t.match(reasons(lostCq), [
    /^QP 3 completes on CQ 7 after DESTROY_CQ of CQ 7 \(t=\d+\): the device dropped a completion/,
  ]);
});

t.test("(a) a reset: the driver's own is no excuse, one the platform made is a race", async (t) => {
  const lost = (reason: string) =>
    judge([
      ...createQp(3),
      state("device", 0, "any", `reset (${reason})`),
      cmd("DESTROY_QP", 4, { reason: "qpn 3 does not exist", object: { kind: "qp", id: 3 } }),
    ]);
  const platform = lost("vfio-user reset");
  t.equal(platform.verdict, "PASS", platform.reason);
  t.match(
    platform.evidence?.join("\n"),
    /explained \(lifetime\): DESTROY_QP for QP 3 raced a reset the driver did not order \(vfio-user reset/,
  );
  const driver = lost("DEV_CTRL.RESET");
  t.match(reasons(driver), [
    /^DESTROY_QP for QP 3 after QP 3 was lost in a device reset \(DEV_CTRL\.RESET\)/,
  ]);
});

t.test("(b) SQ/RQ doorbells: within the ring, past it, for a QP that is gone", async (t) => {
  const within = judge([
    ...createQp(3),
    doorbell("rq", 3, 4, { depth: 4, ci: 0 }),
    doorbell("sq", 3, 8, { depth: 8, ci: 0 }),
    // a REFLUSH ahead of a doorbell still in flight took the consumer index past it
    doorbell("sq", 3, 9, { depth: 8, ci: 10 }),
  ]);
  t.equal(within.verdict, "PASS", within.reason);
  const past = judge([
    ...createQp(3),
    doorbell("rq", 3, 5, { depth: 4, ci: 0 }),
    doorbell("sq", 3, 12, { depth: 8, ci: 1 }),
  ]);
  t.match(reasons(past), [
    /^RQ doorbell of QP 3 moves the producer index to 5, 5 RQEs past the device's consumer index 0: the RQ holds 4, so 1 RQEs the device had not read were overwritten/,
    /^SQ doorbell of QP 3 moves the producer index to 12, 11 WQEBBs past the device's consumer index 1: the SQ holds 8/,
  ]);
  t.match(past.evidence?.join("\n"), /contract \(b, doorbell\).*erdma_qp\.c:515/);
  const gone = judge([
    ...createQp(3),
    ...destroyQp(3),
    doorbell("sq", 3, 1),
    warn("SQ doorbell for a QP that does not exist", { qpn: 3 }),
  ]);
  t.match(reasons(gone), [/^SQ doorbell for QP 3 after DESTROY_QP of QP 3 \(t=\d+\)/]);
  const cmdq = judge([warn("CMDQ doorbell beyond the SQ depth: ignored", { pi: 300, ci: 0, depth: 256 })]);
  t.match(reasons(cmdq), [
    /^CMDQ doorbell moves the producer index to 300, more than the CMDQ's 256 WQEBBs past its consumer index 0/,
  ]);
});

t.test(
  "(b) an RQ posted past its depth, on the device model (erdma_post_recv has no full check)",
  async (t) => {
    const { s, qp } = await modelQp(16, 2);
    for (let i = 0; i < 6; i++) s.drv.postRecv(qp);
    await s.drv.settle();
    const r = judge(s.host.events);
    t.match(reasons(r), [
      new RegExp(`^RQ doorbell of QP ${qp.qpn} moves the producer index to 5, 5 RQEs past`),
      new RegExp(`^RQ doorbell of QP ${qp.qpn} moves the producer index to 6, 6 RQEs past`),
    ]);
  },
);

t.test("(c) REFLUSH indexes against the doorbells", async (t) => {
  const posted = [...createQp(3), doorbell("sq", 3, 2), doorbell("sq", 3, 4), doorbell("rq", 3, 1)];
  const agree = judge([...posted, reflush(3, 4, 1), ...destroyQp(3)]);
  t.equal(agree.verdict, "PASS", agree.reason);
  t.equal(agree.judged, 6, "three commands and three doorbells");
  // the worker read sq_pi before a post rang 6; the post re-armed it, and its next REFLUSH carries 6
  const staleThenFixed = judge([...posted, doorbell("sq", 3, 6), reflush(3, 4, 1), reflush(3, 6, 1)]);
  t.equal(staleThenFixed.verdict, "PASS", staleThenFixed.reason);
  const staleThenDestroyed = judge([...posted, doorbell("sq", 3, 6), reflush(3, 4, 1), ...destroyQp(3)]);
  t.equal(staleThenDestroyed.verdict, "PASS", "erdma_destroy_qp cancels the re-armed worker");
  const staleForever = judge([...posted, doorbell("sq", 3, 6), reflush(3, 4, 1)]);
  t.match(reasons(staleForever), [
    /^REFLUSH of QP 3 carries sq_pi 4 though the device had seen the SQ doorbell move to 6, and no later REFLUSH or DESTROY_QP of QP 3 follows/,
  ]);
  // sq_pi stored, its doorbell still on the way: it arrives after the REFLUSH
  const inFlight = judge([...posted, reflush(3, 5, 1), doorbell("sq", 3, 5), ...destroyQp(3)]);
  t.equal(inFlight.verdict, "PASS", inFlight.reason);
  const neverRung = judge([...posted, reflush(3, 5, 1), ...destroyQp(3)]);
  t.match(reasons(neverRung), [
    /^REFLUSH of QP 3 carries sq_pi 5, ahead of every SQ doorbell the device saw \(the last: 4\), and no doorbell carrying it came before its DESTROY_QP/,
  ]);
  const offGrid = judge([...posted, reflush(3, 3, 1)]);
  t.match(reasons(offGrid), [
    /^REFLUSH of QP 3 carries sq_pi 3, which no SQ doorbell of QP 3 carried \(doorbells: 2, 4\)/,
  ]);
  const back = judge([...posted, reflush(3, 4, 1), reflush(3, 2, 1)]);
  t.match(reasons(back), [
    /^REFLUSH of QP 3 carries sq_pi 2 after a REFLUSH that carried 4 \(t=\d+\): the SQ producer index went back/,
  ]);
  t.match(back.evidence?.join("\n"), /contract \(c, reflush\).*erdma_flush_worker.*erdma_hw\.h:352-357/);
});

t.test("(c) the driver double's REFLUSH with an index one past its posts, on the device model", async (t) => {
  const { s, qp } = await modelQp(16, 2);
  s.drv.postRecv(qp);
  s.drv.postRecv(qp);
  await s.drv.modifyQp(qp, QpState.ERROR);
  await s.drv.settle();
  t.equal(judge(s.host.events).verdict, "PASS", "the worker's REFLUSH carries rq_pi 2, as rung");
  qp.rqPi += 1;
  await s.drv.flushWorker(qp);
  await s.drv.destroyQp(qp);
  const r = judge(s.host.events);
  t.match(reasons(r), [new RegExp(`^REFLUSH of QP ${qp.qpn} carries rq_pi 3, ahead of every RQ doorbell`)]);
});

t.test("(d) CQ doorbells: within the CQ, past what was written, an overrun, a CQ that is gone", async (t) => {
  const ok = judge([state("cq", 1, "none", "created"), cqDoorbell(1, 3, { depth: 16, pi: 5 })]);
  t.equal(ok.verdict, "PASS", ok.reason);
  // a CQE whose write was still in flight when the driver read it and armed
  const inFlight = judge([
    state("cq", 1, "none", "created"),
    cqDoorbell(1, 6, { depth: 16, pi: 5 }),
    cqe(1, 5),
  ]);
  t.equal(inFlight.verdict, "PASS", inFlight.reason);
  const ahead = judge([state("cq", 1, "none", "created"), cqDoorbell(1, 9, { depth: 16, pi: 5 })]);
  t.match(reasons(ahead), [
    /^CQ doorbell of CQ 1 reports consumer index 9, 4 past the device's producer index 5/,
  ]);
  const overrun = judge([state("cq", 1, "none", "created"), cqDoorbell(1, 2, { depth: 16, pi: 40 })]);
  t.match(reasons(overrun), [/^CQ 1 overrun: .* so 22 CQE\(s\) were overwritten unread \(the CQ holds 16/]);
  t.match(overrun.evidence?.join("\n"), /contract \(d, cq-doorbell\).*notify_cq/);
  const suspected = judge([
    state("cq", 1, "none", "created"),
    warn("CQ overrun: more CQEs written than the ring holds since the last reported CI", {
      cq: 1,
      pi: 16,
      ci: 0,
      depth: 16,
    }),
  ]);
  t.equal(suspected.verdict, "PASS", "the device cannot tell: the driver reports its CI only when it arms");
  t.match(suspected.reason, /1 complaint\(s\) of the device explained/);
  t.match(
    suspected.evidence?.join("\n"),
    /explained \(cq-doorbell\): CQ 1 turned over .*erdma_cq\.c:19-30 notify_cq/,
  );
  const gone = judge([
    state("cq", 1, "none", "created"),
    state("cq", 1, "created", "destroyed"),
    warn("doorbell for a CQ that does not exist", { cqn: 1 }),
  ]);
  t.match(reasons(gone), [/^CQ doorbell for CQ 1 after DESTROY_CQ of CQ 1/]);
});

t.test("(e) DMA outside mapped memory", async (t) => {
  const r = judge([
    {
      ...at(),
      kind: "dma-fault",
      address: "0xdead000",
      length: 32,
      access: "read",
      context: "QP 3 SQE",
      reason: "unmapped",
    },
    cmd("CREATE_CQ", 7, { reason: "CQ doorbell record 0x10 unmapped" }),
  ]);
  t.match(reasons(r), [
    /^DMA read of 0xdead000\+32 \(QP 3 SQE\) outside the memory the guest mapped: unmapped/,
    /^CREATE_CQ: DMA_FAULT \(CQ doorbell record 0x10 unmapped\)/,
  ]);
  t.match(r.evidence?.join("\n"), /contract \(e, dma\)/);
});

t.test("(g) a send WQE the device cannot parse, unless a fault made it fail", async (t) => {
  const wqe = (status: number, reason: string): Ev => ({
    ...at(),
    kind: "wqe",
    qpn: 3,
    queue: "sq",
    index: 4,
    opcode: 1,
    op: "READ",
    status,
    reason,
  });
  const bad = judge([...createQp(3), wqe(8, "READ SQE without its source SGE")]);
  t.match(reasons(bad), [
    /^QP 3 sq WQE 4 \(READ\) is one the device cannot parse: READ SQE without its source SGE/,
  ]);
  t.match(bad.evidence?.join("\n"), /contract \(g, wqe-format\)/);
  t.equal(judge([...createQp(3), wqe(8, "injected")]).verdict, "PASS", "an error-wqe fault's own status");
  t.equal(
    judge([...createQp(3), wqe(10, "stag 0x1 invalid")]).verdict,
    "PASS",
    "an access error is the consumer's, not a malformed WQE",
  );
});

t.test("(f) a refusal no check explains is never a PASS", async (t) => {
  const opcode = judge([cmd("REFLUSH", 1, { reason: "no command 0/6 on this device" })]);
  t.match(reasons(opcode), [
    /^REFLUSH answered BAD_OPCODE \(no command 0\/6 on this device\): a command this device does not have/,
  ]);
  t.match(opcode.evidence?.join("\n"), /contract \(f, status\)/);
  const odd = judge([warn("write to a read-only or unknown register ignored", { offset: 4 })]);
  t.match(reasons(odd), [
    /^the device warned: write to a read-only or unknown register ignored \{"offset":4\}/,
  ]);
  const internal = judge([
    fired("error-wqe", { qpn: 3, queue: "sq", index: 0 }),
    { ...at(), kind: "internal-error", message: "job cq-arm: boom", stack: "Error: boom\n    at x" },
  ]);
  t.match(
    reasons(internal),
    [/^the device model failed .*: job cq-arm: boom/],
    "an injected fault does not explain a model bug",
  );
  t.notMatch(internal.evidence?.join("\n"), /at x/, "the stack is not quoted");
});

t.test("(f) MODIFY_QP refused in ERROR: explained when the device failed the QP itself", async (t) => {
  const refused = cmd("MODIFY_QP", 6, { reason: "ERROR -> CLOSING", object: { kind: "qp", id: 3 } });
  const byDevice = judge([...createQp(3), state("qp", 3, "RTS", "ERROR (SQE 2: injected)"), refused]);
  t.equal(byDevice.verdict, "PASS", byDevice.reason);
  t.match(
    byDevice.evidence?.join("\n"),
    /explained \(qp-state\): MODIFY_QP of QP 3 to CLOSING refused in ERROR: the device moved QP 3 to ERROR itself \(SQE 2: injected/,
  );
  const byCommand = judge([...createQp(3), state("qp", 3, "RTS", "ERROR"), refused]);
  t.match(reasons(byCommand), [/^MODIFY_QP of QP 3 refused: BAD_STATE \(ERROR -> CLOSING\)/]);
  const backToRts = judge([
    ...createQp(3),
    state("qp", 3, "RTS", "ERROR (a failed WQE)"),
    cmd("MODIFY_QP", 6, { reason: "ERROR -> RTS", object: { kind: "qp", id: 3 } }),
  ]);
  t.equal(backToRts.verdict, "FAIL", "only a stop (CLOSING, TERMINATE) is the driver's design");
});

t.test(
  "(f) the device model's own refusal after it failed a QP, as the driver double meets it",
  async (t) => {
    const s = await setupErdma({ profile: { ...profileReflush, closeInError: "refuse" } });
    const { cq } = await s.drv.createCq(16);
    const a = (await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 2, maxRecvWr: 4 })).qp;
    const b = (await s.drv.createQp({ scq: cq, rcq: cq, maxSendWr: 2, maxRecvWr: 4 })).qp;
    await connectQps({ drv: s.drv, qp: a }, { drv: s.drv, qp: b });
    const core = s.dev.dataPathCore;
    const qp = s.dev.state.qps.get(a.qpn);
    if (!core || !qp) throw new Error("no data path");
    await core.fail(s.dev.state, qp, "a WQE failed");
    const out = await s.drv.modifyQp(a, QpState.CLOSING);
    t.equal(out[0]?.status, 6, "BAD_STATE");
    const r = judge(s.host.events);
    t.equal(r.verdict, "PASS", r.reason);
    t.match(
      r.evidence?.join("\n"),
      new RegExp(`explained \\(qp-state\\): MODIFY_QP of QP ${a.qpn} to CLOSING refused in ERROR`),
    );
  },
);

t.test("an injected fault on a QP explains what follows on that QP, not elsewhere", async (t) => {
  const hw = [
    ...createQp(3),
    ...createQp(4),
    fired("wrong-index", { qpn: 3, queue: "sq", index: 2 }),
    doorbell("sq", 3, 12, { depth: 8, ci: 1 }),
  ];
  const r = judge(hw);
  t.equal(r.verdict, "PASS", r.reason);
  t.match(
    r.evidence?.join("\n"),
    /explained \(doorbell\): injected fault \(wrong-index on QP 3, t=\d+\): SQ doorbell of QP 3/,
  );
  const other = judge([...hw, doorbell("sq", 4, 12, { depth: 8, ci: 1 })]);
  t.match(reasons(other), [/^SQ doorbell of QP 4 moves/]);
  const before = judge([
    ...createQp(3),
    doorbell("sq", 3, 12, { depth: 8, ci: 1 }),
    fired("wrong-index", { qpn: 3 }),
  ]);
  t.equal(before.verdict, "FAIL", "a fault that fired later explains nothing");
});

t.test("two devices: each keeps its own objects, and problems name the device", async (t) => {
  const one = { t: ++clock, dev: "erdma0" };
  const two = { t: ++clock, dev: "erdma1" };
  const hw: Ev[] = [
    { ...state("qp", 3, "none", "IDLE"), ...one },
    { ...state("qp", 3, "IDLE", "destroyed"), ...two },
    { ...cmd("REFLUSH", 4, { object: { kind: "qp", id: 3 } }), ...two },
    { ...reflush(3, 0, 0), ...one },
  ];
  const r = judge(hw);
  t.match(reasons(r), [/^erdma1: REFLUSH for QP 3 after DESTROY_QP of QP 3/]);
});

t.test("the vfio-user server's lines beside the device's are left alone", async (t) => {
  const hw: HwTraceEvent[] = [
    { src: "vfio-user", t: 1, dev: "erdma", kind: "disconnect", reason: "closed" },
    ...createQp(3),
  ];
  t.equal(
    hwProtocolRule.judge({ model: new TraceModel([]), observations: [], profile: "ib", hw }).verdict,
    "PASS",
  );
});
