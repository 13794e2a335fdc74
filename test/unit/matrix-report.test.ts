// hil report on a matrix directory made by the project's own hil matrix and hil merge (the jobs are
// run by a double writing run records as test/support/run-records.ts makes them; no guest). Before
// it, `hil report <merged> --format ktap` said "verdicts.json (written by hil run) does not exist"
// and exited 2. Now each format is one document of every job, read back by a reader of the format:
// KTAP by tap's parser, JUnit by Python's XML parser, KCIDB by the KCIDB schema, HTML through its
// links; a job no shard ran is a MISS; what is not a run or matrix directory is one clear error.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import t from "tap";
import { reportAction } from "../../harness/cli/report-command.ts";
import { validateKcidb } from "../../harness/report/kcidb-validate.ts";
import { writeRunRecord } from "../../harness/rundir/write.ts";
import type { Verdict } from "../../harness/verdict.ts";
import type { JobRecord, JobSpec } from "../../harness/workflows/job/job.ts";
import { JOBS_DIR, type MatrixIndex, runMatrix } from "../../harness/workflows/matrix/matrix.ts";
import { mergeMatrixDirs } from "../../harness/workflows/matrix/merge.ts";
import { type MatrixPlan, parsePlan } from "../../harness/workflows/matrix/plan.ts";
import { HilError } from "../../util/errors.ts";
import { hil } from "../support/cli.ts";
import { runRecordOf } from "../support/run-records.ts";
import { parseTap } from "../support/tap-parse.ts";

const PLAN = [
  "name: unit",
  "kernels: [debian:6.1, debian:6.12, { base: debian:6.12, configs: [smp] }]",
  "device_profiles: [erdma-reflush, erdma-2022]",
  "scenarios: [drain-qp-idle]",
].join("\n");

/** A job double: 6.1 on erdma-2022 hangs in the drain (rule 9 FAILs), everything else passes. */
async function fakeRun(spec: JobSpec, opts: { runDir: string }): Promise<JobRecord> {
  const v: Verdict = spec.kernel === "debian:6.1" && spec.deviceProfile === "erdma-2022" ? "FAIL" : "PASS";
  const record: JobRecord = {
    ...runRecordOf([
      ["drain-qp-idle", "ib", "PASS", { 1: "PASS", 5: "PASS" }],
      ["drain-qp-idle", "linux", v, { 5: "PASS", 9: v }],
    ]),
    // as the kernel builder describes a kernel (harness/kernel/build.ts)
    kernel: `${spec.kernel}${spec.configs ? ` + config ${spec.configs.join(", ")}` : ""}`,
    driver: spec.driver,
    executor: spec.executor,
    ...(spec.deviceProfile ? { deviceProfile: spec.deviceProfile } : {}),
    job: { spec },
  };
  await mkdir(opts.runDir, { recursive: true });
  await writeRunRecord(opts.runDir, record);
  return record;
}

async function planOf(): Promise<MatrixPlan> {
  return parsePlan(PLAN, fileURLToPath(new URL("../../fixtures/plans/unit.yaml", import.meta.url)));
}

/** The shards of the plan run and merged: all three, and shards 1 and 3 only (shard 2's jobs MISS). */
async function matrixDirs(root: string): Promise<{ merged: string; partial: string; plan: MatrixPlan }> {
  const plan = await planOf();
  for (const i of [1, 2, 3])
    await runMatrix(plan, { out: join(root, `s${i}`), shard: { index: i, count: 3 }, run: fakeRun });
  const merged = join(root, "merged");
  const partial = join(root, "partial");
  await mergeMatrixDirs([join(root, "s1"), join(root, "s2"), join(root, "s3")], merged);
  await mergeMatrixDirs([join(root, "s1"), join(root, "s3")], partial);
  return { merged, partial, plan };
}

const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const indexOf = (dir: string) => JSON.parse(readFileSync(join(dir, "matrix.json"), "utf8")) as MatrixIndex;

async function report(
  dir: string,
  format: "ktap" | "junit" | "kcidb" | "html",
  out: string,
): Promise<string> {
  await reportAction(dir, { format, out });
  return readFileSync(out, "utf8");
}

