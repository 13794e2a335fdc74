// The suite's pieces that need no guest: which scenarios run where (SKIP/MISS with the reason),
// the step-by-step runner against a scripted executor (setup, steps, settle, teardown; a stuck
// step ends the scenario with its stack; a broken setup is an error), the settle polls for
// owed completions, the verdict rows and table, and `hil run`'s bad input.
import { rmSync } from "node:fs";
import t from "tap";
import { executorFactory } from "../../harness/executor/registry.ts";
import { owedCompletions, settleCommands } from "../../harness/executor/settle.ts";
import { type CommandRunner, runStepwise, type StuckCommand } from "../../harness/executor/stepwise.ts";
import { judgeTrace } from "../../harness/oracle/judge.ts";
import { type TraceRecord, traceRecordSchema } from "../../harness/protocol/trace.ts";
import { renderScenarioTable } from "../../harness/report/scenario-table.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import { planScenario, planSteps } from "../../harness/suite/plan.ts";
import { type SuiteReport, staleRecordResults, suiteResults } from "../../harness/suite/results.ts";
import { exitCodeFor } from "../../harness/verdict.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";

const OPTS = { addr: "10.0.2.15", port: 7700 };

function scenario(lines: string[], name = "s") {
  return parseScenario(["description: d", "covers: [9]", ...lines].join("\n"), `${name}.yaml`);
}

t.test("which scenarios run where", async (t) => {
  const erdmaOnly = scenario(["drivers: [erdma]", "steps: [ { drain: {} } ]"]);
  t.same(planScenario(erdmaOnly, { driver: "siw", executor: "kernel" }), {
    run: false,
    verdict: "SKIP",
    reason: "meant for erdma, not siw",
  });
  t.same(planScenario(erdmaOnly, { driver: "erdma", executor: "kernel" }), { run: true });
  const userOnly = scenario(["executors: [user]", "steps: [ { drain: {} } ]"]);
  t.match(planScenario(userOnly, { driver: "siw", executor: "kernel" }), { verdict: "SKIP" });
  const profiled = scenario(["device_profiles: [erdma-2022]", "steps: [ { drain: {} } ]"]);
  t.match(planScenario(profiled, { driver: "erdma", executor: "kernel", deviceProfile: "erdma-reflush" }), {
    verdict: "SKIP",
    reason: /erdma-2022, not erdma-reflush/,
  });

  const fault = compileScenario(scenario(["steps:", "  - fault: { kind: drop-cqe }", "  - drain: {}"]), OPTS);
  t.match(planSteps(fault, { driver: "siw", executor: "kernel" }), {
    verdict: "SKIP",
    reason: /^step 1 \(line 4\): .*siw has no device model/,
  });
  t.same(planSteps(fault, { driver: "erdma", executor: "kernel" }), { run: true }, "erdma arms it");
  t.same(
    planSteps(fault, { driver: "erdma", executor: "user" }),
    { run: true },
    "the user executor stops its streamed input for it",
  );
  const wrongCq = compileScenario(
    scenario(["steps:", "  - fault: { kind: wrong-cq }", "  - drain: {}"]),
    OPTS,
  );
  t.same(
    planSteps(wrongCq, { driver: "erdma", executor: "kernel" }),
    { run: true },
    "the model has wrong-cq",
  );
  const softirq = scenario(["qp: { poll: softirq }", "steps: [ { drain: {} } ]"]);
  t.match(planScenario(softirq, { driver: "erdma", executor: "user" }), {
    verdict: "SKIP",
    reason: /kernel's softirq CQ poll context/,
  });
  const regMr = compileScenario(scenario(["steps:", "  - post_send: { op: reg_mr }"]), OPTS);
  t.same(
    planSteps(regMr, { driver: "siw", executor: "kernel" }),
    { run: true },
    "hil_kverbs posts IB_WR_REG_MR",
  );
  t.match(planSteps(regMr, { driver: "erdma", executor: "user" }), {
    verdict: "MISS",
    reason: /hil-uverbs cannot post reg_mr: libibverbs has no IBV_WR_REG_MR/,
  });

  t.equal(typeof executorFactory("kernel"), "function");
  t.equal(typeof executorFactory("user"), "function", "the user executor is wired in");
});

/** A scripted executor: answers each run() with records made by `respond`, records every call. */
class ScriptedRunner implements CommandRunner {
  readonly calls: Array<{ lines: readonly string[]; timeoutMs: number }> = [];
  cleared = 0;
  private seq = 0;

