// hil merge on matrix directories written by runMatrix with a job double (no guest): the shards of
// a plan merged equal the unsharded run, verdict for verdict, job for job; a missing shard is a
// MISS; overlapping shards, shards of another plan or another shard count, and a busy output
// directory are refused with the directories named, leaving nothing behind.
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { verdictMap } from "../../harness/rundir/verdict-list.ts";
import type { Verdict } from "../../harness/verdict.ts";
import type { JobRecord, JobSpec } from "../../harness/workflows/job/job.ts";
import {
  JOBS_DIR,
  MATRIX_FILE,
  type MatrixIndex,
  matrixSummary,
  runMatrix,
} from "../../harness/workflows/matrix/matrix.ts";
import { mergeIndexes, mergeMatrixDirs, readIndex } from "../../harness/workflows/matrix/merge.ts";
import { type MatrixPlan, parsePlan } from "../../harness/workflows/matrix/plan.ts";
import { shardJobs } from "../../harness/workflows/matrix/shards.ts";
import { HilError } from "../../util/errors.ts";

const PLAN_TEXT = [
  "name: unit",
  "kernels: [debian:6.1, debian:6.12]",
  "device_profiles: [erdma-reflush, erdma-2022]",
  "scenarios: [drain-qp-idle, post-send-in-error]",
].join("\n");

/** A deterministic job double: 6.1 on erdma-2022 hangs, everything else passes. */
async function fakeRun(spec: JobSpec, opts: { runDir: string }): Promise<JobRecord> {
  const verdict: Verdict =
    spec.kernel === "debian:6.1" && spec.deviceProfile === "erdma-2022" ? "FAIL" : "PASS";
  const record: JobRecord = {
    kernel: spec.kernel,
    scenarios: [
      {
        name: spec.scenarios,
        file: `${spec.scenarios}.yaml`,
        durationMs: 1,
        judgements: [
          {
            profile: "linux",
            verdict,
            rules: [
              {
                rule: "9",
                title: "-",
                citation: "-",
                verdict,
                reason: verdict === "FAIL" ? "did not return" : "ok",
              },
            ],
          },
        ],
      },
    ],
    results: [{ id: `${spec.scenarios}[linux]`, title: spec.scenarios, verdict, reason: "-" }],
    job: { spec },
  };
  await mkdir(opts.runDir, { recursive: true });
  await writeFile(join(opts.runDir, "verdicts.json"), JSON.stringify(record));
  await writeFile(join(opts.runDir, "console.log"), `booted ${spec.kernel}\n`);
  return record;
}

async function planOf(text = PLAN_TEXT): Promise<MatrixPlan> {
  return parsePlan(text, fileURLToPath(new URL("../../fixtures/plans/unit.yaml", import.meta.url)));
}

/** job id -> verdict key -> verdict, read back from a matrix directory's job run dirs. */
function verdictsOf(dir: string): Record<string, Record<string, string>> {
  const index = JSON.parse(readFileSync(join(dir, MATRIX_FILE), "utf8")) as MatrixIndex;
  const out: Record<string, Record<string, string>> = {};
  for (const j of index.jobs) {
    if (j.missing) continue;
    const record = JSON.parse(readFileSync(join(dir, j.runDir, "verdicts.json"), "utf8")) as JobRecord;
    out[j.id] = Object.fromEntries(verdictMap(record));
  }
  return out;
}

t.test("two shards merged equal the unsharded run", async (t) => {
  const plan = await planOf();
  t.equal(plan.jobs.length, 8);
  const root = t.testdir({});
  const whole = await runMatrix(plan, { out: join(root, "whole"), run: fakeRun });
  const s1 = await runMatrix(plan, { out: join(root, "s1"), shard: { index: 1, count: 2 }, run: fakeRun });
  const s2 = await runMatrix(plan, { out: join(root, "s2"), shard: { index: 2, count: 2 }, run: fakeRun });
  t.equal(s1.jobs.length + s2.jobs.length, 8);
  const merged = await mergeMatrixDirs([join(root, "s2"), join(root, "s1")], join(root, "merged"));
  t.same(
    merged.jobs.map((j) => j.id),
    whole.jobs.map((j) => j.id),
    "the plan's job order, whatever order the shards are given in",
  );
  t.same(
    merged.jobs.map((j) => [j.id, j.exitCode, j.counts]),
    whole.jobs.map((j) => [j.id, j.exitCode, j.counts]),
  );
  t.equal(merged.exitCode, whole.exitCode);
  t.equal(merged.exitCode, 1, "a FAIL in one job");
  t.same(verdictsOf(join(root, "merged")), verdictsOf(join(root, "whole")), "every verdict of every job");
  t.ok(
    existsSync(join(root, "merged", JOBS_DIR, s1.jobs[0]?.id ?? "?", "console.log")),
    "run dirs are copied",
  );
  t.same(
    merged.mergedFrom?.map((m) => m.shard),
    [
      { index: 2, count: 2 },
      { index: 1, count: 2 },
    ],
  );
  t.match(
    matrixSummary(merged),
    /^unit \(merged\): 8 job\(s\), 6 passed, 2 not passed; verdicts: 6 PASS, 2 FAIL/,
  );
  const again = await readIndex(join(root, "merged"));
  t.same(again, merged, "matrix.json is what merge returned");
});

