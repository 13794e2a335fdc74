/**
 * `hil validate`: the drain suite on a base kernel and on the base with a patch series, and what
 * the series changed. An empty series (an mbox with no patch, a directory with no *.patch file)
 * is the base kernel itself: both sides run on it, and they must agree.
 */

import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, join, resolve } from "node:path";
import { progress } from "../../../util/progress.ts";
import type { ChosenDevice } from "../../backend/registry.ts";
import {
  hasDiff,
  isCoverLetter,
  isSeriesDirectory,
  loadSeries,
  messageSubject,
  splitMboxMessages,
} from "../../kernel/series.ts";
import { writeRunFile } from "../../rundir/write.ts";
import { selectScenarios } from "../../scenario/select.ts";
import { defaultGuests } from "../../suite/guests.ts";
import {
  checkJobSpec,
  describeJob,
  type JobRecord,
  type JobSpec,
  kernelRequestOf,
  preparedGuestFor,
  runJob,
  scenarioPatterns,
  withDriverConfig,
} from "../job/job.ts";
import { type BaseCacheOutcome, type BaseSide, planBaseSide } from "./base.ts";
import { diffVerdicts, type ValidateDiff } from "./diff.ts";

export interface SeriesInfo {
  path: string;
  /** the patches' subjects, in order; none for an empty series */
  subjects: string[];
}

/**
 * The series' patches, checked now (a malformed series is bad input before anything runs). Empty:
 * a directory with no *.patch file, an empty file, or an mbox of cover letters only.
 */
export function inspectSeries(path: string): SeriesInfo {
  const full = resolve(path);
  const isDir = isSeriesDirectory(path, full);
  if (isDir) {
    if (!readdirSync(full).some((n) => n.endsWith(".patch"))) return { path: full, subjects: [] };
  } else {
    const text = readFileSync(full, "utf8");
    const messages = splitMboxMessages(text);
    if (text.trim() === "") return { path: full, subjects: [] };
    if (messages.length > 0 && messages.every((m) => !hasDiff(m) && isCoverLetter(messageSubject(m))))
      return { path: full, subjects: [] };
  }
  return { path: full, subjects: loadSeries(full).patches.map((p) => p.subject) };
}

export interface ValidateOptions {
  /** the base kernel, the suite's target and scenarios (its series is ignored) */
  spec: Omit<JobSpec, "series">;
  series: string;
  runDir: string;
  /** leave out scenarios not meant for the target (no --scenario given) */
  meantOnly?: boolean;
  /** run the base side even when a run of it is cached (--no-base-cache) */
  freshBase?: boolean;
  /** run the two sides at once on two guests (default: when the machine has SIDES_AT_ONCE_CPUS) */
  sidesAtOnce?: boolean;
  /** both sides' device instead of the one the spec implies (--device-rtl) */
  device?: ChosenDevice;
}

/** Two guests at once take two vCPU threads each busy under TCG, and the device servers more. */
export const SIDES_AT_ONCE_CPUS = 4;

export function sidesAtOnceByDefault(cpus = availableParallelism()): boolean {
  return cpus >= SIDES_AT_ONCE_CPUS;
}

/** Both promises' values; when one fails, the other is still waited for (its guest shut down), then the first failure thrown. */
export async function bothSettled<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [x, y] = await Promise.allSettled([a, b]);
  if (x.status === "rejected") throw x.reason;
  if (y.status === "rejected") throw y.reason;
  return [x.value, y.value];
}

export interface ValidateResult {
  base: JobRecord;
  /** whether the base side was reused from the cache, or ran (and was kept) */
  baseCache: BaseCacheOutcome;
  patched: JobRecord;
  series: SeriesInfo;
  diff: ValidateDiff;
  runDir: string;
  wallMs: number;
  exitCode: number;
}

export const VALIDATE_FILE = "validate.json";

export function validateExitCode(diff: ValidateDiff): number {
  if (diff.regression) return 1;
  if (diff.counts["not-judged"] > 0) return 3;
  return 0;
}

/**
 * Runs both sides (base first) into <runDir>/base and <runDir>/patched, and compares them; the
 * base side is the run cached under its key when there is one (base.ts).
 */
export async function runValidate(opts: ValidateOptions): Promise<ValidateResult> {
  const started = Date.now();
  const series = inspectSeries(opts.series);
  const runDir = resolve(opts.runDir);
  // the driver's fragment (rxe) in both sides' kernels now, so the base key names the kernel that runs
  const spec = withDriverConfig(opts.spec);
  const baseSpec: JobSpec = { ...spec };
  const patchedSpec: JobSpec = series.subjects.length > 0 ? { ...spec, series: series.path } : { ...spec };
  if (series.subjects.length === 0)
    progress.info(`[validate] ${basename(series.path)} holds no patch: base+series is the base kernel`);
  else
    progress.info(
      `[validate] ${series.subjects.length} patch(es): ${series.subjects.map((s) => `"${s}"`).join(", ")}`,
    );
  // bad input first, before anything runs: the scenarios and profile, then both kernels (a series
  // that does not apply is reported before the base side's suite has run for minutes)
  checkJobSpec(baseSpec);
  const scenarios = await selectScenarios(scenarioPatterns(baseSpec));
  const basePrepared = await preparedGuestFor(kernelRequestOf(baseSpec));
  if (patchedSpec.series) await preparedGuestFor(kernelRequestOf(patchedSpec));
  const atOnce = opts.sidesAtOnce ?? sidesAtOnceByDefault();
  // the two sides at once share the machine's guests between them
  const guests = atOnce ? Math.max(1, Math.floor(defaultGuests() / 2)) : undefined;
  const plan = await planBaseSide({
    spec: baseSpec,
    prepared: basePrepared,
    scenarios,
    runDir: join(runDir, "base"),
    meantOnly: opts.meantOnly === true,
    fresh: opts.freshBase === true,
    ...(guests ? { guests } : {}),
    ...(opts.device ? { device: opts.device } : {}),
  });
  const runPatched = () => {
    progress.info(`[validate] 2/2 base+series: ${describeJob(patchedSpec)}`);
    return runJob(patchedSpec, {
      runDir: join(runDir, "patched"),
      id: "patched",
      ...(opts.meantOnly ? { meantOnly: true } : {}),
      ...(guests && !("reused" in plan) ? { guests } : {}),
      ...(opts.device ? { device: opts.device } : {}),
    });
  };
  let baseSide: BaseSide;
  let patched: JobRecord;
  if ("reused" in plan) {
    baseSide = plan.reused;
    patched = await runPatched();
  } else if (atOnce) {
    progress.info("[validate] the base and base+series run at once, on two guests");
    [baseSide, patched] = await bothSettled(plan.run(), runPatched());
  } else {
    baseSide = await plan.run();
    patched = await runPatched();
  }
  const { record: base, cache: baseCache } = baseSide;
  const diff = diffVerdicts(base, patched);
  const result: ValidateResult = {
    base,
    baseCache,
    patched,
    series,
    diff,
    runDir,
    wallMs: Date.now() - started,
    exitCode: validateExitCode(diff),
  };
  await writeRunFile(
    runDir,
    VALIDATE_FILE,
    `${JSON.stringify(
      {
        base: { kernel: base.kernel, runDir: "base", spec: baseSpec, cache: baseCache },
        patched: { kernel: patched.kernel, runDir: "patched", spec: patchedSpec },
        series,
        regression: diff.regression,
        counts: diff.counts,
        deltas: diff.deltas,
        wallMs: result.wallMs,
        exitCode: result.exitCode,
      },
      null,
      2,
    )}\n`,
  );
  return result;
}
