// Scenario premises (harness/scenario/premise-schema.ts, harness/oracle/premise.ts): each condition
// on hand-built executor traces and device events, held and not; a run whose premise is not met is
// a MISS naming it under every rule set, never a PASS, and an injected fault that never fired is a
// MISS rather than an oracle that missed it; every scenario of fixtures/scenarios states a premise.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { checkPremise } from "../../harness/oracle/premise.ts";
import type { HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import { loadScenarioFile, parseScenario } from "../../harness/scenario/load.ts";
import { judgeScenarioRun } from "../../harness/suite/judge-run.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { REPO_ROOT } from "../support/cli.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";
import { pair, SUCCESS, TraceBuilder } from "../support/oracle-trace.ts";
import { drainedReceives } from "../support/unit-drain-trace.ts";
import { thrownMessage } from "../support/unit-errors.ts";

const TARGET = { driver: "erdma" as const, executor: "kernel" as const };

function scenario(lines: readonly string[]) {
  return parseScenario(["description: a test", "covers: [5]", ...lines].join("\n"), "test.yaml");
}

/** Device events, each checked against the hardware trace's schema. */
function hw(...events: Record<string, unknown>[]): HwTraceEvent[] {
  return events.map((e, i) => erdmaTraceEventSchema.parse({ t: i + 1, dev: "erdma", ...e }));
}

const READS = scenario([
  "steps:",
  "  - post_send: { op: read, count: 2 }",
  "  - drain: { which: qp }",
  "premise:",
  "  - flushed: { queue: sq, op: read }",
]);

/** Two READs posted, each completing as `status`, then ib_drain_qp. */
function reads(status: number): TraceBuilder {
  return pair()
    .post("qp", "sq", 1000, 2, { op: "read" })
    .cqe("qp", "sq", 1000, { status: SUCCESS, opcodeName: "RDMA_READ" })
    .cqe("qp", "sq", 1001, { status, opcodeName: "RDMA_READ" })
    .drain("qp", "qp")
    .markerDone()
    .markerDone()
    .drained("ERR");
}

t.test("a premise not met is a MISS naming it under every rule set, never a PASS", async (t) => {
  const judged = judgeScenarioRun(
    READS,
    ["ib", "iwarp-rdmac", "linux"],
    { records: reads(SUCCESS).records, observations: [], sent: [] },
    TARGET,
  );
  t.same(
    judged.judgements.map((j) => j.verdict),
    ["MISS", "MISS", "MISS"],
  );
  const row = judged.judgements[0]?.rules[0];
  t.match(row, {
    rule: "premise",
    verdict: "MISS",
    reason:
      "premise not met: at least 1 READ WR of the QP's sq outstanding at the ERR transition, then flushed (0 flushed)",
  });
  t.match(judged.premise, { held: false, conditions: [{ held: false, reason: "0 flushed" }] });
});

t.test("a premise met is a PASS row before the rules", async (t) => {
  const judged = judgeScenarioRun(
    READS,
    ["linux"],
    { records: reads(5).records, observations: [], sent: [] },
    TARGET,
  );
  t.equal(judged.judgements[0]?.verdict, "PASS");
  t.match(judged.judgements[0]?.rules[0], {
    rule: "premise",
    verdict: "PASS",
    reason: /held: .*\(1 flushed\)/,
  });
});

t.test("an injected fault that never fired is a MISS, not an oracle that missed it", async (t) => {
  const s = scenario([
    "drivers: [erdma]",
    "steps:",
    "  - post_recv: { count: 2 }",
    "  - fault: { kind: drop-cqe, queue: rq, wr_id: 2001 }",
    "  - drain: { which: qp }",
    "expect_fail: { rules: [5], why: the device drops a flush completion }",
    "premise:",
    "  - flushed: { queue: rq }",
  ]);
  const { records } = drainedReceives(2000, 2);
  const armed = { kind: "fault", action: "armed", id: 1, fault: { kind: "drop-cqe" } };
  const never = judgeScenarioRun(s, ["ib"], { records, observations: [], sent: [], hw: hw(armed) }, TARGET);
  t.equal(never.judgements[0]?.verdict, "MISS");
  t.match(
    never.judgements[0]?.rules[0]?.reason,
    /premise not met: every device fault the scenario arms fires \(1 of 1 never fired/,
  );
  t.notOk(
    never.judgements[0]?.rules.some((r) => r.verdict === "FAIL"),
    "rule 5 holding is not turned into the oracle's FAIL",
  );
  const fired = { kind: "fault", action: "fired", id: 1, fault: { kind: "drop-cqe" } };
  const hit = judgeScenarioRun(
    s,
    ["ib"],
    { records, observations: [], sent: [], hw: hw(armed, fired) },
    TARGET,
  );
  t.equal(hit.judgements[0]?.verdict, "FAIL", "fired, and rule 5 held: the oracle missed the fault");
});

t.test(
  "a device condition where there is no hardware trace is not observable: the rules decide",
  async (t) => {
    const s = scenario([
      "steps:",
      "  - post_recv: { count: 2 }",
      "  - drain: { which: rq }",
      "premise:",
      "  - device_flushed: { queue: rq }",
    ]);
    const { records } = drainedReceives(2000, 2, "rq");
    const judged = judgeScenarioRun(
      s,
      ["linux"],
      { records, observations: [], sent: [] },
      { ...TARGET, driver: "siw" },
    );
    t.match(judged.premise, { held: true, conditions: [{ held: null, reason: "no hardware trace here" }] });
    t.match(judged.judgements[0]?.rules[0], {
      rule: "premise",
      verdict: "SKIP",
      reason: /^not observable here/,
    });
    t.equal(judged.judgements[0]?.verdict, "PASS");
  },
);

t.test(
  "a step that hung before the situation was made: the hang is the verdict, the premise not known",
  async (t) => {
    const records = pair()
      .post("qp", "sq", 1000, 2, { op: "read" })
      .cqe("qp", "sq", 1000, { status: SUCCESS, opcodeName: "RDMA_READ" })
      .cqe("qp", "sq", 1001, { status: SUCCESS, opcodeName: "RDMA_READ" })
      .drain("qp", "qp").records;
    const stuck = {
      ev: "stuck" as const,
      step: 1,
      op: "drain",
      ms: 4000,
      state: "polling its CQ",
      stack: "ib_drain_qp",
    };
    const judged = judgeScenarioRun(
      READS,
      ["linux"],
      { records, observations: [stuck], sent: [] } as unknown as Parameters<typeof judgeScenarioRun>[2],
      TARGET,
    );
    const [linux] = judged.judgements;
    t.equal(linux?.verdict, "FAIL", "the hang");
    t.match(
      linux?.rules.find((r) => r.rule === "hang"),
      { verdict: "FAIL" },
    );
    t.match(linux?.rules[0], {
      rule: "premise",
      verdict: "SKIP",
      reason: /^not reached: a step hung first \(premise not met/,
    });
  },
);

t.test("premise: none says why and adds no row", async (t) => {
  const s = scenario(["steps:", "  - drain: { which: qp }", "premise:", "  none: nothing is posted"]);
  const records = pair().drain("qp", "qp").markerDone().markerDone().drained("ERR").records;
  const judged = judgeScenarioRun(s, ["linux"], { records, observations: [], sent: [] }, TARGET);
  t.same(judged.premise, { none: "nothing is posted" });
  t.notOk(judged.judgements[0]?.rules.some((r) => r.rule === "premise"));
});

/** One condition checked on a trace and device events. */
function holds(condition: string, records: TraceBuilder, events: HwTraceEvent[] = []) {
  const s = scenario(["steps:", "  - drain: { which: qp }", "premise:", `  - ${condition}`]);
  const r = checkPremise(s.premise, { records: records.records, hw: events, driver: "erdma", faults: false });
  if (!r || "none" in r) throw new Error("no conditions");
  return r.conditions[0];
}

t.test("verbs conditions, each held and not", async (t) => {
  const inErr = pair().modify("qp", "ERR").post("qp", "sq", 1000, 3).post("qp", "rq", 2000, 1);
  t.match(holds("posted_in_error: { queue: sq, min: 3 }", inErr), { held: true, reason: "3 posted in ERR" });
  t.match(holds("posted_in_error: { queue: sq, min: 4 }", inErr), { held: false });
  t.match(holds("posted_in_error: { queue: rq, op: send }", inErr), {
    held: false,
    reason: "0 posted in ERR",
  });

  const full = pair().post("qp", "sq", 1000, 3).drain("qp", "sq");
  t.match(holds("outstanding_at_drain: { queue: sq, min: 3 }", full), { held: true });
  const polled = pair()
    .post("qp", "sq", 1000, 3)
    .cqe("qp", "sq", 1000, { status: SUCCESS })
    .drain("qp", "sq");
  t.match(holds("outstanding_at_drain: { queue: sq, min: { erdma: 3, siw: 1 } }", polled), {
    held: false,
    reason: "at most 2 outstanding at a drain's marker",
  });

  const twice = pair().drain("qp", "qp").markerDone().markerDone().drained("ERR").drain("qp", "qp");
  t.match(holds("again_in_error: { call: drain }", twice), {
    held: true,
    reason: "1 of 2 drain call(s) found the QP in ERR",
  });
  t.match(holds("again_in_error: { call: modify }", twice), { held: false });
  t.match(holds("again_in_error: { call: modify }", pair().modify("qp", "ERR").modify("qp", "ERR")), {
    held: true,
  });

  const own = pair().post("qp", "sq", 1000, 1).cqe("qp", "sq", 1000, { status: 4 }).modify("qp", "ERR");
  t.match(holds("error_without_modify: {}", own), { held: true });
  const modified = pair().modify("qp", "ERR").post("qp", "sq", 1000, 1).cqe("qp", "sq", 1000, { status: 4 });
  t.match(holds("error_without_modify: {}", modified), {
    held: false,
    reason: "the first error came after a modify to ERR",
  });

  t.match(
    holds("chain_exceeds_queue: { queue: rq }", pair().post("qp", "rq", 2000, 65, { rc: -12, bad: 64 })),
    {
      held: true,
      reason: "the longest chain 65 WR(s), the queue holds 64",
    },
  );
  t.match(holds("chain_exceeds_queue: { queue: rq }", pair().post("qp", "rq", 2000, 64)), { held: false });

  const shared = pair()
    .post("qp", "sq", 1000, 1)
    .post("peer", "sq", 5000, 1)
    .cqe("qp", "sq", 1000, { status: SUCCESS });
  t.match(holds("cq_shared_by_qps: { cq: send }", shared), { held: false });
  t.match(
    holds("cq_shared_by_qps: { cq: send }", shared.cqe("peer", "sq", 5000, { status: SUCCESS, cq: "cq" })),
    {
      held: true,
    },
  );
});

t.test("cq_wrapped counts completions against the CQ's size", async (t) => {
  const b = pair().raw({ ev: "create", kind: "cq", name: "cq", poll: "direct", depth: 4, cqe: 4 });
  b.post("qp", "sq", 1000, 9);
  for (let i = 0; i < 8; i++) b.cqe("qp", "sq", 1000 + i, { status: SUCCESS });
  t.match(holds("cq_wrapped: { cq: send, times: 2 }", b), {
    held: false,
    reason: "8 completion(s) polled from cq, which holds 4",
  });
  b.cqe("qp", "sq", 1008, { status: SUCCESS });
  t.match(holds("cq_wrapped: { cq: send, times: 2 }", b), { held: true });
});

t.test("device conditions, each held and not", async (t) => {
  const b = pair();
  const qpn = 1;
  const err = { kind: "state", object: "qp", id: qpn, from: "RTS", to: "ERROR" };
  const flush = (count: number, extra: Record<string, unknown> = {}) => ({
    kind: "flush",
    qpn,
    queue: "rq",
    from: 0,
    to: count,
    count,
    limit: "error",
    wqes: Array.from({ length: count }, (_, i) => i),
    ...extra,
  });
  const db = { kind: "doorbell", db: "rq", value: "0x1", id: qpn };
  t.match(holds("device_posted_while_flushing: { queue: rq }", b, hw(err, db, flush(4))), {
    held: true,
    reason: "1 rq doorbell(s) between the ERROR transition and the end of the first flush (4 WQEs)",
  });
  t.match(holds("device_posted_while_flushing: { queue: rq }", b, hw(err, flush(4), db)), { held: false });
  t.match(holds("device_posted_while_flushing: { queue: rq }", b, hw(db)), {
    held: false,
    reason: "QP 1 never entered ERROR",
  });

  const destroy = (pending: Record<string, number>) =>
    cmdEventBody("DESTROY_QP", 0, { opcode: 3, cookie: 1, detail: { qpn, state: "ERROR", pending } });
  t.match(holds("device_destroyed_unflushed: {}", b, hw(destroy({ sq: 0, rq: 32 }))), { held: true });
  t.match(holds("device_destroyed_unflushed: {}", b, hw(destroy({ sq: 0, rq: 0 }))), { held: false });
  t.match(holds("device_destroyed_unflushed: {}", b, hw()), {
    held: false,
    reason: "QP 1 was not destroyed",
  });

  // an executor that polls only in its drain shows the error after the drain's modify: the device's
  // own ERROR transition before any MODIFY_QP to ERROR holds it
  const late = pair().post("qp", "sq", 1000, 1).modify("qp", "ERR").cqe("qp", "sq", 1000, { status: 4 });
  const ownErr = { ...err, to: "ERROR (no RQE posted at erdma QP 2)" };
  const modifyErr = {
    ...destroy({}),
    opcode: 3,
    name: "MODIFY_QP",
    detail: { qpn, from: "RTS", to: "ERROR" },
  };
  t.match(holds("error_without_modify: {}", late, hw(ownErr, modifyErr)), {
    held: true,
    reason: /the device moved QP 1 to ERROR \(no RQE posted/,
  });
  t.match(holds("error_without_modify: {}", late, hw(modifyErr, ownErr)), {
    held: false,
    reason: /after a modify to ERR; the device's own ERROR of QP 1 came after a MODIFY_QP to ERROR/,
  });
  t.match(holds("error_without_modify: {}", late, hw(err, modifyErr)), {
    held: false,
    reason: /never moved QP 1 to ERROR on its own/,
  });

  const sqFlush = { ...flush(3), queue: "sq", wqes: [0, 2, 3], blocks: [2, 1, 2] };
  t.match(holds("device_flushed_blocks: { queue: sq, blocks: 2, min: 2 }", b, hw(sqFlush)), {
    held: true,
    reason: "3 WQE(s) flushed, 2 of 2+ blocks (largest 2)",
  });
  t.match(holds("device_flushed_blocks: { queue: sq, blocks: 2, min: 3 }", b, hw(sqFlush)), { held: false });
  t.match(holds("device_flushed: { queue: rq, min: 4 }", b, hw(flush(4))), { held: true });
  t.match(holds("device_flushed: { queue: sq }", b, hw(flush(4))), { held: false });

  const eqe = (eq: number) => ({ kind: "eqe", eq, index: 0, owner: 1, detail: {} });
  const irq = (source: string) => ({ kind: "irq", vector: 1, delivered: true, source });
  const batch = hw(
    ...Array.from({ length: 17 }, () => eqe(1)),
    irq("ceq1 (held 1000 ms)"),
    eqe(1),
    irq("ceq1"),
  );
  t.match(holds("device_ceq_batch: { min: 17 }", b, batch), {
    held: true,
    reason: "at most 17 event(s) behind one completion interrupt",
  });
  t.match(holds("device_ceq_batch: { min: 18 }", b, batch), { held: false });
});

t.test(
  "device_destroyed_with_unpolled_cqes: CQEs of the QP written before its destroy, unpolled at it, the CQ polled after",
  async (t) => {
    const peerQpn = 2;
    const cqe = (qpn: number, index: number) => ({
      kind: "cqe",
      cq: 1,
      index,
      owner: 1,
      qpn,
      syndrome: 0,
      opcode: 2,
      queue: "rq",
      wqe: index,
    });
    const destroyCmd = cmdEventBody("DESTROY_QP", 0, {
      opcode: 3,
      cookie: 1,
      detail: { qpn: peerQpn, state: "ERROR", pending: { sq: 0, rq: 0 } },
    });
    /** the peer on the QP's CQ (peer: { cq: qp }), its 2 receives completed by the device */
    const shared = () =>
      new TraceBuilder()
        .qp("qp", { qpNum: 1 })
        .qp("peer", { qpNum: peerQpn })
        .post("peer", "rq", 4000, 2)
        .post("qp", "sq", 1000, 2);
    const destroyed = (b: TraceBuilder) =>
      b.raw({ ev: "destroy", kind: "qp", name: "peer", why: "command", rc: 0 });
    const polled = (b: TraceBuilder) => b.raw({ ev: "poll", cq: "cq", got: 0, min: 0, total: 0 });
    const device = hw(cqe(peerQpn, 0), cqe(peerQpn, 1), destroyCmd, cqe(1, 0));
    const condition = "device_destroyed_with_unpolled_cqes: { on: peer }";

    t.match(holds(condition, polled(destroyed(shared())), device), {
      held: true,
      reason:
        "2 CQE(s) of QP 2 written before its DESTROY_QP, 0 of its completions polled before the destroy step; cq polled after it",
    });
    // both polled before the destroy: nothing of the peer left in the CQ
    const drained = shared()
      .cqe("peer", "rq", 4000, { status: SUCCESS })
      .cqe("peer", "rq", 4001, { status: SUCCESS });
    t.match(holds(condition, polled(destroyed(drained)), device), { held: false });
    // one left: holds
    const one = shared().cqe("peer", "rq", 4000, { status: SUCCESS });
    t.match(holds(condition, polled(destroyed(one)), device), { held: true });
    // the CQ not polled after the destroy
    t.match(holds(condition, destroyed(shared()), device), {
      held: false,
      reason: /cq not polled after it$/,
    });
    // the device wrote the peer's CQEs only after the destroy (none were in the CQ at it)
    t.match(holds(condition, polled(destroyed(shared())), hw(destroyCmd, cqe(peerQpn, 0))), {
      held: false,
      reason: /^0 CQE\(s\) of QP 2 written/,
    });
    t.match(holds(condition, polled(destroyed(shared())), hw(cqe(peerQpn, 0))), {
      held: false,
      reason: "QP 2 was not destroyed",
    });
    t.match(holds(condition, polled(shared()), device), {
      held: false,
      reason: "no destroy step of peer in the executor's trace",
    });
  },
);

t.test("premise files are checked: one clear error naming the field", async (t) => {
  const bad = (premise: string) =>
    thrownMessage(() => scenario(["steps:", "  - drain: { which: qp }", "premise:", premise]));
  t.match(bad("  - flushed: { queue: xq }"), /^premise\[0\]\.flushed\.queue: Invalid option/);
  t.match(
    bad("  - outstanding: { queue: sq }"),
    /a premise condition is one of flushed, posted_in_error, .*, not outstanding/,
  );
  t.match(bad("  - flushed: { queue: sq, when: now }"), /unknown field when/);
  t.match(bad("  none: ''"), /premise/);
  t.match(
    bad("  - flushed: { queue: sq }\n    posted_in_error: { queue: rq }"),
    /not flushed and posted_in_error/,
  );
});

t.test("every scenario of fixtures/scenarios states its premise, or why it needs none", async (t) => {
  const dir = join(REPO_ROOT, "fixtures", "scenarios");
  const files = readdirSync(dir).filter((f) => f.endsWith(".yaml"));
  t.ok(files.length > 40);
  for (const f of files) {
    const s = await loadScenarioFile(join(dir, f));
    t.ok(s.premise, `${f} has a premise`);
    if (s.premise && "none" in s.premise) t.ok(s.premise.none.length > 20, `${f} says why it needs none`);
  }
});
