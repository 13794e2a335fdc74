// How rule hw-protocol (harness/oracle/rules/hw-protocol.ts) puts the device's complaints together:
// what it counts as judged, which injected fault excuses which finding (fired before it, on a QP it
// concerns, or on an interrupt for a queue event), per device, in trace order, and the verdict's
// words: a FAIL per unexplained finding with its contract line and the event quoted, a PASS listing
// every explained complaint, a SKIP when the device did nothing to judge.
import t from "tap";
import { contractLine } from "../../harness/oracle/hw-protocol/contract.ts";
import { TraceModel } from "../../harness/oracle/model.ts";
import {
  hwProtocolFindings,
  hwProtocolRule,
  judgeHwProtocol,
} from "../../harness/oracle/rules/hw-protocol.ts";
import type { ErdmaTraceEvent } from "../../harness/protocol/hw-trace.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { type CmdEventBody, cmdEventBody } from "../support/hw-trace-events.ts";

/** Events at t = 1, 2, ... on device `dev` unless they say, each checked against the schema. */
function events(...list: Record<string, unknown>[]): ErdmaTraceEvent[] {
  return list.map((e, i) => erdmaTraceEventSchema.parse({ t: i + 1, dev: "erdma", ...e }));
}
const warn = (message: string, detail: Record<string, unknown> = {}) => ({ kind: "warn", message, detail });
const fired = (context: Record<string, unknown>, kind?: string) => ({
  kind: "fault",
  action: "fired",
  id: 1,
  context,
  ...(kind ? { fault: { kind } } : {}),
});
const qpState = (id: number, from: string, to: string) => ({ kind: "state", object: "qp", id, from, to });
const cmd = (name: string, status: number, more: Partial<CmdEventBody> = {}) =>
  cmdEventBody(name, status, more);
const SQ_GONE = "SQ doorbell for a QP that does not exist";
const CQ_GONE = "doorbell for a CQ that does not exist";

t.test("an injected fault explains the findings after it on its QP; not before, not another QP's", (t) => {
  const { findings } = hwProtocolFindings(
    events(
      warn(SQ_GONE, { qpn: 3 }),
      fired({ qpn: 3 }, "drop_cqe"),
      warn(SQ_GONE, { qpn: 3 }),
      warn(SQ_GONE, { qpn: 4 }),
      warn(CQ_GONE, { cqn: 2 }),
    ),
  );
  t.same(
    findings.map((f) => [f.at, f.explained ?? null]),
    [
      [0, null],
      [
        2,
        "injected fault (drop_cqe on QP 3, t=2): SQ doorbell for QP 3, which the device does not have (no creation of QP 3 in this trace) (at t=3)",
      ],
      [3, null],
      [4, null],
    ],
  );
  t.end();
});

t.test("a resume-queue or raise-irq explains nothing: the device does nothing wrong by it", (t) => {
  const { findings } = hwProtocolFindings(
    events(
      fired({ qpn: 3, queue: "sq", stallsEnded: 1 }, "resume-queue"),
      fired({ vector: 1, raised: 1 }, "raise-irq"),
      warn(SQ_GONE, { qpn: 3 }),
      warn(CQ_GONE, { cqn: 2 }),
    ),
  );
  t.same(
    findings.map((f) => [f.at, f.explained ?? null]),
    [
      [2, null],
      [3, null],
    ],
  );
  t.end();
});

t.test("a fault on an interrupt vector explains queue events and findings about no QP", (t) => {
  const { findings } = hwProtocolFindings(
    events(
      fired({ vector: 2 }, "drop_irq"),
      warn(CQ_GONE, { cqn: 2 }),
      warn(SQ_GONE, { qpn: 3 }),
      warn("doorbell before INIT_DONE ignored", { db: "CQ" }),
    ),
  );
  t.match(findings[0]?.explained, /^injected fault \(drop_irq on vector 2, t=1\): CQ doorbell for CQ 2/);
  t.equal(findings[1]?.explained, undefined, "a finding about QP 3 is no interrupt's");
  t.match(findings[2]?.explained, /^injected fault \(drop_irq on vector 2, t=1\): a CQ doorbell before/);
  const bare = hwProtocolFindings(events(fired({}), warn(CQ_GONE, { cqn: 2 }))).findings;
  t.match(
    bare[0]?.explained,
    /^injected fault \(fault, t=1\): /,
    "a fault naming neither its kind nor where",
  );
  const notInt = hwProtocolFindings(
    events(fired({ qpn: "3", vector: 1.5 }, "x"), warn(CQ_GONE, { cqn: 2 })),
  ).findings;
  t.match(notInt[0]?.explained, /^injected fault \(x, t=1\): /, "numbers that are no integers");
  t.end();
});