  constructor(
    private readonly respond: (
      lines: readonly string[],
      mk: (f: Record<string, unknown>) => TraceRecord,
    ) => {
      records?: TraceRecord[];
      stuck?: StuckCommand;
    },
  ) {}

  async clear(): Promise<void> {
    this.cleared++;
  }

  async run(lines: readonly string[], timeoutMs: number) {
    this.calls.push({ lines, timeoutMs });
    const mk = (f: Record<string, unknown>) =>
      traceRecordSchema.parse({ seq: this.seq++, ns: this.seq, ...f });
    const r = this.respond(lines, mk);
    return { records: r.records ?? [], ...(r.stuck ? { stuck: r.stuck } : {}) };
  }
}

/** The same runner with runSteps: every group it is given goes out in one round trip. */
/** What the guest reports of a drain that never returns: its wait, its kernel stack and its task state. */
const STUCK_DRAIN = {
  op: "drain",
  ms: 10_004,
  stack: "[<0>] __ib_drain_sq+0x1/0x2",
  state: "D (disk sleep)",
};
/** A runner's answers where every drain sticks and every other command returns. */
const drainSticks = (lines: readonly string[]) =>
  lines[0]?.startsWith("drain") ? { stuck: STUCK_DRAIN } : {};

class BatchingRunner extends ScriptedRunner {
  readonly rounds: string[][][] = [];

  async runSteps(
    steps: readonly { lines: readonly string[]; timeoutMs: number; stopOnFailure?: boolean }[],
    opts: { clear?: boolean } = {},
  ) {
    if (opts.clear) await this.clear();
    this.rounds.push(steps.map((s) => [...s.lines]));
    const records: TraceRecord[] = [];
    for (const [i, s] of steps.entries()) {
      const r = await this.run(s.lines, s.timeoutMs);
      records.push(...r.records);
      if (r.stuck) return { records, ran: i + 1, stuck: { ...r.stuck, stuckAt: i } };
      if (s.stopOnFailure && records.some((x) => x.ev === "done" && x.rc !== 0))
        return { records, ran: i + 1 };
    }
    return { records, ran: steps.length };
  }
}

/** The answers to the setup (a connected QP) and to posting the 3 receives of wr_id 2000. */
function connectAndPostRecv(
  lines: readonly string[],
  mk: (f: Record<string, unknown>) => TraceRecord,
): { records: TraceRecord[] } | undefined {
  const line = lines[0] ?? "";
  if (line.startsWith("device"))
    return { records: [mk(QP), mk({ ev: "done", id: 1, op: "connect", rc: 0, us: 1 })] };
  if (line.startsWith("post_recv"))
    return {
      records: [
        mk({
          ev: "post",
          call: 1,
          qp: "qp",
          queue: "rq",
          op: "recv",
          wr_id: 2000,
          count: 3,
          index: 0,
          len: 64,
        }),
        mk({ ev: "post_ret", call: 1, rc: 0, bad: null }),
      ],
    };
  return undefined;
}

/** connectAndPostRecv's answers, and the QP's move to ERR (modify). */
function connectPostRecvAndErr(
  lines: readonly string[],
  mk: (f: Record<string, unknown>) => TraceRecord,
): { records: TraceRecord[] } | undefined {
  if (!lines[0]?.startsWith("modify")) return connectAndPostRecv(lines, mk);
  return {
    records: [
      mk({ ev: "modify", call: 2, qp: "qp", state: "ERR" }),
      mk({ ev: "modify_ret", call: 2, rc: 0 }),
    ],
  };
}

const QP = {
  ev: "create",
  kind: "qp",
  name: "qp",
  qp_num: 1,
  cm: true,
  scq: "cq",
  rcq: "cq",
  sig_all: false,
  max_send_wr: 64,
  max_recv_wr: 64,
  max_send_sge: 1,
  max_inline_data: 0,
  cmd: 6,
};

