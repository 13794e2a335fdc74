// The command line that reruns one scenario of a run, from what verdicts.json records: a real run
// (test/fixtures/rundir-fail) gives the exact argv; records with every option (a series, config
// fragments, a profile file and scenario file relative to the job's base directory, rule sets,
// repetitions, strict, an external device and its MAC) give each back, absolute; an old record
// without a job says what it cannot tell; quoting survives a POSIX shell.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import t from "tap";
import { commandLine, madeBy, rerunScenario, shellQuote } from "../../harness/report/rerun.ts";
import { loadRunDir, type RunDir } from "../../harness/rundir/read.ts";
import { type RunScenario, runRecordSchema } from "../../harness/rundir/schema.ts";

const FAIL_RUN = fileURLToPath(new URL("../fixtures/rundir-fail", import.meta.url));
const OLD_RUN = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));

function scenario(run: RunDir, name: string): RunScenario {
  const s = run.record.scenarios?.find((x) => x.name === name);
  if (!s) throw new Error(`no scenario ${name}`);
  return s;
}

/** The rerun's first words for a run on the default kernel, driver and executor. */
const DEFAULT_HEAD = ["run", "--kernel", "debian:6.12", "--driver", "erdma", "--executor", "kernel"];

/** The rerun of `scenario` from such a run on the erdma-reflush device profile. */
const reflushRerun = (scenario: string) => [
  ...DEFAULT_HEAD,
  "--device-profile",
  "erdma-reflush",
  "--scenario",
  scenario,
];

t.test("a real run: the exact argv per scenario, and the command that made it", async (t) => {
  const run = await loadRunDir(FAIL_RUN);
  const shipped = rerunScenario(run, scenario(run, "fault-duplicate-cqe"));
  t.same(shipped.argv, reflushRerun("fault-duplicate-cqe"));
  t.equal(
    shipped.line,
    "hil run --kernel debian:6.12 --driver erdma --executor kernel --device-profile erdma-reflush --scenario fault-duplicate-cqe",
  );
  t.same(shipped.notes, []);
  const fromFile = rerunScenario(run, scenario(run, "sq-flush-drops-oldest"));
  t.same(
    fromFile.argv,
    reflushRerun("/work/wt/html-report/fixtures/cases/scenarios/sq-flush-drops-oldest.yaml"),
  );
  const made = madeBy(run);
  t.same(made?.argv, [
    "run",
    "--scenario",
    "fault-duplicate-cqe,fault-reorder-cqe,/work/wt/html-report/fixtures/cases/scenarios/sq-flush-drops-oldest.yaml",
    "--run-dir",
    "runs/report-fail",
  ]);
  t.equal(made?.cwd, "/work/wt/html-report");
});

function record(fields: Record<string, unknown>): RunDir {
  const record = runRecordSchema.parse({
    kernel: "k",
    results: [],
    scenarios: [
      {
        name: "mine#2",
        scenario: "mine",
        repetition: 2,
        file: "scen/mine.yaml",
        judgements: [
          { profile: "ib", verdict: "FAIL", rules: [] },
          { profile: "linux", verdict: "FAIL", rules: [] },
        ],
      },
    ],
    ...fields,
  });
  return { dir: "/runs/x", record, finishedAt: new Date(0) };
}

t.test("every option the job recorded comes back, its paths absolute", async (t) => {
  const run = record({
    repeat: 3,
    strict: true,
    device: { profile: "profiles/slow.json", trace: "hw-trace.jsonl", mac: "52:54:00:aa:bb:cc" },
    job: {
      baseDir: "/home/me/plans",
      spec: {
        kernel: "../linux",
        series: "fix.mbox",
        configs: ["smp", "frag/extra.config"],
        driver: "erdma",
        executor: "user",
        deviceProfile: "profiles/slow.json",
        scenarios: "scen/*.yaml",
        oracle: ["ib", "linux"],
      },
    },
  });
  const r = rerunScenario(run, run.record.scenarios?.[0] as RunScenario);
  t.same(r.argv, [
    "run",
    "--kernel",
    "/home/me/linux",
    "--series",
    "/home/me/plans/fix.mbox",
    "--config",
    "smp",
    "--config",
    "/home/me/plans/frag/extra.config",
    "--driver",
    "erdma",
    "--executor",
    "user",
    "--device-profile",
    "/home/me/plans/profiles/slow.json",
    "--mac",
    "52:54:00:aa:bb:cc",
    "--rules",
    "ib,linux",
    "--scenario",
    "/home/me/plans/scen/mine.yaml",
    "--repeat",
    "3",
    "--strict",
  ]);
  t.same(r.notes, []);
});

t.test("an external device: its socket and MAC, no profile", async (t) => {
  const run = record({
    device: { external: "/run/rtl.sock", mac: "52:54:00:12:34:99" },
    job: {
      baseDir: "/w",
      spec: { kernel: "debian:6.1", driver: "erdma", executor: "kernel", scenarios: "mine" },
    },
  });
  const r = rerunScenario(run, run.record.scenarios?.[0] as RunScenario);
  t.same(r.argv.slice(1, 9), [
    "--kernel",
    "debian:6.1",
    "--driver",
    "erdma",
    "--executor",
    "kernel",
    "--device-socket",
    "/run/rtl.sock",
  ]);
  t.same(r.argv.slice(9, 11), ["--mac", "52:54:00:12:34:99"]);
  t.notOk(r.argv.includes("--device-profile"));
});