t.test("the device model's own failure is never explained by a fault; faults are per device", (t) => {
  const { findings } = hwProtocolFindings(
    events(
      fired({}, "drop_irq"),
      { kind: "internal-error", message: "boom" },
      { ...warn(CQ_GONE, { cqn: 2 }), dev: "erdma1" },
    ),
  );
  t.same(
    findings.map((f) => [f.dev, f.explained ?? null]),
    [
      ["erdma", null],
      ["erdma1", null],
    ],
  );
  t.end();
});

t.test("what is judged and counted; a device reset starts REFLUSH's books anew", (t) => {
  const r = hwProtocolFindings(
    events(
      qpState(1, "none", "IDLE"),
      cmd("CREATE_QP", 0, { detail: { qpn: 1, sqCqn: 1, rqCqn: 1 } }),
      { kind: "doorbell", db: "sq", value: "0x1", id: 1 },
      { kind: "doorbell", db: "cq", value: "0x1", id: 1 },
      { kind: "wqe", qpn: 1, queue: "sq", index: 0, opcode: 0, op: "SEND", status: 0 },
      { kind: "irq", vector: 1, delivered: true, source: "ceq1" },
      warn("odd"),
      { kind: "internal-error", message: "boom" },
      { kind: "dma-fault", address: "0x0", length: 8, access: "read", context: "QP 1 SQE", reason: "x" },
      fired({}),
    ),
  );
  t.same([r.judged, r.commands, r.doorbells], [6, 1, 2]);
  t.same(
    r.findings.map((f) => f.check),
    ["status", "status", "dma"],
  );
  t.end();
});

t.test("a FAIL names each unexplained finding with its contract line and the event quoted", (t) => {
  const list = events(
    cmd("DESTROY_CQ", 4, { object: { kind: "cq", id: 9 } }),
    fired({ qpn: 5 }, "drop_cqe"),
    warn(SQ_GONE, { qpn: 5 }),
    warn("odd", { long: "x".repeat(500) }),
  );
  const r = judgeHwProtocol(list);
  t.equal(r.verdict, "FAIL");
  t.equal(r.judged, 3);
  t.same(
    r.problems?.map((p) => p.reason),
    [
      "DESTROY_CQ for CQ 9, which the device does not have (no creation of CQ 9 in this trace): NOT_FOUND",
      `the device warned: odd {"long":"${"x".repeat(500)}"} (at t=4)`,
    ],
  );
  t.same(r.problems?.[0]?.evidence, [contractLine("lifetime"), JSON.stringify(list[0])]);
  const quoted = r.problems?.[1]?.evidence[1] ?? "";
  t.equal(quoted.length, 403, "a long event is cut at 400 characters");
  t.equal(quoted, `${JSON.stringify(list[3]).slice(0, 400)}...`);
  t.end();
});

t.test("a FAIL on two devices names the device; an internal error's stack is not quoted", (t) => {
  const list = events(
    { kind: "internal-error", message: "boom", stack: "at x" },
    { ...warn("odd"), dev: "erdma1" },
  );
  const r = judgeHwProtocol(list);
  t.same(
    r.problems?.map((p) => p.reason.split(":")[0]),
    ["erdma", "erdma1"],
  );
  const { stack: _stack, ...rest } = list[0] as ErdmaTraceEvent & { stack?: string };
  t.equal(r.problems?.[0]?.evidence[1], JSON.stringify(rest));
  const one = judgeHwProtocol(events({ kind: "internal-error", message: "boom" }));
  t.match(one.problems?.[0]?.reason, /^the device model failed/, "one device: no name");
  t.end();
});

