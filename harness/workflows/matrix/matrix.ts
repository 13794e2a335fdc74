/**
 * `hil matrix`: the jobs of a plan (or of one shard of it) run one after the other, each into
 * <out>/jobs/<id>/ (a run directory like `hil run`'s), and an index, <out>/matrix.json, that
 * names the plan (its content hash and every job id), the shard, and each job's outcome. `hil
 * merge` joins the indexes of several shards.
 */
import { join } from "node:path";
import { makeDir } from "../../../util/make-dir.ts";
import { packageVersion } from "../../../util/package.ts";
import { progress } from "../../../util/progress.ts";
import { claimRunDir } from "../../rundir/claim.ts";
import { countsText, verdictCounts } from "../../rundir/verdict-list.ts";
import { runDirFull, writeRunFile, writeRunRecord } from "../../rundir/write.ts";
import { type CheckResult, exitCodeFor, type Verdict } from "../../verdict.ts";
import { describeJob, type JobRecord, type JobSpec, runJob } from "../job/job.ts";
import type { MatrixJob, MatrixPlan, Shard } from "./plan.ts";
import { shardJobs } from "./shards.ts";

export const MATRIX_FILE = "matrix.json";
export const JOBS_DIR = "jobs";

export interface MatrixJobEntry {
  id: string;
  spec: JobSpec;
  /** relative to the matrix directory */
  runDir: string;
  kernel?: string;
  exitCode: number;
  counts: Partial<Record<Verdict, number>>;
  wallMs: number;
  /** set for a job no shard ran (hil merge) */
  missing?: string;
}

export interface MatrixIndex {
  version: 1;
  /** the whole plan's jobs (a shard runs some of them) */
  plan: { name: string; file: string; hash: string; jobs: MatrixJob[] };
  /** null: the whole plan (or a merge of shards) */
  shard: Shard | null;
  /**
   * how the plan's jobs were dealt to the shards: "kernel" (dealShards); absent in a shard written
   * before shards were dealt by kernel (round-robin over the sorted ids)
   */
  dealing?: "kernel";
  /** merged: the matrix directories it was joined from */
  mergedFrom?: { dir: string; shard: Shard | null }[];
  jobs: MatrixJobEntry[];
  exitCode: number;
  wallMs: number;
}

export function entryOf(
  id: string,
  spec: JobSpec,
  record: JobRecord,
  wallMs: number,
  strict = false,
): MatrixJobEntry {
  return {
    id,
    spec,
    runDir: `${JOBS_DIR}/${id}`,
    kernel: record.kernel,
    exitCode: exitCodeFor(record.results, { strict }),
    counts: verdictCounts(record.results),
    wallMs,
  };
}

/** The exit code of several jobs: 3 if any could not be judged, else 1 if any FAILed, else 0. */
export function matrixExitCode(jobs: readonly Pick<MatrixJobEntry, "exitCode">[]): number {
  const codes = jobs.map((j) => j.exitCode);
  if (codes.includes(3)) return 3;
  if (codes.some((c) => c !== 0)) return 1;
  return 0;
}

export async function writeIndex(dir: string, index: MatrixIndex): Promise<void> {
  await writeRunFile(dir, MATRIX_FILE, `${JSON.stringify(index, null, 2)}\n`);
}

export function jobSummary(j: MatrixJobEntry): string {
  return `${j.id}: ${j.missing ? `MISS (${j.missing})` : countsText(j.counts)}`;
}

export interface MatrixOptions {
  out: string;
  shard?: Shard;
  /** runs one job (tests give a double; default runJob) */
  run?: (spec: JobSpec, opts: { runDir: string; baseDir: string; id: string }) => Promise<JobRecord>;
}

/**
 * Runs the shard's jobs in id order and writes the index after each one, holding the output
 * directory meanwhile (refused when another matrix writes it or it holds one: rundir/claim.ts).
 */
export async function runMatrix(plan: MatrixPlan, opts: MatrixOptions): Promise<MatrixIndex> {
  const claim = await claimRunDir(opts.out, "matrix");
  try {
    return await runClaimedMatrix(plan, opts, claim.dir);
  } finally {
    await claim.release();
  }
}