t.test("a run on --target: the target again, and a note on the key", async (t) => {
  const run = record({
    kernel: "debian:6.12",
    driver: "erdma",
    executor: "kernel",
    versions: { hil: "0.1.0", kernel: { spec: "debian:6.12", release: "6.12.95" } },
    target: {
      url: "ssh://root@lab-3:2222",
      host: "lab-3",
      hostKey: "SHA256:abc",
      release: "6.12.95",
      device: "erdma_0",
      driver: "erdma",
      netdev: "eth0",
      addr: "10.0.0.3",
    },
  });
  const r = rerunScenario(run, run.record.scenarios?.[0] as RunScenario);
  t.same(r.argv.slice(0, 9), [...DEFAULT_HEAD, "--target", "ssh://root@lab-3:2222"]);
  t.notOk(r.argv.includes("--device-profile"), "a target's device has no profile");
  t.ok(
    r.notes.some((n) => /--identity/.test(n)),
    "a note on the key",
  );
  t.notOk(
    r.notes.some((n) => /did not record the job/.test(n)),
    "a target run has no job spec by design",
  );
});

t.test("a repro run: the hil run line, and a note that repro judges without known-bug records", async (t) => {
  const run = record({
    invocation: { argv: ["repro", "erdma-drain-hang-6.1"], cwd: "/w" },
    job: {
      id: "erdma-drain-hang-6.1",
      baseDir: "/w/fixtures/cases",
      spec: {
        kernel: "debian:6.1",
        driver: "erdma",
        executor: "kernel",
        deviceProfile: "erdma-2022",
        scenarios: "mine",
      },
    },
  });
  const r = rerunScenario(run, run.record.scenarios?.[0] as RunScenario);
  t.equal(r.argv[0], "run");
  t.match(
    r.notes.join("\n"),
    /hil repro judges without the scenarios' known-bug records.*hil repro erdma-drain-hang-6.1/,
  );
});

t.test("a record from before the job was recorded: what it has, and what it cannot tell", async (t) => {
  const run = await loadRunDir(OLD_RUN);
  const r = rerunScenario(run, scenario(run, "drain-sq-idle"));
  t.same(r.argv, reflushRerun("drain-sq-idle"));
  t.match(r.notes.join("\n"), /did not record the job/);
  t.equal(madeBy(run), undefined, "no invocation in the record");
  const relative = record({
    job: { spec: { kernel: "../linux", driver: "erdma", executor: "kernel", scenarios: "mine" } },
  });
  const rr = rerunScenario(relative, relative.record.scenarios?.[0] as RunScenario);
  t.equal(rr.argv[2], "../linux", "kept as written");
  t.match(rr.notes.join("\n"), /the kernel \.\.\/linux is relative to the directory hil ran in/);
});

t.test("quoting: what a POSIX shell reads back is the argv", async (t) => {
  const argv = ["run", "--scenario", "drain-*,it's", "--kernel", "/a b/$HOME`x`", "--rules", "ib", ""];
  t.equal(shellQuote("debian:6.12"), "debian:6.12");
  t.equal(shellQuote("drain-*"), "'drain-*'");
  t.equal(shellQuote("it's"), `'it'\\''s'`);
  const { line } = commandLine(argv);
  const echoed = execFileSync("sh", [
    "-c",
    `set -- ${line.replace(/^hil /, "")}; for a in "$@"; do printf '%s\\0' "$a"; done`,
  ]);
  t.same(echoed.toString("utf8").split("\0").slice(0, -1), argv);
});

t.test(
  "a <repo>@<ref> kernel: rerun on the commit the run resolved, with a note that the ref may have moved",
  async (t) => {
    const commit = "0123456789abcdef0123456789abcdef01234567";
    const git = {
      repository: "/home/me/linux",
      ref: "for-next",
      commit,
      tree: "f".repeat(40),
      branch: "for-next",
    };
    const run = record({
      versions: { hil: "0.1.0", kernel: { spec: "../linux@for-next", git } },
      job: {
        baseDir: "/home/me/plans",
        spec: { kernel: "../linux@for-next", driver: "erdma", executor: "kernel", scenarios: "mine" },
      },
    });
    const r = rerunScenario(run, run.record.scenarios?.[0] as RunScenario);
    t.same(r.argv.slice(1, 3), ["--kernel", `/home/me/linux@${commit}`]);
    t.match(r.notes, [
      /the commit for-next named when the run ran; \/home\/me\/linux@for-next may name another now/,
    ]);
    const byHash = record({
      versions: { hil: "0.1.0", kernel: { spec: `/home/me/linux@${commit}`, git: { ...git, ref: commit } } },
      job: {
        baseDir: "/w",
        spec: { kernel: `/home/me/linux@${commit}`, driver: "erdma", executor: "kernel", scenarios: "mine" },
      },
    });
    t.same(
      rerunScenario(byHash, byHash.record.scenarios?.[0] as RunScenario).notes,
      [],
      "a hash needs no note",
    );
  },
);