t.test("a PASS lists the complaints explained; a trace with nothing to judge is a SKIP", (t) => {
  const clean = judgeHwProtocol(
    events(qpState(1, "none", "IDLE"), cmd("CREATE_QP", 0, { detail: { qpn: 1, sqCqn: 1, rqCqn: 1 } }), {
      kind: "doorbell",
      db: "cq",
      value: "0x1",
      id: 1,
    }),
  );
  t.same(clean, {
    verdict: "PASS",
    reason: "1 command(s) and 1 doorbell(s) used the device as its contract says",
    judged: 2,
    applies: true,
  });
  const explained = judgeHwProtocol(events(fired({ qpn: 5 }, "drop_cqe"), warn(SQ_GONE, { qpn: 5 })));
  t.equal(
    explained.reason,
    "0 command(s) and 0 doorbell(s) used the device as its contract says; 1 complaint(s) of the device explained (see the evidence)",
  );
  t.same(explained.evidence, [
    "explained (doorbell): injected fault (drop_cqe on QP 5, t=1): SQ doorbell for QP 5, which the device does not have (no creation of QP 5 in this trace) (at t=2)",
  ]);
  t.same(judgeHwProtocol(events(qpState(1, "none", "IDLE"), fired({}))), {
    verdict: "SKIP",
    reason: "the hardware trace holds no command, doorbell or device complaint",
    judged: 0,
    applies: true,
  });
  t.end();
});

t.test("the rule: not under a run without a hardware trace; the server's lines are no device events", (t) => {
  const model = new TraceModel([]);
  t.same(hwProtocolRule.judge({ model, observations: [], profile: "linux" }), {
    verdict: "SKIP",
    reason: "no hardware trace here (siw, or a device of your own)",
    judged: 0,
    applies: false,
  });
  const r = hwProtocolRule.judge({
    model,
    observations: [],
    profile: "linux",
    hw: [{ src: "vfio-user", t: 1, dev: "erdma", kind: "connect" }, ...events(warn("odd"))],
  });
  t.equal(r.verdict, "FAIL");
  t.equal(r.judged, 1);
  t.end();
});

t.test("an interrupt fault explains a queue event that concerns QPs too", (t) => {
  const { findings } = hwProtocolFindings(
    events(
      fired({ vector: 1 }, "drop_irq"),
      warn("CQ destroyed while QPs still use it", { cqn: 1, qps: [2, 5] }),
    ),
  );
  t.same(findings[0]?.qpns, [2, 5]);
  t.match(findings[0]?.explained, /^injected fault \(drop_irq on vector 1, t=1\): DESTROY_CQ of CQ 1/);
  t.end();
});

