// Fault steps on the erdma model without a guest: a scenario fault becomes the device's FaultSpec
// (the QP's number from the trace's create record, the WR as the nth event of its queue, the IB
// status as the erdma_wc_status the driver maps back), the ones the model cannot do are refused
// with a reason, the schema's errors for a fault missing what its kind needs, and the step runner
// arming a fault at its step through a fake control channel (and stopping with an error when the
// device refuses). The hardware trace is sliced per scenario and its notable events quoted; the
// user executor's hang, killed run and drain marker become what the oracle judges.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { type CommandRunner, runStepwise } from "../../harness/executor/stepwise.ts";
import { userLines, userOutcome, userTimeouts } from "../../harness/executor/user.ts";
import type { UverbsRun } from "../../harness/executor/uverbs-driver.ts";
import { judgeTrace } from "../../harness/oracle/judge.ts";
import { parseHwTrace } from "../../harness/protocol/hw-trace.ts";
import type { TraceRecord } from "../../harness/protocol/trace.ts";
import { traceRecordSchema } from "../../harness/protocol/trace.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import {
  armFault,
  controlOf,
  type DeviceControl,
  erdmaFaultGap,
  translateFault,
} from "../../harness/suite/faults.ts";
import { hwEvidence, hwTraceFileFor, readSlice } from "../../harness/suite/hw-trace.ts";

const OPTS = { addr: "10.0.2.15", port: 7700 };

function scenario(lines: string[]) {
  return parseScenario(["description: d", "covers: [5]", "drivers: [erdma]", ...lines].join("\n"), "f.yaml");
}

/** Eight receives posted (wr_ids 2000 to 2007), a `kind` fault on receive 2003, ib_drain_qp. */
const rqFaultScenario = (kind: string) =>
  compileScenario(
    scenario([
      "steps:",
      "  - post_recv: { count: 8 }",
      `  - fault: { kind: ${kind}, queue: rq, wr_id: 2003 }`,
      "  - drain: { which: qp }",
    ]),
    OPTS,
  );

let seq = 0;
const mk = (f: Record<string, unknown>): TraceRecord =>
  traceRecordSchema.parse({ seq: seq++, ns: seq, ...f });
const created = (name: string, qpNum: number) =>
  mk({ ev: "create", kind: "qp", name, qp_num: qpNum, cm: true, scq: "cq", rcq: "cq", sig_all: false });
const posted = (call: number, queue: "sq" | "rq", wrId: number, count: number, signal?: string) => [
  mk({
    ev: "post",
    call,
    qp: "qp",
    queue,
    op: queue === "rq" ? "recv" : "send",
    wr_id: wrId,
    count,
    index: 0,
    len: 64,
    ...(signal ? { signal } : {}),
  }),
  mk({ ev: "post_ret", call, rc: 0, bad: null }),
];
const cqe = (queue: "sq" | "rq", wrId: number, status = 5) =>
  mk({
    ev: "cqe",
    cq: "cq",
    qp: "qp",
    queue,
    wr_id: wrId,
    status,
    status_name: status === 5 ? "WR_FLUSH_ERR" : "SUCCESS",
    opcode: 128,
    opcode_name: "RECV",
    qp_num: 17,
    vendor_err: 0,
    byte_len: 0,
    call: 1,
  });

