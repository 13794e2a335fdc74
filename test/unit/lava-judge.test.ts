// A LAVA job's runner output read back as the suite reads its batches: the groups that ran, the
// commands sent, the stuck step with its stack, the kernel log; what cannot be read is a MISS.
import t from "tap";
import { judgeLavaResults, runFromOutput } from "../../harness/lava/judge.ts";
import { buildLavaPlan } from "../../harness/lava/plan.ts";
import type { LavaResults } from "../../harness/lava/results.ts";
import { selectScenarios } from "../../harness/scenario/select.ts";

const MARK = "@@hil-kverbs-trace";
const KERNEL = { describe: "debian:6.12", release: "6.12.95", base: "debian:6.12" };

function status(idle: boolean, busy?: { op: string; ms: number }): string {
  return JSON.stringify({
    version: 1,
    pid: 77,
    idle,
    queued: 0,
    last_done: 3,
    busy: busy ? { id: 9, ...busy } : null,
    failed: 0,
    trace_bytes: 0,
    dropped: 0,
    release: "6.12.95",
  });
}

const plan = async () =>
  buildLavaPlan(await selectScenarios("drain-twice"), { hil: "0", kernel: KERNEL, driver: "erdma" });

t.test(
  "a step stuck in the first batch: its index, op, stack and state; nothing after it sent",
  async (t) => {
    const p = await plan();
    const planned = p.scenarios[0];
    if (!planned) throw new Error("no planned scenario");
    const groups = planned.batches[0];
    t.ok(groups.length >= 3, "setup and at least two steps");
    // the setup and the first step finish, the second step does not
    const a = ["", MARK, status(true), status(true), status(false, { op: "drain", ms: 8000 }), MARK, ""].join(
      "\n",
    );
    const run = runFromOutput(planned, {
      name: planned.name,
      a,
      aRc: 0,
      stack: ["[<0>] __ib_drain_sq+0xea/0x110 [ib_core]", "[<0>] kv_worker+0xdd/0x11f [hil_kverbs]"],
      state: "D (disk sleep)",
      dmesg: "[   9.1] sysrq: Show Blocked State\n",
    });
    const stuck = run.observations.find((o) => o.ev === "stuck");
    t.match(stuck, {
      ev: "stuck",
      step: groups[2]?.index,
      op: "drain",
      ms: 8000,
      state: "D (disk sleep)",
      stack: /__ib_drain_sq[\s\S]*kv_worker/,
    });
    t.same(
      run.sent,
      groups.slice(0, 3).flatMap((g) => g.sent),
      "the commands of the groups that ran, and no settle or teardown",
    );
    t.equal(run.error, undefined, "a stuck step is judged (the hang rule), not an error");
  },
);

t.test("a setup the module refused is the scenario's error", async (t) => {
  const p = await plan();
  const planned = p.scenarios[0];
  if (!planned) throw new Error("no planned scenario");
  const run = runFromOutput(planned, { name: planned.name, a: `\n${MARK}\n`, aRc: 1, stack: [], dmesg: "" });
  t.match(run.error, /hil_kverbs refused a command/);
});

t.test("scenarios the log does not hold, or holds damaged, are MISSes saying why", async (t) => {
  const p = await plan();
  const name = p.scenarios[0]?.name ?? "";
  const results = (over: Partial<LavaResults>): LavaResults => ({
    digest: p.digest,
    scenarios: new Map(),
    notRun: new Map(),
    done: false,
    ...over,
  });
  const missing = judgeLavaResults(p, results({})).report.scenarios.find((s) => s.name === name);
  t.match(missing?.outcome, { verdict: "MISS", reason: /holds no output of it/ });
  const skipped = judgeLavaResults(p, results({ done: true })).report.scenarios.find((s) => s.name === name);
  t.match(skipped?.outcome, { verdict: "MISS", reason: /runner finished without running it/ });
  const notRun = judgeLavaResults(
    p,
    results({ notRun: new Map([[name, "scenario x left the executor stuck"]]) }),
  );
  t.match(notRun.report.scenarios[0]?.outcome, {
    verdict: "MISS",
    reason: /did not run it: scenario x left/,
  });
  const damaged = judgeLavaResults(
    p,
    results({
      scenarios: new Map([
        [name, { name, a: "", stack: [], dmesg: "", damaged: "the log does not hold it" }],
      ]),
    }),
  );
  t.match(damaged.report.scenarios[0]?.outcome, { verdict: "MISS", reason: /cannot be judged for it/ });
  t.same(
    damaged.report.scenarios[0]?.judgements.map((j) => j.verdict),
    p.scenarios[0]?.profiles.map(() => "MISS"),
  );
});

t.test(
  "a run cut off (a target's SSH connection lost): what it cut off is an ERROR naming why",
  async (t) => {
    const p = await plan();
    const name = p.scenarios[0]?.name ?? "";
    const base: LavaResults = { digest: p.digest, scenarios: new Map(), notRun: new Map(), done: false };
    const why = "the SSH connection to ssh://root@h was lost during the run (read ECONNRESET)";
    const missing = judgeLavaResults(p, base, { interrupted: why }).report.scenarios[0];
    t.match(missing?.outcome, { verdict: "ERROR", reason: `not run: ${why}` });
    t.same(
      missing?.judgements.map((j) => j.verdict),
      p.scenarios[0]?.profiles.map(() => "ERROR"),
    );
    const cut = judgeLavaResults(
      p,
      {
        ...base,
        scenarios: new Map([
          [name, { name, a: "", stack: [], dmesg: "", damaged: "its output stops early" }],
        ]),
      },
      { interrupted: why },
    ).report.scenarios[0];
    t.match(cut?.outcome, {
      verdict: "ERROR",
      reason: /^cut off: the SSH connection .* \(its output stops early\)$/,
    });
    const stuckBefore = judgeLavaResults(
      p,
      { ...base, notRun: new Map([[name, "scenario x left the executor stuck before it"]]) },
      { interrupted: why },
    ).report.scenarios[0];
    t.match(
      stuckBefore?.outcome,
      { verdict: "MISS", reason: /left the executor stuck/ },
      "a reason the runner gave stands",
    );
  },
);
