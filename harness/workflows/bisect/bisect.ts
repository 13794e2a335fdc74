/**
 * hil bisect: which patch of a series first makes a scenario FAIL. The base with no patch is the
 * good end, the whole series the bad end; each step runs the scenarios on the base with the series'
 * first k patches (a patched kernel built from the base's cached build: only what the patches
 * change is rebuilt). A step with an ERROR or MISS and no FAIL cannot be judged and is skipped, as
 * `git bisect skip` does: the next step tries the nearest untested prefix.
 */
import { existsSync, readdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { HilError } from "../../../util/errors.ts";
import { makeDir } from "../../../util/make-dir.ts";
import { progress } from "../../../util/progress.ts";
import { describePatch, loadSeries, type Patch, type Series } from "../../kernel/series.ts";
import { countsText, verdictCounts } from "../../rundir/verdict-list.ts";
import { writeRunFile } from "../../rundir/write.ts";
import { withDriverFragment } from "../../scenario/drivers.ts";
import type { CheckResult } from "../../verdict.ts";
import {
  checkJobSpec,
  describeJob,
  type JobRecord,
  type JobSpec,
  kernelRequestOf,
  preparedGuestFor,
  runJob,
} from "../job/job.ts";
import { type GitRange, writeRangeSeries } from "./git.ts";

export type StepWord = "good" | "bad" | "skip";

export interface BisectStep {
  /** how many of the series' patches the kernel had (0: the base) */
  patches: number;
  word: StepWord;
  /** the run directory, relative to the bisection's */
  runDir: string;
  counts: string;
  /** the FAILs (or, for a skip, the ERRORs and MISSes), "<id>: <reason>" */
  why: string[];
  wallMs: number;
}

export interface PatchInfo {
  index: number;
  subject: string;
  source: string;
  /** the commit the patch is, when the series is a git range */
  commit?: string;
}

export interface BisectResult {
  series: {
    path: string;
    patches: PatchInfo[];
    /** the git range the series was made of */
    range?: { repo: string; good: { ref: string; sha: string }; bad: { ref: string; sha: string } };
  };
  spec: JobSpec;
  steps: BisectStep[];
  /** the first patch whose prefix FAILs, when the bisection found one */
  culprit?: PatchInfo & { runDir: string };
  /** why there is no culprit */
  inconclusive?: string;
  /** steps between the two ends (the ends' own runs not counted) */
  searchSteps: number;
  wallMs: number;
  exitCode: number;
}

export interface BisectOptions {
  /** the job without a series: the base kernel, driver, executor, profile and scenarios */
  spec: JobSpec;
  /** an mbox or a directory of patches, or a git range (each commit a patch) */
  series: string | GitRange;
  runDir: string;
  /** each step runs the scenarios this many times (a flaky scenario: one FAIL makes the step bad) */
  repeat?: number;
}

export const BISECT_FILE = "bisect.json";

/** A step's word from its verdicts: any FAIL is bad; else any ERROR or MISS cannot be judged. */
export function stepWord(results: readonly CheckResult[]): { word: StepWord; why: string[] } {
  const fails = results.filter((r) => r.verdict === "FAIL");
  if (fails.length > 0) return { word: "bad", why: fails.map((r) => `${r.id}: ${r.reason}`) };
  const unjudged = results.filter((r) => r.verdict === "ERROR" || r.verdict === "MISS");
  if (unjudged.length > 0)
    return { word: "skip", why: unjudged.map((r) => `${r.id}: ${r.verdict} ${r.reason}`) };
  return { word: "good", why: [] };
}

/**
 * The next prefix to test between a good and a bad one, nearest the middle first, leaving out the
 * skipped ones; undefined when every prefix between them was tried.
 */
export function nextPrefix(good: number, bad: number, skipped: ReadonlySet<number>): number | undefined {
  const mid = Math.floor((good + bad) / 2);
  for (let d = 0; mid - d > good || mid + d + 1 < bad; d++) {
    if (mid - d > good && !skipped.has(mid - d)) return mid - d;
    if (mid + d + 1 < bad && !skipped.has(mid + d + 1)) return mid + d + 1;
  }
  return undefined;
}

/**
 * Between a good prefix 0 and a bad prefix `total`, the last good and first bad prefix, judging
 * one prefix per step (`judge(k, step)`); they are adjacent unless skips left a gap.
 */
export async function searchPrefixes(
  total: number,
  judge: (k: number, step: number) => Promise<StepWord>,
): Promise<{ good: number; bad: number; searchSteps: number }> {
  let good = 0;
  let bad = total;
  const skipped = new Set<number>();
  let searchSteps = 0;
  for (;;) {
    const k = nextPrefix(good, bad, skipped);
    if (k === undefined) return { good, bad, searchSteps };
    searchSteps++;
    const word = await judge(k, searchSteps);
    if (word === "good") good = k;
    else if (word === "bad") bad = k;
    else skipped.add(k);
  }
}

/** The series' first k patches as a directory of *.patch files (named so they apply in order). */
async function prefixSeries(dir: string, patches: readonly Patch[], k: number): Promise<string> {
  await makeDir(dir);
  for (const p of patches.slice(0, k))
    await writeFile(join(dir, `${String(p.index).padStart(4, "0")}.patch`), p.text);
  return dir;
}

export async function runBisect(opts: BisectOptions): Promise<BisectResult> {
  const started = Date.now();
  const runDir = resolve(opts.runDir);
  checkJobSpec(opts.spec);
  if (existsSync(runDir) && readdirSync(runDir).length > 0)
    throw new HilError("the run directory is not empty: give a new --run-dir", { where: runDir });
  const range = typeof opts.series === "string" ? undefined : opts.series;
  let series: Series;
  if (range) {
    await makeDir(runDir);
    const file = join(runDir, "range.mbox");
    await writeRangeSeries(range, file);
    series = loadSeries(file);
    if (series.patches.length !== range.commits.length)
      throw new HilError(
        `${range.good.ref}..${range.bad.ref}: ${range.commits.length} commit(s) but ${series.patches.length} patch(es) (an empty commit has none)`,
        { where: range.repo },
      );
  } else series = loadSeries(opts.series as string);
  const total = series.patches.length;
  const patchInfo = (p: Patch): PatchInfo => {
    const commit = range?.commits[p.index - 1];
    return commit
      ? { index: p.index, subject: commit.subject, source: p.source, commit: commit.sha }
      : { index: p.index, subject: p.subject, source: p.source };
  };
  const steps: BisectStep[] = [];

  const runStep = async (k: number, label: string): Promise<BisectStep> => {
    const stepDir = `steps/${String(k).padStart(3, "0")}-patches`;
    const spec: JobSpec =
      k === 0
        ? { ...opts.spec }
        : k === total
          ? { ...opts.spec, series: series.path }
          : {
              ...opts.spec,
              series: await prefixSeries(join(runDir, "series", `first-${k}`), series.patches, k),
            };
    const what = k === 0 ? "the base, no patch" : `the first ${k}/${total} patch(es)`;
    progress.info(`[bisect] ${label}: ${what}: ${describeJob(spec)}`);
    const stepStarted = Date.now();
    const record: JobRecord = await runJob(spec, {
      runDir: join(runDir, stepDir),
      id: `bisect-${k}`,
      kernelErrors: "record",
      ...(opts.repeat && opts.repeat > 1 ? { repeat: opts.repeat } : {}),
    });
    const { word, why } = stepWord(record.results);
    const step: BisectStep = {
      patches: k,
      word,
      runDir: stepDir,
      counts: countsText(verdictCounts(record.results)),
      why,
      wallMs: Date.now() - stepStarted,
    };
    progress.info(`[bisect] ${label}: ${what}: ${word} (${step.counts})`);
    steps.push(step);
    return step;
  };

  const finish = async (
    end: { culprit?: BisectResult["culprit"]; inconclusive?: string },
    exitCode: number,
    searchSteps: number,
  ): Promise<BisectResult> => {
    const result: BisectResult = {
      series: {
        path: series.path,
        patches: series.patches.map(patchInfo),
        ...(range ? { range: { repo: range.repo, good: range.good, bad: range.bad } } : {}),
      },
      spec: opts.spec,
      steps,
      ...end,
      searchSteps,
      wallMs: Date.now() - started,
      exitCode,
    };
    await writeRunFile(runDir, BISECT_FILE, `${JSON.stringify(result, null, 2)}\n`);
    return result;
  };

  progress.info(
    `[bisect] ${total} patch(es): ${series.patches.map((p) => describePatch(p, total)).join("; ")}`,
  );
  // bad input before anything runs: a series that does not apply, a kernel that does not build
  const configs = withDriverFragment(opts.spec.configs ?? [], opts.spec.driver);
  await preparedGuestFor(kernelRequestOf({ ...opts.spec, configs, series: series.path }));
  const badEnd = await runStep(total, "the bad end");
  if (badEnd.word !== "bad")
    return finish(
      {
        inconclusive:
          badEnd.word === "skip"
            ? `the whole series could not be judged (${badEnd.why[0] ?? badEnd.counts})`
            : `the whole series does not FAIL the scenarios (${badEnd.counts}): nothing to bisect`,
      },
      3,
      0,
    );
  const goodEnd = await runStep(0, "the good end");
  if (goodEnd.word !== "good")
    return finish(
      {
        inconclusive:
          goodEnd.word === "bad"
            ? `the base already FAILs without the series (${goodEnd.why[0] ?? goodEnd.counts}): the series is not the cause`
            : `the base could not be judged (${goodEnd.why[0] ?? goodEnd.counts})`,
      },
      3,
      0,
    );

  const { good, bad, searchSteps } = await searchPrefixes(
    total,
    async (k, n) => (await runStep(k, `step ${n}`)).word,
  );
  if (bad - good > 1) {
    const between = series.patches.slice(good, bad).map((p) => p.index);
    return finish(
      {
        inconclusive: `the first bad patch is one of ${between.join(", ")}: the prefixes between could not be judged`,
      },
      3,
      searchSteps,
    );
  }
  const culprit = series.patches[bad - 1] as Patch;
  const culpritStep = steps.find((s) => s.patches === bad && s.word === "bad") as BisectStep;
  return finish({ culprit: { ...patchInfo(culprit), runDir: culpritStep.runDir } }, 0, searchSteps);
}