t.test("a scenario fault as the model's FaultSpec", async (t) => {
  const c = rqFaultScenario("drop-cqe");
  const step = c.steps[1];
  if (!step) throw new Error("no step");
  const records = [created("qp", 17), created("peer", 18), ...posted(1, "rq", 2000, 8)];
  t.same(translateFault(step, c, records), { kind: "drop-cqe", qpn: 17, queue: "rq", nth: 4 });
  t.same(
    translateFault(step, c, [...records, cqe("rq", 2000), cqe("rq", 2001)]),
    { kind: "drop-cqe", qpn: 17, queue: "rq", nth: 2 },
    "completions already polled are not events to come",
  );
  t.throws(() => translateFault(step, c, [created("peer", 18)]), /no qp_num for qp/);
  t.throws(
    () => translateFault(step, c, [...records, cqe("rq", 2003)]),
    {
      name: "FaultTranslationError",
      message: /WR 2003: no rq WR of qp with that wr_id is outstanding or posted later/,
    },
    "a WR that has completed cannot be hit",
  );

  // a fault on a WR a later step posts, and the IB status as erdma's
  const e = compileScenario(
    scenario([
      "steps:",
      "  - post_recv: { on: peer, count: 16 }",
      "  - fault: { kind: error-wqe, queue: sq, wr_id: 1003, status: LOC_ACCESS_ERR, count: 2 }",
      "  - post_send: { count: 8 }",
    ]),
    OPTS,
  );
  t.same(translateFault(e.steps[1] as never, e, [created("qp", 5)]), {
    kind: "error-wqe",
    count: 2,
    qpn: 5,
    queue: "sq",
    nth: 4,
    status: 10,
  });

  // a delayed completion the queue's flush may release early: the device is told
  const d = compileScenario(
    scenario([
      "steps:",
      "  - fault: { kind: delay-cqe, queue: sq, wr_id: 1001, ms: 3000, until: flush }",
      "  - post_send: { count: 2, op: write }",
    ]),
    OPTS,
  );
  t.same(translateFault(d.steps[0] as never, d, [created("qp", 5)]), {
    kind: "delay-cqe",
    qpn: 5,
    queue: "sq",
    nth: 2,
    ms: 3000,
    until: "flush",
  });

  // completion faults on a send queue count signaled WRs only (a successful unsignaled one writes none)
  const sig = compileScenario(
    scenario([
      "steps:",
      "  - fault: { kind: duplicate-cqe, queue: sq, wr_id: 1005 }",
      "  - post_send: { count: 6, signal: 2 }",
    ]),
    OPTS,
  );
  t.same(translateFault(sig.steps[0] as never, sig, [created("qp", 5)]), {
    kind: "duplicate-cqe",
    qpn: 5,
    queue: "sq",
    nth: 3,
  });

  const kinds = compileScenario(
    scenario([
      "steps:",
      "  - fault: { kind: stall-queue, queue: sq, ms: 500 }",
      "  - fault: { kind: lose-irq, vector: 1 }",
      "  - fault: { kind: wrong-index, queue: rq, delta: 1 }",
      "  - fault: { kind: delay-cqe, queue: cq, ms: 300, on: peer }",
      "  - fault: { kind: ignore-doorbell, queue: rq }",
    ]),
    OPTS,
  );
  const recs = [created("qp", 5), created("peer", 6)];
  t.same(
    kinds.steps.map((x) => translateFault(x, kinds, recs)),
    [
      { kind: "stall-queue", qpn: 5, queue: "sq", ms: 500 },
      { kind: "lose-irq", vector: 1 },
      { kind: "wrong-index", qpn: 5, queue: "rq", delta: 1 },
      { kind: "delay-cqe", qpn: 6, ms: 300 },
      { kind: "ignore-doorbell", qpn: 5, queue: "rq" },
    ],
  );
});