t.test("hil report on a merged matrix directory: exit 0, the matrix on stdout", async (t) => {
  const root = t.testdir({});
  const { merged } = await matrixDirs(root);
  const r = await hil(["report", merged, "--format", "ktap"]);
  t.equal(r.exitCode, 0, r.stderr);
  t.match(
    r.stdout,
    /^KTAP version 1\n# erdma-hil matrix: plan unit, merged from 3 matrix dir\(s\): 6 job\(s\)\n1\.\.6\n/,
  );
  t.match(r.stderr, /hil report: unit \(merged\): 6 job\(s\), 5 passed, 1 not passed/);
});

t.test("KTAP: a test per job, the job's own KTAP as its subtest", async (t) => {
  const root = t.testdir({});
  const { merged, partial } = await matrixDirs(root);
  const index = indexOf(merged);
  const text = await report(merged, "ktap", join(root, "m.ktap"));
  const tap = await parseTap(text);
  const top = tap.all.filter((r) => index.jobs.some((j) => j.id === r.name));
  t.same(
    top.map((r) => [r.name, r.ok]),
    index.jobs.map((j) => [j.id, j.exitCode === 0]),
    "one result a job, in the plan's order, ok as its exit status",
  );
  t.equal(tap.final.count, 6);
  t.equal(tap.final.fail, 1);
  t.ok(tap.all.length > 6 * 4, "the jobs' scenarios, rule sets and rules are nested under them");
  t.ok(
    tap.all.some((r) => r.name === "rule-9 -" && !r.ok),
    "the failing rule is in the report",
  );
  const missing = indexOf(partial).jobs.filter((j) => j.missing);
  t.equal(missing.length, 2, "shard 2 of 3 (one kernel, two jobs) was not merged");
  const ptext = await report(partial, "ktap", join(root, "p.ktap"));
  for (const j of missing)
    t.match(ptext, new RegExp(`^not ok \\d ${esc(j.id)} # ERROR MISS: no merged shard ran it$`, "m"));
  t.equal((await parseTap(ptext)).final.count, 6);
});

/** JUnit XML as Python's XML parser reads it: the root's attributes and each testsuite's. */
async function readJunit(xml: string) {
  const script = [
    "import json, sys, xml.etree.ElementTree as ET",
    "root = ET.fromstring(sys.stdin.read())",
    "print(json.dumps({'root': root.attrib, 'suites': [dict(s.attrib, cases=len(s.findall('testcase')),",
    "  failed=len(s.findall('testcase/failure')), errored=len(s.findall('testcase/error'))) for s in root.findall('testsuite')]}))",
  ].join("\n");
  const r = await execa("python3", ["-c", script], { input: xml });
  return JSON.parse(r.stdout) as {
    root: Record<string, string>;
    suites: Array<Record<string, string> & { cases: number; failed: number; errored: number }>;
  };
}

t.test("JUnit: every job's testsuites in one document, named by job, counts summed", async (t) => {
  const root = t.testdir({});
  const { merged, partial } = await matrixDirs(root);
  const index = indexOf(merged);
  const doc = await readJunit(await report(merged, "junit", join(root, "m.xml")));
  t.equal(doc.root.name, "erdma-hil matrix unit");
  t.ok(doc.suites.length >= 6);
  for (const j of index.jobs)
    t.ok(
      doc.suites.some((s) => s.name?.startsWith(`${j.id}/`)),
      `${j.id}: its testsuites are named after it`,
    );
  t.equal(new Set(doc.suites.map((s) => s.id)).size, doc.suites.length, "testsuite ids are unique");
  const sum = (k: string) => doc.suites.reduce((n, s) => n + Number(s[k]), 0);
  for (const k of ["tests", "failures", "errors", "skipped"])
    t.equal(Number(doc.root[k]), sum(k), `root ${k}`);
  t.equal(
    Number(doc.root.tests),
    doc.suites.reduce((n, s) => n + s.cases, 0),
    "tests = testcases",
  );
  t.ok(Number(doc.root.failures) >= 1, "the failing job's failure is counted");
  const p = await readJunit(await report(partial, "junit", join(root, "p.xml")));
  t.same(
    p.suites.filter((s) => s.errored > 0).map((s) => s.name),
    indexOf(partial)
      .jobs.filter((j) => j.missing)
      .map((j) => j.id),
    "a MISS testsuite for each job no shard ran, and no other error",
  );
  t.equal(Number(p.root.errors), 2);
});