t.test("a scenario step by step: setup, steps, settle for owed completions, teardown", async (t) => {
  const c = compileScenario(
    scenario(["steps:", "  - post_recv: { count: 3 }", "  - modify: { state: ERR }"]),
    OPTS,
  );
  const runner = new ScriptedRunner((lines, mk) => {
    return connectPostRecvAndErr(lines, mk) ?? {};
  });
  const out = await runStepwise(runner, c);
  t.equal(runner.cleared, 1, "the trace is cleared first");
  t.same(
    runner.calls.map((x) => x.lines),
    [
      c.setup,
      ["post_recv qp=qp wr_id=2000 count=3"],
      ["modify qp=qp state=ERR"],
      ["poll cq=cq min=3 timeout=2000", "poll cq=pcq min=0 timeout=0"],
      ["reset"],
    ],
    "the settle waits for the 3 receives the QP in ERR owes",
  );
  t.same(
    runner.calls.map((x) => x.timeoutMs),
    [30_000, 10_000, 10_000, 14_000, 30_000],
  );
  t.equal(out.error, undefined);
  t.same(out.stuck, []);
  t.equal(out.records.length, 6);
});

t.test(
  "where the device can tell, the settle stops waiting once it has been quiet through the first wait",
  async (t) => {
    const c = compileScenario(
      scenario(["steps:", "  - post_recv: { count: 3 }", "  - modify: { state: ERR }"]),
      OPTS,
    );
    /**
     * `flushed`: how many of the receives' flush completions each poll gets (none: never);
     * `others`: completions each poll also gets that settle nothing owed (e.g. of WRs not in ERR)
     */
    const runWith = async (quiet: boolean, flushed = 0, others = 0) => {
      const asked: number[] = [];
      const runner = new ScriptedRunner((lines, mk) => {
        const answered = connectPostRecvAndErr(lines, mk);
        if (answered) return answered;
        const line = lines[0] ?? "";
        if (line.startsWith("poll cq=cq")) {
          // the CQEs it polls, then its own record: got against the min it was given
          const min = Number(/min=(\d+)/.exec(line)?.[1]);
          const cqes = Array.from({ length: Math.min(flushed, 3) }, (_, i) =>
            mk({
              ev: "cqe",
              cq: "cq",
              qp: "qp",
              queue: "rq",
              wr_id: 2000 + i,
              status: 5,
              status_name: "WR_FLUSH_ERR",
              opcode: 128,
              opcode_name: "RECV",
              qp_num: 1,
              vendor_err: 0,
              byte_len: 0,
              call: 1,
            }),
          );
          const got = cqes.length + others;
          return { records: [...cqes, mk({ ev: "poll", cq: "cq", got, min, total: got })] };
        }
        return {};
      });
      const hooks = {
        deviceQuiet: {
          ms: 1000,
          now: async () => {
            asked.push(1);
            return quiet;
          },
        },
      };
      await runStepwise(runner, c, hooks);
      return { settle: runner.calls.slice(3).map((x) => x.lines), asked: asked.length };
    };
    const quiet = await runWith(true);
    t.same(
      quiet.settle,
      [["poll cq=cq min=3 timeout=1100", "poll cq=pcq min=0 timeout=0"], ["reset"]],
      "a device quiet through the first 1.1 s of the wait: the rest is not waited for",
    );
    t.equal(quiet.asked, 1);
    t.same(
      (await runWith(false)).settle,
      [
        ["poll cq=cq min=3 timeout=1100", "poll cq=pcq min=0 timeout=0"],
        ["poll cq=cq min=3 timeout=900", "poll cq=pcq min=0 timeout=0"],
        ["reset"],
      ],
      "a device still busy: the rest of the 2 s",
    );
    const other = await runWith(false, 0, 3);
    t.same(
      other.settle,
      [["poll cq=cq min=3 timeout=1100", "poll cq=pcq min=0 timeout=0"], ["reset"]],
      "a poll that got its min (other completions than those owed) ends the wait, as the 2 s one did",
    );
    t.equal(other.asked, 0);
    const arrived = await runWith(false, 3);
    t.same(
      arrived.settle,
      [["poll cq=cq min=3 timeout=1100", "poll cq=pcq min=0 timeout=0"], ["reset"]],
      "what was owed came: no second wait",
    );
    t.equal(arrived.asked, 0, "and the device is not asked");
  },
);