t.test("faults the model has no equivalent for", async (t) => {
  t.equal(erdmaFaultGap({ kind: "wrong-cq", on: "qp" }), undefined, "the model has wrong-cq");
  t.match(
    erdmaFaultGap({ kind: "error-wqe", on: "qp", queue: "sq", status: "LOC_PROT_ERR" }),
    /status LOC_PROT_ERR: erdma cannot report it on the sq \(.*map_cqe_status gives GENERAL_ERR, LOC_QP_OP_ERR, LOC_ACCESS_ERR/,
  );
  t.equal(
    erdmaFaultGap({ kind: "error-wqe", on: "qp", queue: "rq", status: "IB_WC_REM_ACCESS_ERR" }),
    undefined,
  );
});

t.test("a fault step that misses what its kind needs is the file's error", async (t) => {
  const errorOf = (step: string) => {
    try {
      scenario(["steps:", `  - ${step}`]);
    } catch (err) {
      return err as { message: string; where?: string };
    }
    throw new Error(`no error for ${step}`);
  };
  t.match(
    errorOf("fault: { kind: error-wqe, queue: sq }").message,
    /steps\[0\]\.fault\.kind: error-wqe needs status/,
  );
  t.match(errorOf("fault: { kind: delay-cqe }").message, /delay-cqe needs ms/);
  t.match(errorOf("fault: { kind: wrong-index }").message, /wrong-index needs delta/);
  t.match(errorOf("fault: { kind: stall-queue }").message, /stall-queue needs queue/);
  const bad = errorOf("fault: { kind: lose-irq, status: GENERAL_ERR }");
  t.match(bad.message, /steps\[0\]\.fault\.status: lose-irq takes no status/);
  t.equal(bad.where, "f.yaml:5:30", "the status field itself");
  t.match(errorOf("fault: { kind: stall-queue, queue: cq }").message, /queue cq is for completion faults/);
});

/** A fake device control channel: records requests, answers as the device server would. */
class FakeControl implements DeviceControl {
  readonly requests: Record<string, unknown>[] = [];
  constructor(private readonly refuse = false) {}
  async control(req: Record<string, unknown>) {
    this.requests.push(req);
    if (this.refuse) return { ok: false as const, error: "fault: status: Too big" };
    return { ok: true as const, id: this.requests.length };
  }
}

class Runner implements CommandRunner {
  readonly calls: string[][] = [];
  async clear() {}
  async run(lines: readonly string[]) {
    this.calls.push([...lines]);
    const line = lines[0] ?? "";
    if (line.startsWith("device")) return { records: [created("qp", 17), created("peer", 18)] };
    if (line.startsWith("post_recv")) return { records: posted(1, "rq", 2000, 8) };
    return { records: [] };
  }
}

t.test("the step runner arms a fault at its step", async (t) => {
  const c = rqFaultScenario("reorder-cqe");
  const control = new FakeControl();
  const runner = new Runner();
  const order: string[] = [];
  const out = await runStepwise(runner, c, {
    fault: async (step, records) => {
      order.push(`fault after ${runner.calls.length} calls`);
      await armFault(control, step, c, records);
    },
  });
  t.equal(out.error, undefined);
  t.same(order, ["fault after 2 calls"], "armed after the post, before the drain");
  t.same(control.requests, [{ op: "fault", fault: { kind: "reorder-cqe", qpn: 17, queue: "rq", nth: 4 } }]);
  t.match(runner.calls[2], ["drain qp=qp which=qp"]);

  const refused = await runStepwise(new Runner(), c, {
    fault: async (step, records) => {
      await armFault(new FakeControl(true), step, c, records);
    },
  });
  t.match(
    refused.error,
    /^step 2 \(line 6\): fault reorder-cqe: the device refused fault .*: fault: status: Too big$/,
  );
  const none = await runStepwise(new Runner(), c);
  t.match(none.error, /step 2 \(line 6\): fault reorder-cqe: nothing here arms device faults/);

  t.equal(controlOf(undefined), undefined);
  t.equal(controlOf({ pid: 1 }), undefined, "a device without control (before the lead wires it)");
  t.equal(controlOf(control), control);
});

t.test("the hardware trace: one file a boot, a slice a scenario, notable events quoted", async (t) => {
  t.equal(hwTraceFileFor("/r/hw-trace.jsonl", 1), "/r/hw-trace.jsonl");
  t.equal(hwTraceFileFor("/r/hw-trace.jsonl", 3), "/r/hw-trace-3.jsonl");
  t.equal(hwTraceFileFor("/r/mine.jsonl", 2), "/r/mine-2.jsonl");
  const dir = mkdtempSync(join(tmpdir(), "hil-hw-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "hw-trace.jsonl");
  const ev = (o: Record<string, unknown>) => `${JSON.stringify({ t: 1.25, dev: "erdma", ...o })}\n`;
  const before = ev({ kind: "doorbell", db: "rq", value: "0x1" });
  const during = [
    ev({ kind: "fault", action: "armed", id: 1, fault: { kind: "drop-cqe", qpn: 17 } }),
    ev({ kind: "wqe", qpn: 17, queue: "sq", index: 3, opcode: 0, op: "SEND", status: 10 }),
    ev({ kind: "wqe", qpn: 99, queue: "sq", index: 0, opcode: 0, op: "SEND", status: 10 }),
    ev({ kind: "wqe", qpn: 17, queue: "sq", index: 4, opcode: 0, op: "SEND", status: 0 }),
    ev({ kind: "state", object: "qp", id: 17, from: "RTS", to: "ERROR" }),
    ev({ kind: "state", object: "qp", id: 17, from: "none", to: "IDLE" }),
    ev({ kind: "flush", qpn: 17, queue: "rq", from: 0, to: 8, count: 8, limit: "error" }),
    ev({ kind: "fault", action: "fired", id: 1, fault: { kind: "drop-cqe" }, context: { index: 3 } }),
  ].join("");
  const after = ev({ kind: "irq", vector: 1, delivered: true, source: "ceq" });
  writeFileSync(file, before + during + after);
  const from = before.length;
  const to = from + during.length;
  t.equal(await readSlice(file, from, to), during, "whole lines between the offsets");
  t.equal(
    await readSlice(file, from + 3, to + 5),
    during.slice(during.indexOf("\n") + 1),
    "a torn first line is left out",
  );
  t.equal(await readSlice(file, 0, 0), "");
  const text = await readSlice(file, from, to);
  const lines = hwEvidence(parseHwTrace(`${text}not json\n`, { lenient: true }), new Set([17]));
  t.same(
    lines.map((l) => l.split(" ").slice(0, 2).join(" ")),
    ["hw fault", "hw fault", "hw wqe", "hw flush", "hw state"],
    "faults first, then the error WQE and the flush of this scenario's QP, then its ERR transition",
  );
  t.match(lines[2], /^hw wqe @1\.3ms \{"qpn":17,"queue":"sq","index":3,.*"status":10\}$/);
  t.equal(
    hwEvidence(parseHwTrace(text, { lenient: true }), new Set([17]), 2).at(-1),
    "hw ... 3 more notable event(s) in the slice",
  );
});

t.test("the user executor: its input, its timeouts, its hang and marker in the oracle's terms", async (t) => {
  const c = compileScenario(
    parseScenario(
      [
        "description: d",
        "covers: [9]",
        "executors: [user]",
        "steps:",
        "  - post_recv: { count: 2 }",
        "  - modify: { state: ERR }",
        "  - post_recv: { count: 1 }",
        "  - drain: { which: qp }",
        "    timeout_ms: 4000",
      ].join("\n"),
      "u.yaml",
    ),
    { ...OPTS, executor: "user" },
  );
  const lines = userLines(c);
  t.ok(
    lines.some((l) => l.startsWith("cq name=pcq") && !l.includes("poll=")),
    "compiled for the user executor: no kernel poll context",
  );
  t.same(lines.slice(-3), ["sleep ms=500", "poll cq=cq min=0 timeout=0", "poll cq=pcq min=0 timeout=0"]);
  t.same(userTimeouts(c), { drainMs: 4000, runMs: 30_000 + 10_000 * 3 + 4000 + 30_000 });

  seq = 0;
  const base = [
    created("qp", 17),
    ...posted(1, "rq", 2000, 2),
    mk({ ev: "modify", call: 2, qp: "qp", state: "ERR" }),
    mk({ ev: "modify_ret", call: 2, rc: 0 }),
    mk({ ev: "post", call: 3, qp: "qp", queue: "rq", op: "recv", wr_id: 2002, count: 1, index: 0, len: 64 }),
    mk({ ev: "post_ret", call: 3, rc: -5, bad: 0 }),
    mk({ ev: "drain", call: 4, qp: "qp", which: "qp" }),
  ];
  const run = (extra: Partial<UverbsRun>): UverbsRun => ({
    records: base,
    done: [],
    exitCode: 1,
    stderr: "",
    ...extra,
  });
  const marker = {
    seq: 99,
    ns: 1,
    ev: "drain_marker" as const,
    call: 4,
    qp: "qp",
    queue: "sq" as const,
    how: "user" as const,
    wr_id: 0,
    rc: -5,
  };
  const drainErr = [
    mk({ ev: "modify", call: 5, qp: "qp", state: "ERR", by: "drain" }),
    mk({ ev: "modify_ret", call: 5, rc: 0 }),
  ];
  const refused = userOutcome(c, run({ records: [...base, ...drainErr, marker] }));
  t.same(refused.stuck, []);
  t.same(
    refused.records.filter((r) => r.ev === "drain_marker"),
    [marker],
    "the refused marker is in the trace the oracle judges",
  );
  const obs = [...refused.stuck];
  const byProfile = Object.fromEntries(
    judgeTrace({ records: refused.records, observations: obs }, ["ib", "iwarp-rdmac", "linux"]).map((j) => [
      j.profile,
      Object.fromEntries(j.rules.map((r) => [r.rule, r])),
    ]),
  );
  t.equal(byProfile.ib?.["2"]?.verdict, "FAIL", "a receive refused in ERROR: FAIL under ib");
  t.equal(byProfile.linux?.["2"]?.verdict, "FAIL", "and under linux");
  t.equal(byProfile["iwarp-rdmac"]?.["2"]?.verdict, "PASS", "tolerated under iwarp-rdmac (RDMAC 6.2.4)");
  t.equal(byProfile.linux?.["9"]?.verdict, "FAIL");
  t.match(
    byProfile.linux?.["9"]?.reason,
    /the sq drain marker of qp was refused \(post returned -5\)/,
    "not called a hang",
  );
  t.equal(byProfile.linux?.hang?.verdict, "PASS", "a refused marker is no hang");

  const hang = userOutcome(
    c,
    run({
      hang: {
        seq: 100,
        ns: 2,
        ev: "hang",
        call: 4,
        qp: "qp",
        op: "drain",
        which: "qp",
        queue: "rq",
        cq: "cq",
        waited_ms: 4000,
      },
    }),
  );
  t.match(hang.stuck, [{ ev: "stuck", step: 3, op: "drain", ms: 4000, state: "polling its CQ" }]);
  const killed = userOutcome(
    c,
    run({
      records: [...base, mk({ ev: "cmd", id: 9, line: "drain qp=qp which=qp" })],
      killed: {
        pid: 7,
        afterMs: 60_000,
        stack: "[<0>] ib_uverbs_write",
        state: "D (disk sleep)",
        wchan: "x",
      },
    }),
  );
  t.match(killed.stuck, [
    { ev: "stuck", op: "drain", ms: 60_000, stack: "[<0>] ib_uverbs_write", state: "D (disk sleep)" },
  ]);
});
