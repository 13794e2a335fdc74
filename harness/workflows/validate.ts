/**
 * `hil validate`: the drain suite on a base kernel and on the base with a patch series, and what
 * the series changed. An empty series (an mbox with no patch, a directory with no *.patch file)
 * is the base kernel itself: both sides run on it, and they must agree.
 */
import { readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { progress } from "../../util/progress.ts";
import {
  hasDiff,
  isCoverLetter,
  isSeriesDirectory,
  loadSeries,
  messageSubject,
  splitMboxMessages,
} from "../kernel/series.ts";
import { selectScenarios } from "../scenario/select.ts";
import {
  checkJobSpec,
  describeJob,
  type JobRecord,
  type JobSpec,
  kernelRequestOf,
  preparedGuestFor,
  runJob,
  scenarioPatterns,
} from "./job.ts";
import { diffVerdicts, type ValidateDiff } from "./validate-diff.ts";

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
}

export interface ValidateResult {
  base: JobRecord;
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

/** Runs both sides (base first) into <runDir>/base and <runDir>/patched, and compares them. */
export async function runValidate(opts: ValidateOptions): Promise<ValidateResult> {
  const started = Date.now();
  const series = inspectSeries(opts.series);
  const runDir = resolve(opts.runDir);
  const baseSpec: JobSpec = { ...opts.spec };
  const patchedSpec: JobSpec =
    series.subjects.length > 0 ? { ...opts.spec, series: series.path } : { ...opts.spec };
  if (series.subjects.length === 0)
    progress.info(`[validate] ${basename(series.path)} holds no patch: base+series is the base kernel`);
  else
    progress.info(
      `[validate] ${series.subjects.length} patch(es): ${series.subjects.map((s) => `"${s}"`).join(", ")}`,
    );
  // bad input first, before anything runs: the scenarios and profile, then both kernels (a series
  // that does not apply is reported before the base side's suite has run for minutes)
  checkJobSpec(baseSpec);
  await selectScenarios(scenarioPatterns(baseSpec));
  await preparedGuestFor(kernelRequestOf(baseSpec));
  if (patchedSpec.series) await preparedGuestFor(kernelRequestOf(patchedSpec));
  progress.info(`[validate] 1/2 base: ${describeJob(baseSpec)}`);
  const base = await runJob(baseSpec, {
    runDir: join(runDir, "base"),
    id: "base",
    ...(opts.meantOnly ? { meantOnly: true } : {}),
  });
  progress.info(`[validate] 2/2 base+series: ${describeJob(patchedSpec)}`);
  const patched = await runJob(patchedSpec, {
    runDir: join(runDir, "patched"),
    id: "patched",
    ...(opts.meantOnly ? { meantOnly: true } : {}),
  });
  const diff = diffVerdicts(base, patched);
  const result: ValidateResult = {
    base,
    patched,
    series,
    diff,
    runDir,
    wallMs: Date.now() - started,
    exitCode: validateExitCode(diff),
  };
  await writeFile(
    join(runDir, VALIDATE_FILE),
    `${JSON.stringify(
      {
        base: { kernel: base.kernel, runDir: "base", spec: baseSpec },
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