t.test(
  "a sleep until the device is idle: the host waits where it can ask the device, the guest sleeps where not",
  async (t) => {
    const c = compileScenario(
      scenario([
        "steps:",
        "  - post_recv: { count: 3 }",
        "  - sleep: { ms: 700, until: device_idle }",
        "  - query: {}",
      ]),
      OPTS,
    );
    t.same(c.steps[1]?.commands, ["sleep ms=700"], "compiled as a sleep of its whole ms");
    t.same(c.steps[1]?.untilDeviceIdle, { ms: 700 });
    const lines = async (hooks: Parameters<typeof runStepwise>[2]) => {
      const runner = new BatchingRunner((l, mk) => connectAndPostRecv(l, mk) ?? {});
      await runStepwise(runner, c, hooks);
      return runner.rounds;
    };
    const waits: number[] = [];
    const asked = await lines({
      sleepUntilDeviceIdle: async (ms) => {
        waits.push(ms);
      },
    });
    t.same(waits, [700], "the host waited, up to the step's ms");
    t.same(
      asked.slice(0, 2),
      [[c.setup, ["post_recv qp=qp wr_id=2000 count=3"]], [["query qp=qp"]]],
      "the batch is cut where the host waits, and no sleep goes to the guest",
    );
    const plain = await lines({});
    t.same(
      plain[0],
      [c.setup, ["post_recv qp=qp wr_id=2000 count=3"], ["sleep ms=700"], ["query qp=qp"]],
      "where the device cannot be asked: the guest sleeps, in the same round trip",
    );
  },
);

t.test("sleep: a number, or { ms, until: device_idle }", async (t) => {
  t.throws(() => scenario(["steps: [ { sleep: { ms: 5, until: forever } } ]"]), /steps\[0\]\.sleep/);
  t.throws(() => scenario(["steps: [ { sleep: { until: device_idle } } ]"]), /steps\[0\]\.sleep/);
  t.throws(() => scenario(["steps: [ { sleep: { ms: 0, until: device_idle } } ]"]), /steps\[0\]\.sleep/);
});

t.test("a stuck step ends the scenario, with the stack", async (t) => {
  const c = compileScenario(scenario(["steps:", "  - drain: {}", "  - query: {}"]), OPTS);
  const runner = new ScriptedRunner(drainSticks);
  const out = await runStepwise(runner, c);
  t.same(out.stuck, [{ ev: "stuck", step: 0, ...STUCK_DRAIN }]);
  t.equal(runner.calls.length, 2, "nothing runs after the stuck step, not even the teardown");
  t.equal(out.error, undefined, "a hang is a verdict, not a broken run");
});

t.test("a failed setup is an error; so is an executor that throws", async (t) => {
  const c = compileScenario(scenario(["steps: [ { drain: {} } ]"]), OPTS);
  const refused = new ScriptedRunner((_l, mk) => ({
    records: [mk({ ev: "done", id: 6, op: "connect", rc: -110, us: 5, err: "no route" })],
  }));
  t.equal((await runStepwise(refused, c)).error, "setup failed: connect: rc -110 (no route)");
  const throwing = new ScriptedRunner(() => {
    throw new Error("ssh went away");
  });
  t.equal((await runStepwise(throwing, c)).error, "ssh went away");
});

t.test("owed completions per CQ", async (t) => {
  const mk = (seq: number, f: Record<string, unknown>) => traceRecordSchema.parse({ seq, ns: seq, ...f });
  const records = [
    mk(0, { ...QP, scq: "scq", rcq: "rcq" }),
    mk(1, { ev: "post", call: 1, qp: "qp", queue: "rq", op: "recv", wr_id: 1, count: 2, index: 0, len: 8 }),
    mk(2, { ev: "post_ret", call: 1, rc: 0, bad: null }),
    mk(3, {
      ev: "post",
      call: 2,
      qp: "qp",
      queue: "sq",
      op: "send",
      wr_id: 9,
      count: 2,
      index: 0,
      len: 8,
      signal: "none",
    }),
    mk(4, { ev: "post_ret", call: 2, rc: 0, bad: null }),
  ];
  t.same([...owedCompletions(records)], [], "nothing is owed while the QP is not in ERR");
  const inErr = [
    ...records,
    mk(5, { ev: "modify", call: 3, qp: "qp", state: "ERR" }),
    mk(6, { ev: "modify_ret", call: 3, rc: 0 }),
  ];
  t.same(
    [...owedCompletions(inErr)],
    [["rcq", 2]],
    "receives are owed; unsignaled sends from before may have run",
  );
  t.same(settleCommands(inErr, ["scq", "rcq"], 500), [
    "poll cq=scq min=0 timeout=0",
    "poll cq=rcq min=2 timeout=500",
  ]);
});

