// The shipped GitLab pipeline (fixtures/pipelines/gitlab-ci.yml) run as GitLab would run it, by
// gitlab-ci-local with the shell executor: a copy of this working tree as the project, the tiny
// plan as HIL_PLAN, two shard jobs (parallel: 2) whose directories reach the merge job only as
// artifacts (--shell-isolation: every job in its own copy), and the merge job's reports. The
// merged verdicts must equal an unsharded `hil matrix` of the same plan, rule for rule.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
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
async function projectCopy(to: string): Promise<void> {
  const listed = await execa("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: REPO_ROOT,
  });
  for (const file of String(listed.stdout).split("\0").filter(Boolean)) {
    const from = join(REPO_ROOT, file);
    if (!existsSync(from)) continue; // deleted in the working tree, not yet in the index
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(from, join(to, file));
  }
  const git = (args: string[]) =>
    execa("git", ["-c", "user.name=hil-test", "-c", "user.email=hil-test@localhost", ...args], { cwd: to });
  await git(["init", "-q"]);
  await git(["add", "-A"]);
  await git(["commit", "-q", "-m", "the project as tested"]);
}

t.test("the GitLab pipeline: two shards and a merge equal the unsharded run", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const project = join(root, "project");
  await projectCopy(project);
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
      `HIL_PLAN=${PLAN}`,
    ],
    {
      cwd: project,
      // the jobs' own copies build their own CLI bundles: kept out of the user's cache
      env: { ...process.env, ...iso.env, HIL_BUNDLE_CACHE: bundles },
      reject: false,
      stdin: "ignore",
      all: true,
    },
  );
  const log = String(pipeline.all);
  t.equal(pipeline.exitCode, 0, log.slice(-4000));
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