t.test("a shard not given: its jobs are MISS", async (t) => {
  const plan = await planOf();
  const root = t.testdir({});
  await runMatrix(plan, { out: join(root, "s1"), shard: { index: 1, count: 3 }, run: fakeRun });
  await runMatrix(plan, { out: join(root, "s3"), shard: { index: 3, count: 3 }, run: fakeRun });
  const merged = await mergeMatrixDirs([join(root, "s1"), join(root, "s3")], join(root, "out"));
  const missing = merged.jobs.filter((j) => j.missing);
  t.same(
    missing.map((j) => j.id),
    shardJobs(plan.jobs, { index: 2, count: 3 }).map((j) => j.id),
  );
  t.ok(missing.every((j) => j.counts.MISS === 1 && j.exitCode === 3 && j.spec.kernel.startsWith("debian:")));
  t.equal(merged.exitCode, 3);
});

t.test("refused: overlap, another plan, another shard count, a busy output, a non-matrix dir", async (t) => {
  const plan = await planOf();
  const other = await planOf(PLAN_TEXT.replace("post-send-in-error", "post-recv-in-error"));
  const root = t.testdir({ busy: { "x.txt": "x" }, notmatrix: {} });
  await runMatrix(plan, { out: join(root, "s1"), shard: { index: 1, count: 2 }, run: fakeRun });
  await runMatrix(plan, { out: join(root, "s2"), shard: { index: 2, count: 2 }, run: fakeRun });
  await runMatrix(plan, { out: join(root, "whole"), run: fakeRun });
  await runMatrix(other, { out: join(root, "o2"), shard: { index: 2, count: 2 }, run: fakeRun });
  await runMatrix(plan, { out: join(root, "t2"), shard: { index: 2, count: 3 }, run: fakeRun });

  const fail = async (dirs: string[], out: string) => {
    const err = await mergeMatrixDirs(
      dirs.map((d) => join(root, d)),
      join(root, out),
    ).catch((e: unknown) => e);
    t.ok(err instanceof HilError, `${dirs.join("+")} refused`);
    t.notOk(existsSync(join(root, out)), "nothing written");
    return (err as HilError).format();
  };
  t.match(
    await fail(["s1", "whole"], "o1"),
    /inconsistent shards: .*\/whole is the whole plan, .*\/s1 is shard 1\/2/,
  );
  cpSync(join(root, "s1"), join(root, "s1-again"), { recursive: true });
  t.match(
    await fail(["s1", "s1-again"], "o1b"),
    /overlapping shards: job \S+ is in both .*\/s1 \(shard 1\/2\) and .*\/s1-again \(shard 1\/2\)/,
  );
  t.match(await fail(["s1", "s1"], "o2x"), /a matrix directory is given twice/);
  t.match(
    await fail(["s1", "o2"], "o3"),
    /inconsistent shards: .*\/o2 ran plan unit \([0-9a-f]{12}\), .*\/s1 ran unit/,
  );
  t.match(await fail(["s1", "t2"], "o4"), /inconsistent shards: .*\/t2 is shard 2\/3, .*\/s1 is shard 1\/2/);
  t.match(await fail(["s1", "notmatrix"], "o5"), /notmatrix: not a matrix directory \(no matrix\.json\)/);
  const busy = await mergeMatrixDirs([join(root, "s1"), join(root, "s2")], join(root, "busy")).catch(
    (e: unknown) => e,
  );
  t.match((busy as HilError).format(), /busy: the output directory exists and is not empty/);
  t.same(readdirSync(join(root, "busy")), ["x.txt"], "the busy directory is left as it was");

  // a shard whose job spec differs from the plan's (edited by hand, or another checkout)
  const s2 = await readIndex(join(root, "s2"));
  const tampered = structuredClone(s2);
  const first = tampered.jobs[0];
  if (first) first.spec = { ...first.spec, scenarios: "drain-twice" };
  t.throws(
    () =>
      mergeIndexes([
        { dir: join(root, "s1"), index: JSON.parse(readFileSync(join(root, "s1", MATRIX_FILE), "utf8")) },
        { dir: "tampered", index: tampered },
      ]),
    /inconsistent shards: job \S+ ran .*drain-twice.*the plan says/,
  );
  // a shard written by a hil that dealt round-robin (its matrix.json has no dealing) beside one dealt by kernel
  const s1 = await readIndex(join(root, "s1"));
  const { dealing: _, ...oldShard } = structuredClone(s2);
  t.equal(s1.dealing, "kernel", "a shard records how it was dealt");
  t.throws(
    () =>
      mergeIndexes([
        { dir: join(root, "s1"), index: s1 },
        { dir: "old", index: oldShard },
      ]),
    /inconsistent shards: old was dealt round-robin \(by a hil before shards were dealt by kernel\), .*\/s1 dealt by kernel/,
  );
  writeFileSync(join(root, "notmatrix", MATRIX_FILE), "{ not json");
  t.match(await fail(["s1", "notmatrix"], "o6"), /matrix\.json is not JSON/);
  t.throws(() => mergeIndexes([]), /at least one matrix directory/);
});