/** A kernel-executor run of one boot, as `hil run` reports it. */
function oneBootReport(driver: SuiteReport["driver"], scenarios: SuiteReport["scenarios"]): SuiteReport {
  return { driver, executor: "kernel", boots: 1, timings: { bootMs: 1, runMs: 1, judgeMs: 1 }, scenarios };
}

t.test("verdict rows and the table", async (t) => {
  const report = oneBootReport("siw", [
    {
      name: "drain-a",
      file: "a.yaml",
      durationMs: 1,
      judgements: [
        {
          profile: "ib",
          verdict: "PASS",
          rules: [
            {
              rule: "9",
              title: "",
              citation: "",
              verdict: "SKIP",
              reason: "linux only",
              judged: 0,
              applies: false,
            },
          ],
        },
        {
          profile: "linux",
          verdict: "FAIL",
          rules: [
            {
              rule: "4",
              title: "",
              citation: "",
              verdict: "PASS",
              reason: "in order",
              judged: 3,
              applies: true,
            },
            {
              rule: "9",
              title: "",
              citation: "",
              verdict: "FAIL",
              reason: "did not return",
              evidence: ["stack: x"],
              judged: 1,
              applies: true,
            },
          ],
        },
      ],
    },
    {
      name: "fault-b",
      file: "b.yaml",
      durationMs: 0,
      outcome: { verdict: "SKIP", reason: "meant for erdma, not siw" },
      judgements: [{ profile: "linux", verdict: "SKIP", rules: [] }],
    },
  ]);
  const results = suiteResults(report);
  t.same(
    results.map((r) => [r.id, r.verdict, r.reason]),
    [
      ["drain-a[ib]", "PASS", "every rule holds"],
      ["drain-a[linux]", "FAIL", "rule 9: did not return"],
      ["fault-b[linux]", "SKIP", "meant for erdma, not siw"],
    ],
  );
  t.same(results[1]?.evidence, ["stack: x"]);
  const table = renderScenarioTable(results).split("\n");
  t.match(table[0], /^scenario\s+ib\s+linux\s+judged \(rule:events\)\s+reason$/);
  t.match(table[1], /^drain-a\s+PASS\s+FAIL\s+-\s+rule 9: did not return$/);
  t.match(table[2], /^fault-b\s+-\s+SKIP\s+-\s+meant for erdma, not siw$/);
  t.equal(table[3], "hil: 1 passed, 1 failed, 1 skip");
});

t.test("hil run: bad suite input is one clear error, exit 2, before anything is built", async (t) => {
  const iso = isolate();
  t.teardown(() => rmSync(iso.tmp, { recursive: true, force: true }));
  const none = await hil(["run", "--driver", "siw", "--scenario", "no-such-scenario"], iso.env);
  t.equal(none.exitCode, 2);
  t.match(none.stderr, /hil: error: .*scenarios.*: no scenario matches "no-such-scenario"/);
  const both = await hil(["run", "--driver", "siw", "--device-profile", "erdma-2022"], iso.env);
  t.equal(both.exitCode, 2);
  t.match(
    both.stderr,
    /--device-profile sets the emulated erdma device's behaviour; --driver siw attaches none/,
  );
  const oldSpelling = await hil(["run", "--driver", "siw", "--profile", "erdma-2022"], iso.env);
  t.equal(oldSpelling.exitCode, 2, "--profile is still --device-profile");
  t.match(
    oldSpelling.stderr,
    /^hil: notice: --profile is now --device-profile \(the old spelling still works\)$/m,
  );
  t.match(oldSpelling.stderr, /--driver siw attaches none/);
  const badRules = await hil(["run", "--rules", "ib,rocev2"], iso.env);
  t.equal(badRules.exitCode, 2);
  t.match(badRules.stderr, /"rocev2" is not a rule set of the oracle \(ib, iwarp-rdmac, linux\)/);
  const badOracle = await hil(["run", "--oracle", "ib,rocev2"], iso.env);
  t.equal(badOracle.exitCode, 2, "--oracle is still --rules, with its checks");
  t.match(badOracle.stderr, /"rocev2" is not a rule set of the oracle/);
  const badExecutor = await hil(["run", "--executor", "gpu"], iso.env);
  t.equal(badExecutor.exitCode, 2);
  t.match(badExecutor.stderr, /Allowed choices are kernel, user/);
  const help = await hil(["run", "--help"], iso.env);
  t.match(help.stdout, /--scenario <glob>/);
  t.match(help.stdout, /1 a check or rule FAILed; 3 the harness could not judge/);
  t.match(help.stdout, /0 every verdict PASS, SKIP, XFAIL or XPASS/);
  t.match(help.stdout, /Defaults: --kernel debian:6\.12, --driver erdma, --device-profile erdma-reflush/);
  t.notMatch(help.stdout, /--profile|--oracle/, "old spellings are not in the help");
  t.same(leftovers(iso).entries, [], "nothing left in its TMPDIR");
});

