// ULP workloads (NVMe over Fabrics on RDMA): the scenario file's workload rules, what the guest
// script's output becomes, the stuck evidence, the ULP rules on hand-made observations, the ULP
// config fragment a run adds, and the fault a ULP step arms (any QP).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { renderShow } from "../../harness/cli/scenarios-command.ts";
import {
  parseRdmaResources,
  parseTaskStacks,
  parseUlpValues,
  stuckStack,
  ulpCommand,
} from "../../harness/executor/ulp.ts";
import { judgeTrace, ULP_RULE_SET } from "../../harness/oracle/judge.ts";
import type { HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import type { Observation, UlpStepObservation } from "../../harness/protocol/observations.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { loadScenarioFile } from "../../harness/scenario/load.ts";
import { translateUlpFault, ulpQp } from "../../harness/suite/faults.ts";
import { withUlpConfig } from "../../harness/workflows/job/job.ts";
import { loadProfile } from "../../qemu/erdma/profile-file.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";

function scenarioFile(t: { testdir(): string }, text: string): string {
  const dir = t.testdir();
  const file = join(dir, "ulp-x.yaml");
  writeFileSync(file, text);
  return file;
}

const ULP = `description: nvme
workload: nvme-rdma
covers: [ulp-data, hang]
profiles: [linux]
steps:
  - ulp: target-up
  - ulp: connect
  - fault: { kind: error-wqe, queue: sq, status: LOC_QP_OP_ERR }
  - ulp: { io: { kib: 64 } }
    expect: { rc: any }
  - ulp: disconnect
`;

t.test("a ULP workload's file: its steps, its rules, its command lines", async (t) => {
  const s = await loadScenarioFile(scenarioFile(t, ULP));
  t.equal(s.workload, "nvme-rdma");
  const c = compileScenario(s, { addr: "10.0.2.15", port: 7611 });
  t.same(
    c.steps.map((x) => x.ulp ?? x.kind),
    ["target-up", "connect", "fault", { io: { kib: 64 } }, "disconnect"],
  );
  t.equal(c.steps[3]?.expect, "any");
  t.equal(
    ulpCommand(c, { io: { kib: 64 } }),
    "sh /tmp/hil-ulp.sh nvme-rdma io 10.0.2.15 7611 hil-ulp-x-7611 64",
    "the NQN names the scenario and its port",
  );
  t.same(translateUlpFault(c.steps[2] as never), { kind: "error-wqe", queue: "sq", status: 8 });
});

t.test(
  "a ULP workload refuses verbs steps, rules 1-9 and faults on a wr_id; verbs refuse ulp steps",
  async (t) => {
    const bad = async (text: string, re: RegExp, what: string) =>
      t.rejects(loadScenarioFile(scenarioFile(t, text)), { message: re }, what);
    await bad(
      ULP.replace("  - ulp: connect", "  - drain: {}"),
      /steps\[1\]\.drain: the nvme-rdma workload has ulp, fault, sleep steps, not drain/,
      "a drain step",
    );
    await bad(
      ULP.replace("[ulp-data, hang]", "[ulp-data, 5]"),
      /covers\[1\]: rule 5 is judged on a verbs trace/,
      "rule 5",
    );
    await bad(
      ULP.replace("status: LOC_QP_OP_ERR }", "status: LOC_QP_OP_ERR, wr_id: 3 }"),
      /wr_id.*no wr_id/s,
      "a fault on a WR",
    );
    await bad(ULP.replace("io: { kib: 64 }", "io: { kib: 6 }"), /kib/, "kib not a multiple of 4");
    await bad(
      "description: d\ncovers: [1]\nsteps:\n  - ulp: connect\n",
      /ulp step needs a ULP workload/,
      "a ulp step in a verbs scenario",
    );
    await bad(
      "description: d\ncovers: [ulp-data]\nsteps:\n  - drain: {}\n",
      /ULP workload's rule/,
      "ulp-data on verbs",
    );
  },
);

t.test("the script's reports, rdma resource counts and blocked tasks' stacks", async (t) => {
  t.same(
    parseUlpValues(
      "noise\nhil-ulp written-sha256=ab12 bytes=4096 device=/dev/nvme0n1\nhil-ulp write-error=dd: error writing '/dev/nvme0n1': I/O error\n",
    ),
    {
      "written-sha256": "ab12",
      bytes: "4096",
      device: "/dev/nvme0n1",
      "write-error": "dd: error writing '/dev/nvme0n1': I/O error",
    },
  );
  t.same(
    parseRdmaResources(
      "0: erdma_0: pd 2 cq 2 qp 4 cm_id 5 mr 320 ctx 0 srq 0 \n1: siw0: pd 1 cq 0 qp 1 cm_id 0 mr 0 ctx 0 srq 0\n",
    ),
    { pd: 3, cq: 2, qp: 5, cm_id: 5, mr: 320, ctx: 0, srq: 0 },
  );
  const tasks = parseTaskStacks(
    [
      "task 140 step sh S (sleeping)",
      "[<0>] do_wait+0x1/0x2",
      "end",
      "task 33 blocked kworker/u2:1+nvme-wq D (disk sleep)",
      "[<0>] __ib_drain_sq+0x106/0x110 [ib_core]",
      "[<0>] nvme_rdma_stop_queue+0x33/0x3e [nvme_rdma]",
      "end",
      "task 145 child dd D (disk sleep)",
      "[<0>] blk_wait_io+0x25/0x38",
      "end",
      "task 140 step sh S (sleeping)",
      "end",
    ].join("\n"),
  );
  t.same(
    tasks.map((x) => [x.pid, x.role, x.comm]),
    [
      ["140", "step", "sh"],
      ["33", "blocked", "kworker/u2:1+nvme-wq"],
      ["145", "child", "dd"],
    ],
    "a task listed twice is kept once",
  );
  const stack = stuckStack(tasks);
  t.match(stack, /^\[<0>\] blk_wait_io/, "the step's blocked child first, though listed after a worker");
  t.match(
    stack,
    /-- also blocked: kworker\/u2:1\+nvme-wq \(pid 33, D \(disk sleep\)\)\n\[<0>\] __ib_drain_sq/,
  );
  t.notMatch(stack, /do_wait/, "the step's shell, sleeping, is not the evidence");
});

const step = (over: Partial<UlpStepObservation>): UlpStepObservation => ({
  ev: "ulp-step",
  step: 0,
  action: "connect",
  exitCode: 0,
  ms: 10,
  values: {},
  expect: 0,
  ...over,
});

function judge(observations: Observation[], hw?: HwTraceEvent[]) {
  const [j] = judgeTrace({ records: [], observations, ...(hw ? { hw } : {}) }, ["linux"], {
    rules: ULP_RULE_SET,
    covers: ["ulp-data"],
  });
  if (!j) throw new Error("no judgement");
  return j;
}
const rule = (j: ReturnType<typeof judge>, id: string) => j.rules.find((r) => r.rule === id);

t.test(
  "ulp-data: data read back as written, an error reported is no loss, a silent difference is",
  async (t) => {
    const io = (values: Record<string, string>, exitCode = 0) =>
      step({ step: 2, action: "io 64 KiB", values: { bytes: "65536", ...values }, exitCode });
    const same = judge([io({ "written-sha256": "aa", "read-sha256": "aa" })]);
    t.equal(rule(same, "ulp-data")?.verdict, "PASS");
    t.equal(rule(same, "ulp-data")?.judged, 1);
    const reported = judge([io({ "written-sha256": "aa", "write-error": "I/O error" }, 5)]);
    t.equal(rule(reported, "ulp-data")?.verdict, "PASS");
    t.match(rule(reported, "ulp-data")?.reason, /1 reported an I\/O error/);
    const lost = judge([io({ "written-sha256": "aa", "read-sha256": "bb", differ: "byte 4097" })]);
    t.equal(lost.verdict, "FAIL");
    t.match(rule(lost, "ulp-data")?.reason, /step 3 \(io 64 KiB\): 65536 bytes read back differ/);
    t.match(rule(lost, "ulp-data")?.evidence?.join("\n"), /first difference: byte 4097/);
    const none = judge([step({})]);
    t.equal(rule(none, "ulp-data")?.verdict, "MISS", "a covered ulp-data with no I/O step is a MISS");
  },
);

t.test("ulp-steps: exit codes against expect; hang: a stuck step; ulp-leak: objects left", async (t) => {
  const failed = judge([step({ exitCode: 1, stderr: "connect to hil-x at rdma 10.0.2.15:7600 failed" })]);
  t.equal(rule(failed, "ulp-steps")?.verdict, "FAIL");
  t.match(rule(failed, "ulp-steps")?.reason, /step 1 \(connect\) exited 1: connect to hil-x/);
  t.equal(rule(judge([step({ exitCode: 5, expect: "any" })]), "ulp-steps")?.verdict, "PASS");
  t.equal(rule(judge([step({ exitCode: 0, expect: "error" })]), "ulp-steps")?.verdict, "FAIL");

  const stuck = judge([
    step({}),
    {
      ev: "stuck",
      step: 3,
      op: "ulp disconnect",
      ms: 10_000,
      stack: "[<0>] __ib_drain_sq",
      state: "D (sh, pid 9)",
    },
  ]);
  t.equal(stuck.verdict, "FAIL");
  t.match(rule(stuck, "hang")?.reason, /ulp disconnect \(step 4\) did not return within 10000 ms/);
  t.match(rule(stuck, "hang")?.evidence?.join("\n"), /stack: \[<0>\] __ib_drain_sq/);

  const objects = (
    before: Record<string, number>,
    after: Record<string, number>,
    source: "kernel" | "device",
  ) => ({ ev: "ulp-objects", source, before, after }) as const;
  const clean = judge([step({}), objects({ qp: 0, cq: 0, mr: 0 }, { qp: 0, cq: 2, mr: 0 }, "kernel")]);
  t.equal(rule(clean, "ulp-leak")?.verdict, "PASS", "the CQ pool's CQs are not a leak");
  const leak = judge([
    step({}),
    objects({ qp: 0, mr: 0 }, { qp: 0, mr: 0 }, "kernel"),
    objects({ qp: 1, mr: 0, cq: 1 }, { qp: 3, mr: 1, cq: 1 }, "device"),
  ]);
  t.equal(rule(leak, "ulp-leak")?.verdict, "FAIL");
  t.match(rule(leak, "ulp-leak")?.reason, /the device still holds 2 qp\(s\), 1 mr\(s\) more than before/);
  t.equal(rule(judge([step({})]), "ulp-leak")?.verdict, "SKIP", "not counted: nothing to judge");

  // the device's refused release commands are the evidence of its leak (the kernel's count is not theirs)
  const cmd = (name: string, status: number, statusName: string, reason?: string): HwTraceEvent => ({
    t: 1,
    dev: "erdma",
    ...cmdEventBody(name, status, { opcode: 9, statusName, ...(reason ? { reason } : {}) }),
  });
  const refused = judge(
    [
      step({}),
      objects({ mr: 0 }, { mr: 1 }, "kernel"),
      objects({ qp: 0, mr: 0 }, { qp: 0, mr: 1 }, "device"),
    ],
    [
      cmd("DEREG_MR", 0, "OK"),
      cmd("DEREG_MR", 3, "BAD_PARAM", "key 3 does not match 2 (MPT index 67, stag 0x4302)"),
      cmd("MODIFY_QP", 6, "BAD_STATE", "ERROR -> CLOSING"),
    ],
  );
  t.match(
    rule(refused, "ulp-leak")?.reason,
    /^after the teardown the kernel still tracks 1 mr\(s\) more than before the scenario \(and 1 more\)$/,
    "the kernel's count first, without the device's commands",
  );
  t.match(
    rule(refused, "ulp-leak")?.problems?.[1]?.reason,
    /^after the teardown the device still holds 1 mr\(s\) more than before the scenario; erdma DEREG_MR refused \(BAD_PARAM\): key 3 does not match 2 \(MPT index 67, stag 0x4302\)$/,
    "the device's count names the release it refused",
  );
  const said = rule(refused, "ulp-leak")?.evidence ?? [];
  t.same(
    said.map((l) => l.trim()).filter((l) => l.startsWith("hw:")),
    ["hw: erdma DEREG_MR refused (BAD_PARAM): key 3 does not match 2 (MPT index 67, stag 0x4302)"],
    "once, for the device's count: only the refused release, not a refused MODIFY_QP or a release that worked",
  );
});

t.test("a run that selects a ULP workload gets the ulp config fragment, once", async (t) => {
  const spec = {
    kernel: "debian:6.12",
    driver: "erdma" as const,
    executor: "kernel" as const,
    scenarios: "ulp-*",
  };
  const ulp = await loadScenarioFile(scenarioFile(t, ULP));
  t.same(withUlpConfig(spec, [ulp]).configs, ["ulp"]);
  t.same(withUlpConfig({ ...spec, configs: ["smp"] }, [ulp]).configs, ["smp", "ulp"]);
  t.same(withUlpConfig({ ...spec, configs: ["/x/ulp.config"] }, [ulp]).configs, ["/x/ulp.config"]);
  const verbs = await loadScenarioFile(
    scenarioFile(t, "description: d\ncovers: [9]\nsteps:\n  - drain: {}\n"),
  );
  t.equal(withUlpConfig(spec, [verbs]), spec, "a verbs-only run keeps its kernel");
});

t.test("a completion fault's status picks the completions it hits", async (t) => {
  const s = await loadScenarioFile(
    scenarioFile(
      t,
      ULP.replace(
        "{ kind: error-wqe, queue: sq, status: LOC_QP_OP_ERR }",
        "{ kind: drop-cqe, queue: rq, status: WR_FLUSH_ERR }",
      ),
    ),
  );
  const c = compileScenario(s, { addr: "10.0.2.15", port: 7611 });
  t.same(translateUlpFault(c.steps[2] as never), { kind: "drop-cqe", queue: "rq", syndrome: 15 });
  await t.rejects(
    loadScenarioFile(
      scenarioFile(
        t,
        ULP.replace(
          "{ kind: error-wqe, queue: sq, status: LOC_QP_OP_ERR }",
          "{ kind: lose-irq, status: WR_FLUSH_ERR }",
        ),
      ),
    ),
    { message: /lose-irq takes no status/ },
  );
});

t.test("--show: a ULP workload's guest command per step, its ULP rules' titles", async (t) => {
  const file = scenarioFile(t, ULP);
  const compiled = compileScenario(await loadScenarioFile(file), { addr: "10.0.2.15", port: 7600 });
  const text = renderShow([{ file, compiled } as never]);
  t.match(text, /rule ulp-data: data the block layer acknowledged reads back as written/);
  t.match(text, /rule hang: every ULP step returns/);
  t.match(
    text,
    /step 4, line \d+: ulp \(watchdog 10000 ms\)\n {4}sh \/tmp\/hil-ulp\.sh nvme-rdma io 10\.0\.2\.15 7600 hil-ulp-x-7600 64/,
  );
  t.match(
    text,
    /step 3, line \d+: fault \(armed on the device's control channel, on any QP\)\n {4}device fault: kind=error-wqe queue=sq/,
  );
  t.notMatch(text, /setup \(watchdog|settle \(kernel executor\)/, "no verbs setup or settle");
});

t.test("two guests: a ULP workload, on erdma or siw; rnbd only on two", async (t) => {
  const two = ULP.replace("workload: nvme-rdma\n", "workload: nvme-rdma\nguests: 2\ndrivers: [erdma]\n");
  t.equal((await loadScenarioFile(scenarioFile(t, two))).guests, 2);
  const both = ULP.replace("workload: nvme-rdma\n", "workload: nvme-rdma\nguests: 2\n");
  t.same(
    (await loadScenarioFile(scenarioFile(t, both))).drivers,
    ["siw", "erdma", "rxe"],
    "the software drivers pair too",
  );
  await t.rejects(
    loadScenarioFile(scenarioFile(t, "description: d\nguests: 2\ncovers: [9]\nsteps:\n  - drain: {}\n")),
    { message: /guests: two guests are for a ULP workload/ },
  );
  const rnbd = ULP.replace("workload: nvme-rdma\n", "workload: rnbd\n");
  await t.rejects(loadScenarioFile(scenarioFile(t, rnbd)), {
    message: /guests: rnbd needs two guests \(guests: 2\): rtrs-srv listens on the IPv6 wildcard/,
  });
  t.equal(
    (await loadScenarioFile(scenarioFile(t, rnbd.replace("workload: rnbd\n", "workload: rnbd\nguests: 2\n"))))
      .workload,
    "rnbd",
  );
});

t.test(
  "a ULP fault on a QP: the host's I/O queue (on: qp) or the target's (on: peer), by the connection's port",
  async (t) => {
    const qps = [
      { qpn: 2, connection: { sport: 40000, dport: 7611 } },
      { qpn: 3, connection: { sport: 7611, dport: 40000 } },
      { qpn: 4, connection: { sport: 40001, dport: 7611 } },
      { qpn: 5, connection: { sport: 7611, dport: 40001 } },
      { qpn: 9, connection: { sport: 40002, dport: 7700 } },
      { qpn: 11 },
    ];
    const control = { control: async () => ({ ok: true as const, state: { qps } }) };
    t.equal(await ulpQp(control, undefined, "host", 7611), 4, "the host's newer QP: its I/O queue");
    t.equal(await ulpQp(control, undefined, "target", 7611), 5);
    await t.rejects(ulpQp(control, "erdma1", "host", 7612), {
      message:
        "no QP of the ULP's host is connected on port 7612 on erdma1: a fault on a QP comes after the connect",
    });
  },
);

t.test("a profile's closeInError that is neither refuse nor accept is the file's error", async (t) => {
  const dir = t.testdir({
    "erdma-odd.json": JSON.stringify({ name: "erdma-odd", extends: "erdma-reflush", closeInError: "maybe" }),
  });
  t.throws(() => loadProfile(join(dir, "erdma-odd.json")), {
    message: "invalid device profile",
    detail: /closeInError/,
  });
});

t.test("a connect that hangs or fails: the device's half-open connections are its evidence", async (t) => {
  const rts = (dev: string, qpn: number, sip: string, sport: number, dip: string, dport: number) =>
    ({
      t: 1,
      dev,
      ...cmdEventBody("MODIFY_QP", 0, {
        opcode: 3,
        detail: { qpn, from: "IDLE", to: "RTS", connection: { sip, dip, sport, dport, cookie: 1 } },
      }),
    }) as unknown as HwTraceEvent;
  const connect = {
    ev: "stuck",
    step: 1,
    op: "ulp connect",
    ms: 10_000,
    stack: "[<0>] nvme_rdma_alloc_queue",
    state: "S (sh, pid 96)",
  } as const;
  // the admin queue's connection is open on both sides, the I/O queue's on the target's only
  const hw = [
    rts("erdma1", 1, "10.99.0.2", 7600, "10.99.0.1", 40000),
    rts("erdma0", 1, "10.99.0.1", 40000, "10.99.0.2", 7600),
    rts("erdma1", 2, "10.99.0.2", 7600, "10.99.0.1", 40001),
  ];
  const j = judge([step({ action: "target-up" }), connect], hw);
  t.match(
    rule(j, "hang")?.reason,
    /^ulp connect \(step 2\) did not return within 10000 ms; its task is S \(sh, pid 96\); the device saw 1 connection\(s\) reach RTS on one side only$/,
  );
  t.same(
    rule(j, "hang")
      ?.evidence?.map((l) => l.trim())
      .filter((l) => l.startsWith("hw:")),
    [
      "hw: erdma1 QP 2 reached RTS on 10.99.0.2:7600 <-> 10.99.0.1:40001; no QP reached RTS on its other side (10.99.0.1:40001)",
    ],
  );
  const failed = judge(
    [
      step({ action: "target-up" }),
      step({ step: 1, exitCode: 1, stderr: "sh: write error: Connection reset by peer" }),
    ],
    hw,
  );
  t.match(
    rule(failed, "ulp-steps")?.reason,
    /^step 2 \(connect\) exited 1: sh: write error: Connection reset by peer; the device saw 1 connection\(s\) reach RTS on one side only$/,
    "a connect that failed says it too",
  );
  t.match(rule(failed, "ulp-steps")?.evidence?.join("\n"), /hw: erdma1 QP 2 reached RTS/);
  const otherStep = judge([step({ step: 3, action: "disconnect", exitCode: 1 })], hw);
  t.notMatch(rule(otherStep, "ulp-steps")?.reason, /one side only/, "a failed disconnect does not");
  const bothOpen = judge([step({ action: "target-up" }), connect], hw.slice(0, 2));
  t.notMatch(rule(bothOpen, "hang")?.reason, /one side only/, "no half-open connection, no such words");
  const disconnect = judge([step({}), { ...connect, op: "ulp disconnect" }], hw);
  t.notMatch(rule(disconnect, "hang")?.evidence?.join("\n"), /hw:/, "said of a hung connect only");
});
