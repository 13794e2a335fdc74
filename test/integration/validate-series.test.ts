// hil validate end to end on Linux 6.12 and the erdma-reflush device: the immediate-error series
// (fixtures/series/erdma-fail-post-in-error.mbox) on a small scenario selection reports the new
// FAILs (the drain WARNs under linux, a post in ERROR fails under ib and linux, not under
// iwarp-rdmac) and exits 1; an empty series reports no change and exits 0. Nothing is left running.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import t from "tap";
import { type CliResult, hil, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";

t.setTimeout(12 * 60 * 1000);

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

t.test("the immediate-error series: new FAILs, exit 1", async (t) => {
  const iso = isolate();
  const dir = join(t.testdir({}), "run");
  const r = await hilWorkflows(
    [
      "validate",
      "--base",
      "debian:6.12",
      "--series",
      "fixtures/series/erdma-fail-post-in-error.mbox",
      "--scenario",
      "drain-qp-idle,post-send-in-error",
      "--run-dir",
      dir,
    ],
    iso.env,
    t.testdir({}),
  );
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^drain-qp-idle\s+linux\s+PASS\s+FAIL\s+NEW FAIL\s+rule 9: the kernel warned during a drain: WARNING: .*__ib_drain_sq/m,
  );
  t.match(
    r.stdout,
    /^post-send-in-error\s+ib\s+PASS\s+FAIL\s+NEW FAIL\s+rule 1: post call \d+ to qp in ERR returned -22, not 0/m,
  );
  t.match(r.stdout, /^post-send-in-error\s+linux\s+PASS\s+FAIL\s+NEW FAIL/m);
  t.match(r.stdout, /^post-send-in-error\s+iwarp-rdmac\s+PASS\s+PASS\s+unchanged/m, "RDMAC 6.2.4 allows it");
  t.match(r.stdout, /^\s+rule 9: PASS -> FAIL/m, "the rules that moved");
  t.match(
    r.stdout,
    /^hil validate: REGRESSION: [3-9] new FAIL, 0 fixed, 0 not judged, \d+ unchanged \(debian:6\.12 vs debian:6\.12 \+ 1 patch/m,
  );
  t.match(
    r.stderr,
    /\[validate\] 1 patch\(es\): "\[PATCH\] RDMA\/erdma: fail posts immediately once the QP is in ERROR"/,
  );
  t.match(r.stderr, /\[validate\] 2\/2 base\+series: /);
  const v = JSON.parse(readFileSync(join(dir, "validate.json"), "utf8"));
  t.equal(v.regression, true);
  t.ok(v.counts["new-fail"] >= 3);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("an empty series: no change, exit 0", async (t) => {
  const iso = isolate();
  const root = t.testdir({ "empty.mbox": "" });
  const dir = join(root, "run");
  const r = await hilWorkflows(
    [
      "validate",
      "--base",
      "debian:6.12",
      "--series",
      join(root, "empty.mbox"),
      "--scenario",
      "drain-qp-idle",
      "--run-dir",
      dir,
    ],
    iso.env,
    root,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(r.stderr, /empty\.mbox holds no patch: base\+series is the base kernel/);
  t.match(r.stdout, /^drain-qp-idle\s+linux\s+PASS\s+PASS\s+unchanged$/m);
  t.match(
    r.stdout,
    /^hil validate: no regression: 0 new FAIL, 0 fixed, 0 not judged, \d+ unchanged \(.*, empty series\)/m,
  );
  t.notMatch(r.stdout, /NEW FAIL|FIXED|NOT JUDGED|changed {2}/);
  t.same(leftovers(iso), { processes: [], entries: [] });
});

t.test("a series that does not exist: exit 2 before anything runs", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const r = await hilWorkflows(
    ["validate", "--series", join(root, "none.mbox"), "--run-dir", join(root, "run")],
    iso.env,
    root,
  );
  t.equal(r.exitCode, 2);
  t.match(r.stderr, /^hil: error: series \S+none\.mbox does not exist/m);
  t.same(leftovers(iso), { processes: [], entries: [] });
});