t.test(
  "a shared record that applied by pattern and described nothing in the run is an XPASS of its own",
  async (t) => {
    const bug = {
      id: "shared-bug",
      implied: true as const,
      driver: "erdma" as const,
      rules: [5],
      failure: "x",
      reference: "a/b.c:f",
      note: "n",
    };
    const scenario = (name: string, verdict: "PASS" | "XFAIL") => ({
      name,
      file: `${name}.yaml`,
      durationMs: 1,
      knownBugs: [bug],
      judgements: [
        {
          profile: "ib" as const,
          verdict,
          rules: [
            {
              rule: "5" as const,
              title: "",
              citation: "",
              verdict,
              reason: "r",
              judged: 1,
              applies: true,
              ...(verdict === "XFAIL"
                ? { knownBug: { reference: "a/b.c:f", note: "n", id: "shared-bug" } }
                : {}),
            },
          ],
        },
      ],
    });
    const report = (verdicts: ("PASS" | "XFAIL")[]): SuiteReport => ({
      driver: "erdma",
      executor: "kernel",
      scenarios: verdicts.map((v, i) => scenario(`s${i}`, v)),
      boots: 1,
      timings: { bootMs: 0, runMs: 0, judgeMs: 0 },
    });
    const stale = staleRecordResults(report(["PASS", "PASS"]));
    t.same(
      stale.map((r) => [r.id, r.verdict]),
      [["known-bug:shared-bug", "XPASS"]],
    );
    t.match(stale[0]?.reason, /applied to 2 scenario run\(s\) and described none of their failures/);
    t.same(staleRecordResults(report(["PASS", "XFAIL"])), [], "described once: not stale");
    const race = report(["PASS", "PASS"]);
    for (const s of race.scenarios) s.knownBugs = [{ ...bug, intermittent: true as const }];
    t.same(staleRecordResults(race), [], "a race not met in a run is no sign of a fix");
    const hung = report(["PASS", "PASS"]);
    for (const s of hung.scenarios)
      s.judgements[0]?.rules.push({
        rule: "hang",
        title: "",
        citation: "",
        verdict: "FAIL",
        reason: "drain (step 3) did not return within 1400 ms",
        judged: 1,
        applies: true,
      });
    t.same(staleRecordResults(hung), [], "scenarios that hung before the bug's steps are no sign of a fix");
    hung.scenarios.push(scenario("s2", "PASS"));
    t.match(
      staleRecordResults(hung)[0]?.reason,
      /applied to 1 scenario run\(s\)/,
      "the run that reached its end counts",
    );
    t.equal(exitCodeFor(suiteResults(report(["PASS", "PASS"])), { strict: true }), 1, "--strict fails on it");
    t.match(
      renderScenarioTable(suiteResults(report(["PASS", "PASS"]))),
      /\nknown-bug:shared-bug {2}XPASS {2}the record applied/,
    );
  },
);

t.test(
  "skip_on: where a scenario cannot exercise what it covers, a SKIP with the file's reason",
  async (t) => {
    const s = parseScenario(
      [
        "description: d",
        "covers: [3]",
        "skip_on:",
        "  - { driver: siw, executors: [user], why: the SQ is consumed as it is written }",
        "steps: [ { post_send: { count: 40 } } ]",
      ].join("\n"),
      "s.yaml",
    );
    t.same(planScenario(s, { driver: "siw", executor: "user" }), {
      run: false,
      verdict: "SKIP",
      reason: "not here: the SQ is consumed as it is written",
    });
    t.same(planScenario(s, { driver: "siw", executor: "kernel" }), { run: true });
    t.same(planScenario(s, { driver: "erdma", executor: "user", deviceProfile: "erdma-reflush" }), {
      run: true,
    });
  },
);

