// The shipped GitLab pipeline (fixtures/pipelines/gitlab-ci.yml) run as GitLab would run it, by
// gitlab-ci-local with the shell executor: a copy of this working tree as the project, the tiny
// plan as HIL_PLAN, two shard jobs (parallel: 2) whose directories reach the merge job only as
// artifacts (--shell-isolation: every job in its own copy), and the merge job's reports. The
// merged verdicts must equal an unsharded `hil matrix` of the same plan, rule for rule. A plan with
// a FAIL (the planted bug of hil bisect's series) turns the pipeline red in the merge job, after it
// wrote its reports.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { execa } from "execa";
import t from "tap";
import { hil, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";
import { junitparserRead } from "../support/junitparser.ts";
import { matrixVerdicts } from "../support/matrix-verdicts.ts";

t.setTimeout(20 * 60 * 1000);

const GITLAB_CI_LOCAL = join(REPO_ROOT, "node_modules/.bin/gitlab-ci-local");
const PLAN = "fixtures/plans/tiny.yaml";

/** The working tree's files (tracked, and new ones not ignored) copied into a fresh git repository. */
async function projectCopy(to: string, extraFiles: Record<string, string> = {}): Promise<void> {
  const listed = await execa("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: REPO_ROOT,
  });
  for (const file of String(listed.stdout).split("\0").filter(Boolean)) {
    const from = join(REPO_ROOT, file);
    if (!existsSync(from)) continue; // deleted in the working tree, not yet in the index
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(from, join(to, file));
  }
  for (const [file, text] of Object.entries(extraFiles)) writeFileSync(join(to, file), text);
  const git = (args: string[]) =>
    execa("git", ["-c", "user.name=hil-test", "-c", "user.email=hil-test@localhost", ...args], { cwd: to });
  await git(["init", "-q"]);
  await git(["add", "-A"]);
  await git(["commit", "-q", "-m", "the project as tested"]);
}

/** The pipeline run by gitlab-ci-local in a fresh copy of the project, with `plan` as HIL_PLAN. */
async function runPipeline(
  root: string,
  env: NodeJS.ProcessEnv,
  plan: string,
  extraFiles: Record<string, string> = {},
): Promise<{ project: string; bundles: string; exitCode: number | undefined; log: string }> {
  const project = join(root, "project");
  await projectCopy(project, extraFiles);
  const bundles = join(root, "bundles");
  const pipeline = await execa(
    GITLAB_CI_LOCAL,
    [
      "--file",
      "fixtures/pipelines/gitlab-ci.yml",
      "--shell-isolation",
      // one guest at a time: tap runs another test file beside this one
      "--concurrency",
      "1",
      "--variable",
      `HIL_PLAN=${plan}`,
    ],
    {
      cwd: project,
      // the jobs' own copies build their own CLI bundles: kept out of the user's cache
      env: { ...process.env, ...env, HIL_BUNDLE_CACHE: bundles },
      reject: false,
      stdin: "ignore",
      all: true,
    },
  );
  return { project, bundles, exitCode: pipeline.exitCode, log: String(pipeline.all) };
}

t.test("the GitLab pipeline: two shards and a merge equal the unsharded run", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const { project, bundles, exitCode, log } = await runPipeline(root, iso.env, PLAN);
  t.equal(exitCode, 0, log.slice(-4000));
  t.match(log, /^ PASS {2}shard: \[1\/2\]$/m, "shard 1/2 passed");
  t.match(log, /^ PASS {2}shard: \[2\/2\]$/m, "shard 2/2 passed");
  t.match(log, /^ PASS {2}merge\s*$/m, "the merge job passed");
  t.match(log, /shard 1\/2 exit status 0/);
  t.match(log, /^merge\s+imported artifacts/m, "the merge job got the shards as artifacts");
  t.match(log, /hil merge: tiny \(merged\): 2 job\(s\), 2 passed, 0 not passed/);
  t.ok(
    existsSync(bundles) && readdirSync(bundles).length > 0,
    "the jobs ran hil with this test's environment",
  );

  // the merge job's artifacts, copied back to the project as GitLab would keep them
  const merged = join(project, "merged");
  const whole = await hil(["matrix", PLAN, "--out", join(root, "whole")], iso.env);
  t.equal(whole.exitCode, 0, `${whole.stdout}${whole.stderr}`.slice(-3000));
  const a = matrixVerdicts(join(root, "whole"));
  const b = matrixVerdicts(merged);
  t.same(Object.keys(b), Object.keys(a), "the same jobs, in the plan's order");
  t.same(b, a, "the same verdicts, rule for rule");

  const junit = await junitparserRead(readFileSync(join(project, "junit.xml"), "utf8"));
  t.ok(junit.computed.tests > 0, "GitLab's test report has test cases");
  t.equal(junit.computed.failures + junit.computed.errors, 0, "and no failure in it");
  const kcidb = JSON.parse(readFileSync(join(project, "kcidb.json"), "utf8"));
  t.ok(Array.isArray(kcidb.tests) && kcidb.tests.length > 0, "the KCIDB report has tests");
  t.ok(existsSync(join(merged, "report.html")), "the HTML report is in the merged directory");
  t.match(readFileSync(join(merged, "results.ktap"), "utf8"), /^KTAP version 1\n/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("a FAIL turns the pipeline red after every report is written", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  // the planted flush-status bug of hil bisect's test series on one kernel, the base on the other
  const red = [
    "name: red",
    "kernels:",
    "  - { base: debian:6.12, series: ../series/bisect-flush-status-third.mbox }",
    "  - debian:6.12",
    "device_profiles: [erdma-reflush]",
    "executors: [kernel]",
    "scenarios: [post-send-in-error]",
    "rules: [linux]",
    "",
  ].join("\n");
  const { project, exitCode, log } = await runPipeline(root, iso.env, "fixtures/plans/red.yaml", {
    "fixtures/plans/red.yaml": red,
  });
  t.not(exitCode, 0, "gitlab-ci-local reports a failed pipeline");
  t.match(log, /^ PASS {2}shard: \[1\/2\]$/m, "a shard with a FAIL verdict still hands its directory on");
  t.match(log, /^ PASS {2}shard: \[2\/2\]$/m);
  t.match(log, /shard \d\/2 exit status 1/, "hil matrix said FAIL in one shard");
  t.match(log, /^ FAIL {2}merge\s*$/m, "the merge job fails the pipeline");
  t.match(log, /hil merge: red \(merged\): 2 job\(s\), 1 passed, 1 not passed/);
  const junit = await junitparserRead(readFileSync(join(project, "junit.xml"), "utf8"));
  t.ok(junit.computed.failures > 0, "the failed merge job's JUnit report holds the FAIL");
  t.ok(existsSync(join(project, "merged", "report.html")), "and the HTML report was written");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