t.test("a complaint the contract explains keeps that explanation, whatever fault fired before", (t) => {
  const { findings } = hwProtocolFindings(
    events(
      qpState(7, "none", "IDLE"),
      fired({ qpn: 7 }, "drop_cqe"),
      { kind: "state", object: "device", id: 0, from: "enabled", to: "reset (FLR)" },
      cmd("DESTROY_QP", 4, { object: { kind: "qp", id: 7 } }),
    ),
  );
  t.match(findings[0]?.explained, /^DESTROY_QP for QP 7 raced a reset the driver did not order \(FLR/);
  t.end();
});

const reflushCmd = (detail: Record<string, unknown>, name = "REFLUSH") => cmd(name, 0, { detail });
const sqDoorbell = (id: number, pi: number, ring?: Record<string, number>) => ({
  kind: "doorbell",
  db: "sq",
  value: "0x1",
  id,
  detail: { pi },
  ...(ring ? { ring } : {}),
});

t.test("REFLUSH is checked against the doorbells of QPs the device has", (t) => {
  const created = [
    qpState(1, "none", "IDLE"),
    cmd("CREATE_QP", 0, { detail: { qpn: 1, sqCqn: 1, rqCqn: 1 } }),
  ];
  const rung = hwProtocolFindings(
    events(...created, sqDoorbell(1, 4), reflushCmd({ qpn: 1, sqPi: 4, rqPi: 0 })),
  );
  t.same(rung.findings, [], "the doorbell of a QP created in the trace, without the device's ring, counts");
  const ringed = hwProtocolFindings(
    events(sqDoorbell(2, 4, { depth: 8, ci: 0 }), reflushCmd({ qpn: 2, sqPi: 4, rqPi: 0 })),
  );
  t.same(ringed.findings, [], "one the device has a ring for counts");
  const unknown = hwProtocolFindings(events(sqDoorbell(9, 4), reflushCmd({ qpn: 9, sqPi: 4, rqPi: 0 })));
  t.same(
    unknown.findings.map((f) => [f.check, f.qpns, f.at]),
    [["reflush", [9], 1]],
    "the doorbell of a QP the device neither has a ring for nor saw created does not count as rung",
  );
  const inFlight = hwProtocolFindings(
    events(...created, reflushCmd({ qpn: 1, sqPi: 3, rqPi: 0 }), warn("odd")),
  );
  t.same(
    inFlight.findings.map((f) => [f.at, f.check]),
    [
      [2, "reflush"],
      [3, "status"],
    ],
    "in trace order: the REFLUSH never made good is found at the end, shown where it was",
  );
  for (const partial of [
    { sqPi: 3, rqPi: 0 },
    { qpn: 1, rqPi: 0 },
    { qpn: 1, sqPi: 3 },
  ])
    t.same(
      hwProtocolFindings(events(...created, reflushCmd(partial))).findings,
      [],
      `missing a field: ${JSON.stringify(partial)}`,
    );
  t.same(
    hwProtocolFindings(events(...created, reflushCmd({ qpn: 1, sqPi: 3, rqPi: 0 }, "MODIFY_QP"))).findings,
    [],
    "another command",
  );
  t.end();
});

t.test("a QP's destroy and a device reset settle its REFLUSH books", (t) => {
  /** The findings when `then` follows a REFLUSH no doorbell announced, on QP 1. */
  const afterReflush = (then: Record<string, unknown>) =>
    hwProtocolFindings(events(qpState(1, "none", "IDLE"), reflushCmd({ qpn: 1, sqPi: 3, rqPi: 0 }), then));
  const state = (object: string, id: number, from: string, to: string) => ({
    kind: "state",
    object,
    id,
    from,
    to,
  });
  const destroyed = afterReflush(qpState(1, "IDLE", "destroyed"));
  t.match(destroyed.findings[0]?.reason, /no doorbell carrying it came before its DESTROY_QP$/);
  const reset = afterReflush(state("device", 0, "enabled", "reset (FLR)"));
  t.same(reset.findings, [], "a reset loses the QP and its books");
  const notReset = afterReflush(state("device", 0, "x", "enabled"));
  t.equal(notReset.findings.length, 1, "a device state that is no reset");
  const cqState = afterReflush(state("cq", 1, "VALID", "reset"));
  t.equal(cqState.findings.length, 1, "a CQ's state is not the device's");
  const other = afterReflush(state("cq", 1, "none", "destroyed"));
  t.match(other.findings[0]?.reason, /in this trace$/, "a CQ destroyed is not the QP");
  t.end();
});

t.test("a CQ doorbell past the CQEs written: a cq-doorbell finding on the CQ's QPs, a queue event", (t) => {
  const { findings } = hwProtocolFindings(
    events(qpState(1, "none", "IDLE"), cmd("CREATE_QP", 0, { detail: { qpn: 1, sqCqn: 2, rqCqn: 2 } }), {
      kind: "doorbell",
      db: "cq",
      value: `0x${((2n << 32n) | 12n).toString(16)}`,
      id: 2,
      ring: { depth: 16, pi: 10 },
    }),
  );
  t.same(
    findings.map((f) => [f.check, f.qpns, f.queueEvent]),
    [["cq-doorbell", [1], true]],
  );
  const noRing = hwProtocolFindings(events({ kind: "doorbell", db: "cq", value: "0xc", id: 2 }));
  t.same(noRing.findings, []);
  t.end();
});

t.test("an event quoted at exactly 400 characters is not cut", (t) => {
  const base = JSON.stringify(events(warn("odd", { pad: "" }))[0]);
  const list = events(warn("odd", { pad: "x".repeat(400 - base.length) }));
  t.equal(JSON.stringify(list[0]).length, 400);
  t.equal(judgeHwProtocol(list).problems?.[0]?.evidence[1], JSON.stringify(list[0]));
  t.end();
});