t.test("each covered rule's judged events: in the results and the table's column", async (t) => {
  const rule = (id: string, judged: number, applies = true) => ({
    rule: id,
    title: "",
    citation: "",
    verdict: judged > 0 ? ("PASS" as const) : ("SKIP" as const),
    reason: "",
    judged,
    applies,
  });
  const report: SuiteReport = {
    driver: "erdma",
    executor: "kernel",
    scenarios: [
      {
        name: "overflow",
        file: "overflow.yaml",
        covers: ["3", "5"],
        judgements: [
          { profile: "ib", verdict: "PASS", rules: [rule("3", 1), rule("5", 40), rule("4", 40)] },
          { profile: "linux", verdict: "PASS", rules: [rule("3", 2), rule("5", 0, false)] },
        ],
        durationMs: 1,
      },
    ],
    boots: 1,
    timings: { bootMs: 0, stepsMs: 0, judgeMs: 0 },
  } as unknown as SuiteReport;
  const results = suiteResults(report);
  t.same(
    results.map((r) => r.exercised),
    [
      [
        { rule: "3", judged: 1 },
        { rule: "5", judged: 40 },
      ],
      [{ rule: "3", judged: 2 }],
    ],
    "the covered rules only (rule 4 is not), a rule a profile does not apply left out",
  );
  t.match(
    renderScenarioTable(results),
    /^overflow\s+PASS\s+PASS\s+3:2 5:40\s+every rule holds$/m,
    "the most of any profile",
  );
});

t.test("an XFAIL says what made it expected: the scenario's injected fault or a known bug", async (t) => {
  const xfailRule = (extra: object) => ({
    rule: "5" as const,
    title: "",
    citation: "",
    verdict: "XFAIL" as const,
    reason: "r",
    judged: 1,
    applies: true,
    ...extra,
  });
  const scenario = (name: string, extra: object) => ({
    name,
    file: `${name}.yaml`,
    durationMs: 1,
    judgements: [{ profile: "linux" as const, verdict: "XFAIL" as const, rules: [xfailRule(extra)] }],
  });
  const report = oneBootReport("erdma", [
    scenario("fault-x", { injectedFault: true }),
    scenario("bug-y", { knownBug: { reference: "erdma_qp.c:erdma_post_recv", note: "n" } }),
  ]);
  const results = suiteResults(report);
  t.same(
    results.map((r) => [r.id, r.expectedBy]),
    [
      ["fault-x[linux]", "injected fault"],
      ["bug-y[linux]", "known bug"],
    ],
  );
  t.equal(
    renderScenarioTable(results).split("\n").at(-2),
    "hil: 0 passed, 0 failed, 2 xfail (1 injected fault, 1 known bug)",
  );
});

t.test("a runner that takes several steps at once: the same outcome in fewer round trips", async (t) => {
  const c = compileScenario(
    scenario(["steps:", "  - post_recv: { count: 3 }", "  - modify: { state: ERR }", "  - query: {}"]),
    OPTS,
  );
  const respond: ConstructorParameters<typeof ScriptedRunner>[0] = (lines, mk) =>
    connectAndPostRecv(lines, mk) ?? {};
  const one = new ScriptedRunner(respond);
  const batching = new BatchingRunner(respond);
  const stepwise = await runStepwise(one, c);
  const batched = await runStepwise(batching, c);
  t.same(batched, stepwise, "records, sent commands and stuck evidence as step by step");
  t.same(batching.calls, one.calls, "the same lines with the same timeouts, in the same order");
  t.same(
    batching.rounds.map((r) => r.length),
    [4, 2],
    "the clear, the setup and the steps in one round trip, the settle and teardown in another",
  );
  t.equal(one.calls.length + one.cleared, 7, "step by step: 7 round trips");
  t.equal(batching.cleared, 1, "the trace still cleared first");
});

t.test("a batch stops at its stuck step: that step is named, and what follows is not sent", async (t) => {
  const c = compileScenario(scenario(["steps:", "  - query: {}", "  - drain: {}", "  - query: {}"]), OPTS);
  const runner = new BatchingRunner(drainSticks);
  const out = await runStepwise(runner, c);
  t.same(out.stuck, [{ ev: "stuck", step: 1, ...STUCK_DRAIN }]);
  t.same(
    out.sent.map((x) => x.line.split(" ")[0]),
    [...c.setup.map((l) => l.split(" ")[0]), "query", "drain"],
    "the last query never ran, so it was never sent",
  );
  t.equal(runner.rounds.length, 1, "no settle, no teardown after a stuck step");
});

