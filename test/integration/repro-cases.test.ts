// hil repro end to end, as a user types it: the Linux 6.1 erdma drain hang on erdma-2022 hardware
// (real QEMU, the real 6.1 driver, the in-kernel executor) REPRODUCES with the hung task's stack
// quoted, exit 0, a run directory with repro.json, and nothing left running; a bad case is exit 2
// with file:line and leaves nothing behind.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import t from "tap";
import { type CliResult, hil, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";

t.setTimeout(8 * 60 * 1000);

/**
 * `hil` with the workflow commands: bin/hil once harness/cli/main.ts registers them; until then an
 * entry built from main.ts with them added (the same program, the same error handling).
 */
async function hilWorkflows(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  scratch: string,
): Promise<CliResult> {
  const main = readFileSync(join(REPO_ROOT, "harness/cli/main.ts"), "utf8");
  if (main.includes("repro-command") && main.includes("merge-command")) return hil(args, env);
  const entry = main
    .replace(
      'import("./run-command.ts"),',
      ["run", "repro", "validate", "matrix", "merge"].map((c) => `import("./${c}-command.ts"),`).join("\n"),
    )
    .replace(/(from |import\()"\.\//g, `$1"${REPO_ROOT}harness/cli/`)
    .replace(/(from |import\()"\.\.\//g, `$1"${REPO_ROOT}harness/`)
    .replace('from "commander"', `from "${REPO_ROOT}node_modules/commander/esm.mjs"`);
  const file = join(scratch, "hil-workflows.mts");
  writeFileSync(file, entry);
  const r = await execa("node", ["--import", "tsx", file, ...args], {
    reject: false,
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stripFinalNewline: false,
    timeout: 30 * 60_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

t.test("hil repro erdma-drain-hang-6.1: REPRODUCES, with the stack", async (t) => {
  const iso = isolate();
  const dir = join(t.testdir({}), "run");
  const started = Date.now();
  const r = await hilWorkflows(["repro", "erdma-drain-hang-6.1", "--run-dir", dir], iso.env, t.testdir({}));
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^case erdma-drain-hang-6\.1: Linux 6\.1 erdma on erdma-2022 hardware hangs in ib_drain_qp/m,
  );
  t.match(r.stdout, /^\[ok\] drain-qp-idle\[linux\]: FAIL \(expected FAIL\)/m);
  t.match(r.stdout, /^ {7}rule hang: FAIL \(expected FAIL\)$/m);
  t.match(
    r.stdout,
    /^ {7}evidence \/__ib_drain_sq\/: stack: \[<0>\] __ib_drain_sq\+0x/m,
    "the stuck task's stack",
  );
  t.match(
    r.stdout,
    /^hil repro: erdma-drain-hang-6\.1: REPRODUCES \(5\/5 expected verdicts seen\) in \d+s$/m,
  );
  t.match(r.stderr, /\[suite\] 2 scenario\(s\) on erdma, kernel executor/, "progress on stderr");
  const out = JSON.parse(readFileSync(join(dir, "repro.json"), "utf8"));
  t.equal(out.word, "REPRODUCES");
  t.equal(out.release.startsWith("6.1."), true, out.release);
  t.ok(out.checks.every((c: { met: boolean }) => c.met));
  const verdicts = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
  t.equal(verdicts.job.id, "erdma-drain-hang-6.1");
  t.equal(verdicts.deviceProfile, "erdma-2022");
  t.ok(verdicts.boots >= 2, "the guest was rebooted after the hang");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  t.comment(`repro wall time ${Math.round((Date.now() - started) / 1000)}s`);
});

t.test("a bad case: exit 2, file:line, nothing written", async (t) => {
  const iso = isolate();
  const root = t.testdir({
    "bad-case.yaml": [
      "bug: x",
      "reference: drivers/infiniband/core/verbs.c:__ib_drain_sq",
      "kernel: debian:6.1",
      "scenarios: [drain-qp-idle]",
      "expect:",
      "  - scenario: drain-qp-idle",
      "    verdict: HANGS",
    ].join("\n"),
  });
  const dir = join(root, "run");
  const r = await hilWorkflows(["repro", join(root, "bad-case.yaml"), "--run-dir", dir], iso.env, root);
  t.equal(r.exitCode, 2);
  t.match(r.stderr, /^hil: error: \S+bad-case\.yaml:7:5: expect\[0\]\.verdict: /m);
  t.same(leftovers(iso), { processes: [], entries: [] });
  t.notOk(existsSync(dir), "no run directory");
});
