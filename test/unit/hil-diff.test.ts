// hil diff on run and matrix directories written here from records built in the test: a new FAIL
// is listed with its rule's reason and evidence and exits 1; the same verdicts print "no change"
// and exit 0; fixed, not judged (ERROR, MISS) and flaky cells (repetitions that disagree) are
// listed; matrix cells match across jobs by target and scenario, and a cell only one side has is
// said so; bad input is one exit-2 error naming the path. The real CLI is run on them, and the
// KTAP and JUnit it writes are read back by tap's parser and by junitparser.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import { stabilityOf } from "../../harness/suite/repeat.ts";
import type { Verdict } from "../../harness/verdict.ts";
import { diffJson, diffSides, diffSummary, renderDiffText } from "../../harness/workflows/diff/diff.ts";
import { loadDiffSide, recordCells } from "../../harness/workflows/diff/sides.ts";
import type { JobSpec } from "../../harness/workflows/job/job.ts";
import type { MatrixIndex } from "../../harness/workflows/matrix/matrix.ts";
import { HilError } from "../../util/errors.ts";
import { hil } from "../support/cli.ts";
import { junitparserRead } from "../support/junitparser.ts";
import { type Cell, runRecordOf } from "../support/run-records.ts";
import { parseTap } from "../support/tap-parse.ts";

const EVIDENCE = [
  "- post call 5 to qp in ERR returned -22, not 0",
  '  #31 {"ev":"post","call":5,"qp":"qp","queue":"sq","wr_id":1000}',
  '  #32 {"ev":"post_ret","call":5,"rc":-22,"bad":0}',
];

const BASE: Cell[] = [
  ["post-send-in-error", "ib", "PASS", { 1: "PASS", 5: "PASS" }],
  ["post-send-in-error", "linux", "PASS", { 1: "PASS", 5: "PASS" }],
  ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
];

/** A record of these cells, a FAIL rule carrying the evidence a real one quotes. */
function record(cells: readonly Cell[], probe: Verdict = "PASS"): RunRecord {
  const r = runRecordOf(cells, { probe, reason: (s, p, v) => `${s} under ${p}: ${v}` });
  for (const s of r.scenarios ?? [])
    for (const j of s.judgements)
      for (const rule of j.rules)
        if (rule.verdict === "FAIL") {
          rule.reason = `rule ${rule.rule}: post call 5 to qp in ERR returned -22, not 0`;
          rule.evidence = EVIDENCE;
        }
  return r;
}

function writeRun(dir: string, r: RunRecord): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "verdicts.json"), `${JSON.stringify(r, null, 2)}\n`);
  return dir;
}

/** The two runs a diff compares, written as a/ and b/ of a new test dir. */
function twoRuns(t: Test, old: RunRecord, neu: RunRecord): { root: string; a: string; b: string } {
  const root = t.testdir({});
  return { root, a: writeRun(join(root, "a"), old), b: writeRun(join(root, "b"), neu) };
}

const NEW_FAIL: Cell[] = [
  ["post-send-in-error", "ib", "FAIL", { 1: "FAIL", 5: "PASS" }],
  ["post-send-in-error", "linux", "PASS", { 1: "PASS", 5: "PASS" }],
  ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
];