t.test("KCIDB: one valid document, a kernel's checkout and build once", async (t) => {
  const root = t.testdir({});
  const { merged } = await matrixDirs(root);
  const doc = JSON.parse(await report(merged, "kcidb", join(root, "m.json"))) as {
    checkouts: Array<{ id: string }>;
    builds: Array<{ id: string; checkout_id: string }>;
    tests: Array<{ id: string; build_id: string; status: string }>;
  };
  const check = await validateKcidb(doc);
  t.same(check.errors, [], "valid KCIDB v5");
  t.equal(doc.checkouts.length, 2, "two source trees: 6.1, 6.12 (+smp is a config, not a checkout)");
  t.equal(doc.builds.length, 3, "three builds: 6.1, 6.12, 6.12 +smp");
  t.equal(new Set(doc.tests.map((x) => x.id)).size, doc.tests.length, "test ids unique");
  t.ok(
    doc.tests.every((x) => doc.builds.some((b) => b.id === x.build_id)),
    "every test's build is there",
  );
  t.ok(
    doc.builds.every((b) => doc.checkouts.some((c) => c.id === b.checkout_id)),
    "every build's checkout is there",
  );
  // as many tests as the six jobs' own reports have
  let perJob = 0;
  for (const j of indexOf(merged).jobs) {
    const one = join(root, `${j.id}.json`);
    await reportAction(join(merged, j.runDir), { format: "kcidb", out: one });
    perJob += (JSON.parse(readFileSync(one, "utf8")) as { tests: unknown[] }).tests.length;
  }
  t.equal(doc.tests.length, perJob);
  t.ok(
    doc.tests.some((x) => x.status === "FAIL"),
    "the failing job's FAIL",
  );
});

t.test("HTML: an index of the jobs linking each job's report", async (t) => {
  const root = t.testdir({});
  const { merged } = await matrixDirs(root);
  const html = await report(merged, "html", join(merged, "report.html"));
  for (const j of indexOf(merged).jobs) {
    const href = `${JOBS_DIR}/${j.id}/report.html`;
    t.ok(html.includes(`<a href="${href}">${j.id}</a>`), `${j.id} is linked`);
    t.ok(existsSync(join(merged, href)), `${j.id}'s report is written`);
    t.match(readFileSync(join(merged, href), "utf8"), /<h1>erdma-hil run<\/h1>/);
  }
  t.match(html, /<th>configs<\/th>/);
  t.match(html, /<td>smp<\/td>/, "the config axis is shown");
  t.match(html, /<tr class="fail">/);
  // --out elsewhere: the links still reach the reports
  const elsewhere = join(root, "pub", "index.html");
  const html2 = await report(merged, "html", elsewhere);
  t.match(html2, /href="\.\.\/merged\/jobs\//);
});

t.test("what is neither a run nor a matrix directory, and --screenshot on a matrix", async (t) => {
  const root = t.testdir({ empty: {} });
  const { merged } = await matrixDirs(root);
  await t.rejects(reportAction(join(root, "empty"), { format: "ktap" }), {
    message:
      /neither a run directory \(no verdicts\.json: hil run\) nor a matrix directory \(no matrix\.json: hil matrix, hil merge\)/,
  });
  await t.rejects(reportAction(merged, { format: "html", screenshot: true }), {
    message: /--screenshot draws one run's HTML report: give one job's run directory/,
  });
  const job = indexOf(merged).jobs[0]?.runDir ?? "";
  rmSync(join(merged, job, "verdicts.json"));
  const err = await reportAction(merged, { format: "junit", out: join(root, "x.xml") }).catch(
    (e: unknown) => e,
  );
  t.ok(err instanceof HilError);
  t.match((err as HilError).format(), new RegExp(`${esc(job)}: job .* of the matrix: verdicts\\.json`));
  t.notOk(existsSync(join(root, "x.xml")), "no report written");
});
