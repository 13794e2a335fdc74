// hil lava-job's runner on a real guest, judged by hil judge, against hil run of the same scenarios:
// the job's kernel and ramdisk boot with the emulated erdma (erdma-reflush) as a LAVA qemu device
// would boot them, the runner runs as LAVA's test shell would run it (here over SSH, its output
// taken as the job's log), and every verdict equals hil run's; a fault scenario is a SKIP in the
// job. The log is then mangled in the ways a lab's log can be (a changed line, the end cut, another
// plan's log, no runner output) and each is judged as what it is.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { type BootedGuest, bootPrepared } from "../../harness/boot.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { validateLavaJob } from "../../harness/lava/dispatcher.ts";
import { LAVA_JOB_FILE, LAVA_RAMDISK_FILE } from "../../harness/lava/make-job.ts";
import { LAVA_PLAN_FILE } from "../../harness/lava/plan.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { hil } from "../support/cli.ts";
import {
  assertRunnerVerdictsEqual,
  cellVerdicts,
  RUNNER_FAULTY,
  RUNNER_SCENARIOS,
} from "../support/verdicts.ts";

t.setTimeout(60 * 60 * 1000);

const SCENARIOS = RUNNER_SCENARIOS;
const FAULTY = RUNNER_FAULTY;
const verdictsOf = cellVerdicts;

t.test("a LAVA job's runner on a real guest, judged like hil run", async (t) => {
  const dir = t.testdir({});
  const jobDir = join(dir, "job");
  const judge = (log: string, runDir: string) =>
    hil(["judge", log, "--plan", join(jobDir, LAVA_PLAN_FILE), "--run-dir", join(dir, runDir), "--json"]);
  const made = await hil(["lava-job", "--out-dir", jobDir, "--scenario", SCENARIOS.join(",")]);
  t.equal(made.exitCode, 0, `hil lava-job: ${made.stderr.slice(-2000)}`);
  t.match(made.stdout, /5 scenario\(s\) planned, 1 left out/);
  const plan = JSON.parse(readFileSync(join(jobDir, LAVA_PLAN_FILE), "utf8"));
  t.same(
    plan.notPlanned.map((s: { name: string; verdict: string }) => [s.name, s.verdict]),
    [[FAULTY, "SKIP"]],
  );

  const valid = await validateLavaJob(join(jobDir, LAVA_JOB_FILE));
  t.same(valid, { ok: true, errors: "" }, "the job hil lava-job wrote validates with lava-run --validate");

  const ran = await hil(["run", "--scenario", SCENARIOS.join(","), "--run-dir", join(dir, "run")]);
  t.equal(ran.exitCode, 0, `hil run: ${ran.stderr.slice(-2000)}`);

  const kernel = await buildKernel({ base: "debian:6.12", configs: [] });
  let guest: BootedGuest | undefined;
  t.teardown(() => guest?.dispose());
  guest = await bootPrepared(
    { qemu: await ensureQemu(), kernel, initrd: join(jobDir, LAVA_RAMDISK_FILE) },
    { memoryMiB: 1024, kernelArgs: ["hil.shell"], device: { profile: "erdma-reflush" } },
  );
  const r = await guest.exec("sh /hil-lava/run.sh", { timeoutMs: 15 * 60_000 });
  t.equal(r.exitCode, 0, `the runner: ${r.stderr}`);
  await new Promise((done) => setTimeout(done, 500));
  t.match(guest.consoleLog(), /hil# /, "hil.shell gives the console a shell with its prompt");
  await guest.dispose();
  guest = undefined;
  // a console's log: carriage returns, and other console lines between the runner's
  const log = join(dir, "console.log");
  writeFileSync(
    log,
    r.stdout
      .split("\n")
      .map((l, i) => (i % 7 === 3 ? `[ 12.3] other console line\r\n${l}\r` : `${l}\r`))
      .join("\n"),
  );

  const judged = await judge(log, "judged");
  t.equal(judged.exitCode, 0, `hil judge: ${judged.stdout}${judged.stderr}`);
  assertRunnerVerdictsEqual(t, join(dir, "judged"), join(dir, "run"));
  for (const format of ["ktap", "junit", "kcidb", "html"]) {
    const out = join(dir, `report.${format}`);
    const rep = await hil(["report", join(dir, "judged"), "--format", format, "--out", out]);
    t.equal(rep.exitCode, 0, `hil report --format ${format} of the judged run: ${rep.stderr.slice(-1500)}`);
  }
  t.match(readFileSync(join(dir, "report.ktap"), "utf8"), /drain-sq-full/, "the report names the scenarios");

  t.test("a log line changed on the way: that scenario is a MISS, the others judged", async (t) => {
    const text = readFileSync(log, "utf8");
    const bad = text.replace(/("ev":"done"[^\n]*"rc":)0/, "$19");
    t.not(bad, text, "a trace line was changed");
    const file = join(dir, "changed.log");
    writeFileSync(file, bad);
    const out = await judge(file, "changed");
    t.equal(out.exitCode, 3, out.stderr);
    const misses = [...verdictsOf(join(dir, "changed"))].filter(([, v]) => v === "MISS");
    t.ok(misses.length > 0, "the changed scenario is a MISS");
    t.match(out.stdout, /digest differs/);
  });

  t.test("a log cut short: the scenarios after the cut are MISSes that say so", async (t) => {
    const text = readFileSync(log, "utf8");
    const file = join(dir, "cut.log");
    writeFileSync(file, text.slice(0, text.indexOf("HIL-LAVA begin shared-cq-two-qps") + 40));
    const out = await judge(file, "cut");
    t.equal(out.exitCode, 3);
    t.equal(verdictsOf(join(dir, "cut")).get("shared-cq-two-qps[ib]"), "MISS");
    t.match(out.stdout, /stops before the runner's end line|holds no output of it/);
  });

  t.test("a log of another plan, or without the runner, is bad input", async (t) => {
    const other = join(dir, "other.log");
    writeFileSync(
      other,
      readFileSync(log, "utf8").replace(/HIL-LAVA plan [0-9a-f]+/, "HIL-LAVA plan 0123456789abcdef"),
    );
    const a = await judge(other, "other");
    t.equal(a.exitCode, 2);
    t.match(a.stderr, /made by another plan/);
    const none = join(dir, "none.log");
    writeFileSync(none, "Linux version 6.12\nlogin:\n");
    const b = await judge(none, "none");
    t.equal(b.exitCode, 2);
    t.match(b.stderr, /no output of hil's LAVA runner/);
  });
});