t.test("a new FAIL: listed with its rule's reason and the events it quotes, exit 1", async (t) => {
  const { a, b } = twoRuns(t, record(BASE), record(NEW_FAIL));
  const r = await hil(["diff", a, b]);
  t.equal(r.exitCode, 1, r.stderr);
  t.match(
    r.stdout,
    /^post-send-in-error\s+ib\s+PASS\s+FAIL\s+NEW FAIL\s+post-send-in-error under ib: FAIL$/m,
  );
  t.match(r.stdout, /^\s+rule 1: PASS -> FAIL {2}rule 1: post call 5 to qp in ERR returned -22, not 0$/m);
  t.match(r.stdout, /^\s+#31 \{"ev":"post","call":5/m, "the event the rule quotes");
  t.match(r.stdout, /^\s+#32 \{"ev":"post_ret","call":5,"rc":-22/m);
  t.notMatch(r.stdout, /drain-qp-idle/, "an unchanged cell is not listed");
  t.match(
    r.stdout,
    /^hil diff: REGRESSION: 1 new FAIL, 0 fixed, 0 not judged, 0 changed, 0 flaky, 3 unchanged$/m,
  );
  t.equal(r.stderr, "");

  const doc = diffJson(diffSides(await loadDiffSide(a), await loadDiffSide(b))) as {
    regression: boolean;
    counts: Record<string, number>;
    deltas: Array<{ rules: unknown[] }>;
  };
  t.equal(doc.regression, true);
  t.equal(doc.counts["new-fail"], 1);
  t.same(doc.deltas[0]?.rules[0], {
    rule: "1",
    old: "PASS",
    new: "FAIL",
    reason: "rule 1: post call 5 to qp in ERR returned -22, not 0",
    evidence: EVIDENCE,
  });
});

t.test("the same verdicts: no change, exit 0", async (t) => {
  const { a, b } = twoRuns(t, record(BASE), record(BASE));
  const r = await hil(["diff", a, b]);
  t.equal(r.exitCode, 0, r.stderr);
  t.match(r.stdout, /^no change: the same 4 verdicts on both sides$/m);
  t.match(r.stdout, /^hil diff: no change \(4 verdicts compared\)$/m);
  t.notMatch(r.stdout, /NEW FAIL|FIXED|NOT JUDGED|changed/);
  const self = diffSides(await loadDiffSide(a), await loadDiffSide(a));
  t.equal(self.exitCode, 0);
  t.ok(self.noChange, "a run against itself");
  t.match(diffSummary(self), /^hil diff: no change \(4 verdicts compared\)$/);
});

t.test("fixed, not judged (ERROR, MISS) and other flips: listed, exit 0", async (t) => {
  const old = record([
    ["post-send-in-error", "ib", "FAIL", { 1: "FAIL" }],
    ["post-send-in-error", "linux", "PASS", { 1: "PASS" }],
    ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
    ["partial-post-rq-overflow", "linux", "XFAIL", { 5: "XFAIL" }],
  ]);
  const neu = record([
    ["post-send-in-error", "ib", "PASS", { 1: "PASS" }],
    ["post-send-in-error", "linux", "ERROR", { 1: "ERROR" }],
    ["drain-qp-idle", "linux", "MISS", { 9: "MISS" }],
    ["partial-post-rq-overflow", "linux", "XPASS", { 5: "XPASS" }],
  ]);
  const d = diffSides(
    { kind: "run", dir: "/old", label: "old", cells: recordCells(old), flaky: new Map() },
    { kind: "run", dir: "/new", label: "new", cells: recordCells(neu), flaky: new Map() },
  );
  t.equal(d.exitCode, 0);
  t.same(
    d.comparison.deltas.filter((x) => x.change !== "unchanged").map((x) => [x.key, x.change]),
    [
      ["post-send-in-error[ib]", "fixed"],
      ["post-send-in-error[linux]", "not-judged"],
      ["drain-qp-idle[linux]", "not-judged"],
      ["partial-post-rq-overflow[linux]", "changed"],
    ],
  );
  const text = renderDiffText(d);
  t.match(text, /^post-send-in-error\s+ib\s+FAIL\s+PASS\s+FIXED/m);
  t.match(text, /^\s+rule 1: FAIL -> PASS/m);
  t.match(text, /^post-send-in-error\s+linux\s+PASS\s+ERROR\s+NOT JUDGED/m);
  t.match(text, /^drain-qp-idle\s+linux\s+PASS\s+MISS\s+NOT JUDGED/m);
  t.match(text, /^partial-post-rq-overflow\s+linux\s+XFAIL\s+XPASS\s+changed/m);
  t.match(
    text,
    /^hil diff: no regression: 0 new FAIL, 1 fixed, 2 not judged, 1 changed, 0 flaky, 1 unchanged$/m,
  );
});

/** A run of each scenario under `--repeat n`: `<name>#<k>` per repetition, its stability as the suite records it. */
function repeatedRecord(
  reps: ReadonlyArray<[scenario: string, profile: string, verdicts: Verdict[]]>,
): RunRecord {
  const cells: Cell[] = reps.flatMap(([s, p, vs]) =>
    vs.map((v, i): Cell => [`${s}#${i + 1}`, p, v, { 1: v }]),
  );
  const r = record(cells);
  r.repeat = Math.max(...reps.map((x) => x[2].length));
  r.stability = stabilityOf(
    reps.flatMap(([scenario, profile, vs]) =>
      vs.map((verdict, i) => ({
        scenario,
        profile,
        repetition: i + 1,
        verdict,
        reason: `repetition ${i + 1}: ${verdict}`,
      })),
    ),
  );
  return r;
}

t.test("flaky from repeats: a cell whose repetitions disagree, on either side", async (t) => {
  // last night: stable; tonight: post-send-in-error fails in its 2nd repetition of 3
  const { root, a, b } = twoRuns(
    t,
    repeatedRecord([
      ["post-send-in-error", "ib", ["PASS", "PASS", "PASS"]],
      ["drain-qp-idle", "linux", ["PASS", "FAIL", "PASS"]],
    ]),
    repeatedRecord([
      ["post-send-in-error", "ib", ["PASS", "FAIL", "PASS"]],
      ["drain-qp-idle", "linux", ["PASS", "PASS", "PASS"]],
    ]),
  );
  const r = await hil(["diff", a, b]);
  t.equal(r.exitCode, 1, "a FAIL in any repetition is a new FAIL");
  t.match(
    r.stdout,
    /^post-send-in-error\s+ib\s+PASS\s+FAIL\s+NEW FAIL\s+post-send-in-error#2 under ib: FAIL \(repetition 2\)$/m,
  );
  t.match(r.stdout, /^drain-qp-idle\s+linux\s+FAIL\s+PASS\s+FIXED/m);
  t.match(r.stdout, /^flaky \(the repetitions' verdicts differ\):$/m);
  t.match(
    r.stdout,
    /^post-send-in-error \[ib\]\n {2}old: stable\n {2}new: FLAKY 1\/3 FAIL \(repetition 1: PASS; repetition 2: FAIL: repetition 2: FAIL\)$/m,
  );
  t.match(r.stdout, /^drain-qp-idle \[linux\]\n {2}old: FLAKY 1\/3 FAIL .*\n {2}new: stable$/m);
  t.match(r.stdout, /2 flaky/);

  // a repeated run against one that was not: the repetitions are one cell, nothing moved
  const plain = writeRun(join(root, "plain"), record([["post-send-in-error", "ib", "PASS", { 1: "PASS" }]]));
  const steady = writeRun(
    join(root, "steady"),
    repeatedRecord([["post-send-in-error", "ib", ["PASS", "PASS"]]]),
  );
  const same = diffSides(await loadDiffSide(plain), await loadDiffSide(steady));
  t.equal(same.exitCode, 0);
  t.equal(diffSummary(same), "hil diff: no change (2 verdicts compared)");
});

/** A matrix directory: matrix.json and a run directory per job. */
function writeMatrix(
  dir: string,
  jobs: ReadonlyArray<{ id: string; spec: JobSpec; record?: RunRecord }>,
): string {
  const index: MatrixIndex = {
    version: 1,
    plan: {
      name: "nightly",
      file: "nightly.yaml",
      hash: "h",
      jobs: jobs.map((j) => ({ id: j.id, spec: j.spec })),
    },
    shard: null,
    jobs: jobs.map((j) => ({
      id: j.id,
      spec: j.spec,
      runDir: `jobs/${j.id}`,
      exitCode: 0,
      counts: {},
      wallMs: 1,
      ...(j.record ? {} : { missing: "no shard ran it" }),
    })),
    exitCode: 0,
    wallMs: 1,
  };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "matrix.json"), JSON.stringify(index));
  for (const j of jobs) if (j.record) writeRun(join(dir, "jobs", j.id), j.record);
  return dir;
}

const spec = (kernel: string, scenarios: string, deviceProfile = "erdma-reflush"): JobSpec => ({
  kernel,
  driver: "erdma",
  executor: "kernel",
  deviceProfile,
  scenarios,
});

t.test("matrix directories: cells by target and scenario, one-sided cells said so", async (t) => {
  const root = t.testdir({});
  const a = writeMatrix(join(root, "a"), [
    // last night the 6.12 jobs were split by scenario glob ...
    {
      id: "j612-drain",
      spec: spec("debian:6.12", "drain-*"),
      record: record([["drain-qp-idle", "linux", "PASS", { 9: "PASS" }]]),
    },
    {
      id: "j612-post",
      spec: spec("debian:6.12", "post-*"),
      record: record([["post-send-in-error", "ib", "PASS", { 1: "PASS" }]]),
    },
    {
      id: "j61",
      spec: spec("debian:6.1", "*", "erdma-2022"),
      record: record([["drain-qp-idle", "linux", "FAIL", { 9: "FAIL" }]]),
    },
  ]);
  const b = writeMatrix(join(root, "b"), [
    // ... tonight one job runs them all: the same cells
    {
      id: "j612-all",
      spec: spec("debian:6.12", "*"),
      record: record([
        ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
        ["post-send-in-error", "ib", "FAIL", { 1: "FAIL" }],
      ]),
    },
    {
      id: "j72",
      spec: spec("debian:7.2", "*"),
      record: record([["drain-qp-idle", "linux", "PASS", { 9: "PASS" }]]),
    },
    { id: "j61", spec: spec("debian:6.1", "*", "erdma-2022") },
  ]);
  const d = diffSides(await loadDiffSide(a), await loadDiffSide(b));
  t.equal(d.old.kind, "matrix");
  t.equal(d.exitCode, 1);
  const changes = new Map(d.comparison.deltas.map((x) => [x.key, x.change]));
  t.equal(changes.get("debian:6.12 erdma/erdma-reflush kernel drain-qp-idle[linux]"), "unchanged");
  t.equal(changes.get("debian:6.12 erdma/erdma-reflush kernel post-send-in-error[ib]"), "new-fail");
  t.equal(
    changes.get("debian:6.1 erdma/erdma-2022 kernel drain-qp-idle[linux]"),
    "not-judged",
    "a FAIL gone with its job: not judged, not fixed",
  );
  t.equal(
    changes.get("debian:6.1 erdma/erdma-2022 kernel job *"),
    "changed",
    "the job no shard ran: a MISS cell",
  );
  t.equal(changes.get("debian:7.2 erdma/erdma-reflush kernel drain-qp-idle[linux]"), "changed");
  const text = renderDiffText(d);
  t.match(
    text,
    /^debian:6\.12 erdma\/erdma-reflush kernel post-send-in-error\s+ib\s+PASS\s+FAIL\s+NEW FAIL/m,
  );
  t.match(text, /^debian:7\.2 erdma\/erdma-reflush kernel drain-qp-idle\s+linux\s+-\s+PASS\s+changed/m);
  t.match(text, new RegExp(`^\\s+only in new \\(${b}\\)$`, "m"));
  t.match(text, new RegExp(`^\\s+only in old \\(${a}\\)$`, "m"));
  t.match(
    text,
    /^debian:6\.1 erdma\/erdma-2022 kernel job \*\s+-\s+MISS\s+changed\s+no shard ran job j61: no shard ran it$/m,
  );
});

t.test(
  "matrix: two jobs of one target that both ran a scenario: the worse verdict is the cell's",
  async (t) => {
    const root = t.testdir({});
    const drain = (v: Verdict) => record([["drain-qp-idle", "linux", v, { 9: v }]]);
    const m = writeMatrix(join(root, "m"), [
      { id: "all", spec: spec("debian:6.12", "*"), record: drain("PASS") },
      { id: "drain", spec: spec("debian:6.12", "drain-*"), record: drain("ERROR") },
      { id: "drain-qp", spec: spec("debian:6.12", "drain-qp-*"), record: drain("PASS") },
    ]);
    const side = await loadDiffSide(m);
    t.equal(
      side.cells.get("debian:6.12 erdma/erdma-reflush kernel drain-qp-idle[linux]")?.entry.verdict,
      "ERROR",
    );
  },
);

t.test("--out-dir writes every format; KTAP and JUnit read back", async (t) => {
  const { root, a, b } = twoRuns(
    t,
    record(BASE),
    record([
      ["post-send-in-error", "ib", "FAIL", { 1: "FAIL", 5: "PASS" }],
      ["post-send-in-error", "linux", "MISS", { 1: "MISS" }],
      ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
    ]),
  );
  const out = join(root, "out");
  const r = await hil(["diff", a, b, "--out-dir", out, "--format", "ktap"]);
  t.equal(r.exitCode, 1, r.stderr);
  t.same(readdirSync(out).sort(), ["diff.html", "diff.json", "diff.junit.xml", "diff.ktap", "diff.txt"]);
  t.equal(readFileSync(join(out, "diff.ktap"), "utf8"), r.stdout, "stdout is the chosen format");
  t.match(r.stderr, /^hil diff: REGRESSION: 1 new FAIL, 0 fixed, 1 not judged/m);

  const tap = await parseTap(r.stdout);
  t.equal(tap.final.count, 4, "a test per cell");
  t.equal(tap.final.fail, 1, "the new FAIL is the one not ok");
  t.equal(tap.final.skip, 1, "the cell not judged tonight");
  const failed = tap.all.find((x) => !x.ok);
  t.equal(failed?.name, "post-send-in-error [ib]");
  t.match(
    r.stdout,
    /^# rule 1: PASS -> FAIL: rule 1: post call 5 to qp in ERR returned -22, not 0\n# {3}- post call 5 .*\n# {5}#31 \{"ev":"post"/m,
  );

  const read = await junitparserRead(readFileSync(join(out, "diff.junit.xml"), "utf8"));
  const cases = read.suites[0]?.cases ?? [];
  t.equal(cases.length, 4);
  const fail = cases.find((c) => c.outcome === "failure");
  t.match(fail, { classname: "post-send-in-error", name: "ib" });
  t.match(fail?.text, /#32 \{"ev":"post_ret","call":5,"rc":-22/);
  t.equal(cases.find((c) => c.outcome === "skipped")?.name, "linux");

  const html = readFileSync(join(out, "diff.html"), "utf8");
  t.match(html, /<td class="change">NEW FAIL<\/td>/);
  t.match(
    html,
    /<pre class="evidence">- post call 5 to qp in ERR returned -22, not 0\n {2}#31 \{"ev":"post"/,
  );
  t.equal(JSON.parse(readFileSync(join(out, "diff.json"), "utf8")).counts["new-fail"], 1);
});

t.test("bad input: one exit-2 error naming the path, nothing written", async (t) => {
  const root = t.testdir({
    empty: {},
    "file.txt": "not a directory\n",
    other: { "verdicts.json": '{"version":2,"tests":[]}' },
    "other-matrix": { "matrix.json": '{"version":3,"runs":[]}' },
  });
  const good = writeRun(join(root, "good"), record(BASE));
  const matrix = writeMatrix(join(root, "matrix"), [
    { id: "j", spec: spec("debian:6.12", "*"), record: record(BASE) },
  ]);
  const cases: Array<[string, string, RegExp]> = [
    [good, join(root, "missing"), new RegExp(`^${root}/missing: does not exist`)],
    [join(root, "empty"), good, new RegExp(`^${root}/empty: neither a run directory`)],
    [good, join(root, "file.txt"), new RegExp(`^${root}/file.txt: neither a run directory`)],
    [
      good,
      join(root, "other"),
      new RegExp(`^${root}/other/verdicts.json: verdicts.json is not a hil run record`),
    ],
    [matrix, join(root, "other-matrix"), new RegExp(`^${root}/other-matrix/matrix.json: matrix.json lacks`)],
    [
      good,
      matrix,
      new RegExp(`^${matrix}: cannot compare a run directory \\(${good}\\) with a matrix directory`),
    ],
  ];
  for (const [x, y, want] of cases) {
    const err = await Promise.all([loadDiffSide(x), loadDiffSide(y)])
      .then(([p, q]) => diffSides(p, q))
      .catch((e: unknown) => e);
    t.ok(err instanceof HilError, `${x} vs ${y}: a HilError`);
    t.equal((err as HilError).exitCode, 2);
    t.match((err as HilError).format(), want);
  }
  // through the CLI: exit 2, one error line, and --out-dir not made
  const out = join(root, "out");
  const r = await hil(["diff", good, join(root, "other"), "--out-dir", out]);
  t.equal(r.exitCode, 2);
  t.match(
    r.stderr,
    new RegExp(`^hil: error: ${root}/other/verdicts.json: verdicts.json is not a hil run record\n`),
  );
  t.equal(r.stdout, "");
  t.notOk(readdirSync(root).includes("out"), "nothing written");
});
