// A job from hil lava-job run by the real lava-run (Debian's lava-dispatcher, not --validate) on
// this machine, through hil lava-run: LAVA's qemu device type with hil's QEMU and the emulated
// erdma (its server started by hil around lava-run), the images deployed to tmpfs, LAVA's overlay
// added to the ramdisk, the guest booted to its console shell and the job's test definition run
// by lava-test-shell. Its log, judged as hil judge judges a lab's, gives the verdicts hil run
// gives on the same kernel and scenarios (a fault scenario is a SKIP in a LAVA job). A job that
// does not boot is one clear error; lava-run missing is one clear error; nothing is left behind.
// Needs `hil setup --lava` (CI's .ci/run calls it); without lava-run this test fails, it never
// skips. Wall time here (TCG, 2 cores, warm caches, a busy machine): 76-98 s, hil lava-run 47-49 s
// of it (LAVA's deploy 5 s, boot 9 s, test shell 24 s), hil run 15 s.
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { findLavaRun } from "../../harness/lava/dispatcher.ts";
import { LAVA_LOG_COPY } from "../../harness/lava/judge-log.ts";
import { LAVA_JOB_FILE, LAVA_KERNEL_FILE } from "../../harness/lava/make-job.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import {
  assertRunnerVerdictsEqual,
  cellVerdicts,
  loadVerdicts,
  RUNNER_FAULTY,
  RUNNER_SCENARIOS,
} from "../support/verdicts.ts";

t.setTimeout(40 * 60 * 1000);

const LAVA_TMP = "/var/lib/lava/dispatcher/tmp";
const ours = () =>
  existsSync(LAVA_TMP) ? readdirSync(LAVA_TMP).filter((n) => n.startsWith("hil-lava-run-")) : [];

if (!findLavaRun()) {
  t.fail("lava-run is not installed: hil setup --lava installs it (Debian's lava-dispatcher)");
} else {
  t.test("a real lava-run of hil lava-job's job gives hil run's verdicts", async (t) => {
    const dir = t.testdir({});
    const jobDir = join(dir, "job");
    const lavaBefore = ours();
    /** hil lava-run left none of its job dirs in LAVA's tmp (those there before the test aside) */
    const nothingNewInLavaTmp = (t: Test) =>
      t.same(
        ours().filter((n) => !lavaBefore.includes(n)),
        [],
        `nothing left in ${LAVA_TMP}`,
      );
    const made = await hil(["lava-job", "--out-dir", jobDir, "--scenario", RUNNER_SCENARIOS.join(",")]);
    t.equal(made.exitCode, 0, `hil lava-job: ${made.stderr.slice(-2000)}`);

    const iso = isolate();
    const started = Date.now();
    const ran = await hil(["lava-run", jobDir, "--run-dir", join(dir, "lava"), "--json"], iso.env);
    const wallMs = Date.now() - started;
    t.comment(`hil lava-run: ${Math.round(wallMs / 1000)} s`);
    t.equal(ran.exitCode, 0, `hil lava-run: ${ran.stderr.slice(-3000)}`);
    const record = JSON.parse(ran.stdout);
    t.equal(record.lava?.result, "pass", "LAVA's result of the job");
    t.equal(record.lava?.complete, true, "the runner printed its last line");
    t.equal(record.lava?.deviceProfile, "erdma-reflush");

    const log = readFileSync(join(dir, "lava", LAVA_LOG_COPY), "utf8");
    const boot = /"Boot command: ([^"]*)"/.exec(log)?.[1] ?? "";
    t.ok(
      boot.startsWith(`${(await ensureQemu()).binary} `),
      `lava-run started hil's QEMU: ${boot.slice(0, 200)}`,
    );
    t.match(boot, /-accel tcg/, "no KVM");
    t.match(boot, /vfio-user-pci/, "the emulated erdma attached");
    t.match(log, /"case": "test-overlay"/, "LAVA built its test overlay");
    t.match(log, /Modifying '[^']*ramdisk/, "and added it to the ramdisk (AppendOverlays)");
    t.match(log, /"msg": "HIL-LAVA done"/, "lava-test-shell ran the runner to its end");
    for (const name of RUNNER_SCENARIOS.filter((n) => n !== RUNNER_FAULTY))
      t.match(
        log,
        new RegExp(`"case": "${name}", "definition": "0_[^"]*", [^\\n]*"result": "pass"`),
        `lava-test-case ${name}`,
      );

    const run = await hil(["run", "--scenario", RUNNER_SCENARIOS.join(","), "--run-dir", join(dir, "run")]);
    t.equal(run.exitCode, 0, `hil run: ${run.stderr.slice(-2000)}`);
    assertRunnerVerdictsEqual(t, join(dir, "lava"), join(dir, "run"));
    t.equal(loadVerdicts(join(dir, "lava")).kernel, loadVerdicts(join(dir, "run")).kernel, "the same kernel");

    const judged = await hil([
      "judge",
      join(dir, "lava", LAVA_LOG_COPY),
      "--plan",
      join(jobDir, "lava-plan.json"),
      "--run-dir",
      join(dir, "judged"),
    ]);
    t.equal(judged.exitCode, 0, `hil judge of the kept log: ${judged.stdout}${judged.stderr}`);
    t.same(
      cellVerdicts(join(dir, "judged")),
      cellVerdicts(join(dir, "lava")),
      "hil judge reads the kept log to the same verdicts",
    );

    t.same(leftovers(iso), { processes: [], entries: [] }, "no QEMU, device server or temp dir left");
    nothingNewInLavaTmp(t);

    t.test("a job that does not boot: one error with LAVA's reason and the console's end", async (t) => {
      const bad = join(dir, "bad");
      cpSync(jobDir, bad, { recursive: true });
      writeFileSync(join(bad, LAVA_KERNEL_FILE), "not a kernel\n".repeat(1000));
      const job = readFileSync(join(bad, LAVA_JOB_FILE), "utf8");
      writeFileSync(join(bad, LAVA_JOB_FILE), job.replaceAll(`file://${jobDir}/`, `file://${bad}/`));
      const iso = isolate();
      const r = await hil(["lava-run", bad, "--run-dir", join(dir, "bad-run")], iso.env);
      t.equal(r.exitCode, 3, r.stderr);
      t.match(
        r.stderr,
        /job\.yaml: the LAVA job did not reach hil's runner: Infrastructure error: Connection closed/,
      );
      t.match(r.stderr, /the device's console .* ended with:\nqemu/, "QEMU's own complaint is shown");
      t.equal(r.stderr.match(/hil: error/g)?.length, 1, "one error");
      t.notOk(existsSync(join(dir, "bad-run", "verdicts.json")), "no verdicts");
      t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
      nothingNewInLavaTmp(t);
    });

    t.test("lava-run not installed: one error saying how to get it", async (t) => {
      // a PATH with what the launcher needs and no lava-run
      const bin = join(dir, "bin");
      mkdirSync(bin);
      for (const tool of ["node", "dirname", "readlink"])
        symlinkSync(tool === "node" ? process.execPath : `/usr/bin/${tool}`, join(bin, tool));
      const r = await hil(["lava-run", jobDir, "--run-dir", join(dir, "none")], { PATH: bin });
      t.equal(r.exitCode, 2, r.stderr);
      t.match(r.stderr, /lava-run is not installed: hil setup --lava installs it/);
    });
  });
}