t.test("in a batch, a failed setup stops it: no step runs, and the setup failure is the error", async (t) => {
  const c = compileScenario(scenario(["steps:", "  - post_recv: { count: 3 }", "  - drain: {}"]), OPTS);
  const runner = new BatchingRunner((lines, mk) =>
    lines[0]?.startsWith("device")
      ? { records: [mk({ ev: "done", id: 6, op: "connect", rc: -110, us: 5, err: "no route" })] }
      : {},
  );
  const out = await runStepwise(runner, c);
  t.equal(out.error, "setup failed: connect: rc -110 (no route)");
  t.same(
    runner.calls.map((x) => x.lines),
    [c.setup],
    "only the setup ran",
  );
  t.notOk(
    out.sent.some((x) => x.phase === "step"),
    "no step counted as sent",
  );
});

t.test("a failed step is not a failed setup: the batch goes on and the run is judged", async (t) => {
  const c = compileScenario(scenario(["steps:", "  - post_recv: { count: 3 }", "  - query: {}"]), OPTS);
  const runner = new BatchingRunner((lines, mk) =>
    lines[0]?.startsWith("post_recv")
      ? { records: [mk({ ev: "done", id: 9, op: "post_recv", rc: -12, us: 1 })] }
      : {},
  );
  const out = await runStepwise(runner, c);
  t.equal(out.error, undefined);
  t.same(runner.rounds[0]?.length, 3, "setup and both steps in the first round trip");
});

t.test(
  "the console barrier goes out with the teardown: one round trip fewer, its mark judged as sent",
  async (t) => {
    const c = compileScenario(scenario(["steps:", "  - post_recv: { count: 3 }", "  - query: {}"]), OPTS);
    let markId = 0;
    const respond =
      (rc: number): ConstructorParameters<typeof ScriptedRunner>[0] =>
      (lines, mk) => {
        const line = lines[0] ?? "";
        if (line.startsWith("mark")) {
          markId++;
          return {
            records: [
              mk({ ev: "cmd", id: 90 + markId, line }),
              mk({ ev: "done", id: 90 + markId, op: "mark", rc, us: 1 }),
            ],
          };
        }
        return connectAndPostRecv(lines, mk) ?? {};
      };
    const batching = new BatchingRunner(respond(0));
    const out = await runStepwise(batching, c, { barrier: 7 });
    t.same(
      batching.rounds.map((r) => r.length),
      [3, 3],
      "setup and steps; then settle, teardown and the mark",
    );
    t.same(batching.rounds[1]?.[2], ["mark id=7"]);
    t.equal(out.barrier, true, "the mark was written");
    t.same(out.sent.at(-1), { line: "mark id=7", phase: "barrier" }, "the mark is a sent command");
    // the commands rule over a trace that shows each sent command running
    let seq = 0;
    const ran = (rcOf: (line: string) => number) =>
      out.sent.flatMap((s, id) => [
        traceRecordSchema.parse({ seq: seq++, ns: seq, ev: "cmd", id, line: s.line }),
        traceRecordSchema.parse({
          seq: seq++,
          ns: seq,
          ev: "done",
          id,
          op: s.line.split(" ")[0],
          rc: rcOf(s.line),
          us: 1,
        }),
      ]);
    const commandsRule = (records: TraceRecord[], sent = out.sent) =>
      judgeTrace({ records, observations: [], commands: sent }, ["linux"])[0]?.rules.find(
        (r) => r.rule === "commands",
      );
    t.equal(
      commandsRule(ran(() => 0))?.verdict,
      "PASS",
      "the mark in the trace is one the executor was sent",
    );
    t.equal(
      commandsRule(ran((l) => (l.startsWith("mark") ? -5 : 0)))?.verdict,
      "PASS",
      "a failed mark is the console rule's (console-cut), not a failed command",
    );
    t.match(
      commandsRule(
        ran(() => 0),
        out.sent.slice(0, -1),
      )?.reason,
      /not sent/,
      "a mark nobody sent would be",
    );

    const failing = await runStepwise(new BatchingRunner(respond(-5)), c, { barrier: 8 });
    t.equal(failing.barrier, false, "a mark that failed is not claimed as written");
    const unasked = await runStepwise(new BatchingRunner(respond(0)), c);
    t.equal(unasked.barrier, undefined, "no barrier asked, none sent");
    t.notOk(
      unasked.sent.some((s) => s.phase === "barrier"),
      "and nothing of it in the sent commands",
    );
  },
);