async function runClaimedMatrix(plan: MatrixPlan, opts: MatrixOptions, out: string): Promise<MatrixIndex> {
  const started = Date.now();
  const jobs = shardJobs(plan.jobs, opts.shard);
  const index: MatrixIndex = {
    version: 1,
    plan: { name: plan.name, file: plan.file, hash: plan.hash, jobs: plan.jobs },
    shard: opts.shard ?? null,
    ...(opts.shard ? { dealing: "kernel" as const } : {}),
    jobs: [],
    exitCode: 0,
    wallMs: 0,
  };
  await makeDir(join(out, JOBS_DIR));
  await writeIndex(out, index);
  const run =
    opts.run ??
    ((spec: JobSpec, o: { runDir: string; baseDir: string; id: string }) =>
      runJob(spec, { ...o, kernelErrors: "record" }));
  const where = opts.shard ? ` shard ${opts.shard.index}/${opts.shard.count}` : "";
  const step = progress.step(`[matrix] ${plan.name}${where}: ${jobs.length} of ${plan.jobs.length} job(s)`);
  try {
    for (const [n, job] of jobs.entries()) {
      step.update(n, jobs.length, job.id);
      progress.info(`[matrix] job ${n + 1}/${jobs.length}: ${job.id} (${describeJob(job.spec)})`);
      const t0 = Date.now();
      let record: JobRecord;
      try {
        record = await run(job.spec, {
          runDir: join(out, JOBS_DIR, job.id),
          baseDir: plan.baseDir,
          id: job.id,
        });
      } catch (err) {
        // a full disk ends the matrix: nothing more can be recorded
        if (runDirFull(join(out, JOBS_DIR, job.id), err)) throw err;
        // bad input found only now (a scenario file changed under us): the job is an ERROR, the rest go on
        const result: CheckResult = {
          id: "job",
          title: "the job runs",
          verdict: "ERROR",
          reason: err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err),
        };
        record = {
          kernel: describeJob(job.spec),
          results: [result],
          job: { id: job.id, spec: job.spec },
          versions: { hil: packageVersion() },
        };
        // recorded only where no run is (a refusal ends the matrix rather than clobber it)
        const jobDir = await claimRunDir(join(out, JOBS_DIR, job.id));
        try {
          await writeRunRecord(jobDir.dir, record);
        } finally {
          await jobDir.release();
        }
      }
      const entry = entryOf(job.id, job.spec, record, Date.now() - t0, plan.strict);
      index.jobs.push(entry);
      index.exitCode = matrixExitCode(index.jobs);
      index.wallMs = Date.now() - started;
      await writeIndex(out, index);
      progress.info(`[matrix] ${jobSummary(entry)}`);
    }
    step.succeed(`${jobs.length} job(s)`);
  } catch (err) {
    step.fail();
    throw err;
  }
  return index;
}

/** The CI log's line: how many jobs, how they came out, the verdict counts over all of them. */
export function matrixSummary(index: MatrixIndex): string {
  const totals: Partial<Record<Verdict, number>> = {};
  for (const j of index.jobs)
    for (const [v, n] of Object.entries(j.counts))
      totals[v as Verdict] = (totals[v as Verdict] ?? 0) + (n ?? 0);
  const failed = index.jobs.filter((j) => j.exitCode !== 0).length;
  const missing = index.jobs.filter((j) => j.missing).length;
  const where = index.shard
    ? ` shard ${index.shard.index}/${index.shard.count}`
    : index.mergedFrom
      ? " (merged)"
      : "";
  return `${index.plan.name}${where}: ${index.jobs.length} job(s), ${index.jobs.length - failed} passed, ${failed} not passed${missing ? ` (${missing} missing)` : ""}; verdicts: ${countsText(totals)} in ${Math.round(index.wallMs / 1000)}s`;
}

export function renderIndex(index: MatrixIndex): string {
  const w = Math.max(3, ...index.jobs.map((j) => j.id.length));
  const lines = [`${"job".padEnd(w)}  exit  verdicts`];
  for (const j of index.jobs)
    lines.push(
      `${j.id.padEnd(w)}  ${String(j.exitCode).padEnd(4)}  ${j.missing ? `MISS: ${j.missing}` : countsText(j.counts)}`,
    );
  return `${lines.join("\n")}\n`;
}
