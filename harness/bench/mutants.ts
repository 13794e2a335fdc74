/**
 * The mutation campaign: how much the drain suite really catches. Runs the suite on the base
 * (debian:6.12) once per driver and executor the series need (erdma on device profile
 * erdma-reflush, siw, rxe), then on the base with each series of fixtures/mutants/mutants.yaml on
 * its own driver, and prints per series whether it was caught (a verdict the base passed became a
 * FAIL, or could not be judged), by which scenarios and rules; at the end the catch rate (mutants
 * caught / written), overall and per driver, and the false FAILs of the benign series.
 *
 *   node --import tsx harness/bench/mutants.ts [--only a,b] [--driver erdma|siw|rxe]
 *     [--executor kernel|user] [--scenario <globs>] [--full] [--base-from <dir>] [--run-dir <dir>]
 *     [--json]
 *
 * Each series is a kernel build (continuing the base's, cached by content) and a suite run. A
 * mutant whose manifest entry predicts the scenarios that catch it runs those first; only if they
 * do not catch it does the whole suite run (--full: the whole suite for every series). A benign
 * series always runs the whole suite. Progress on stderr,
 * results on stdout; the run directories (base-<driver>-<executor>/, <series>-<executor>/) and
 * mutants.json stay in --run-dir (default runs/mutants-<timestamp>). Exit status: 0 done, 1 a
 * benign series FAILed, 3 a series could not be judged (not built, or a benign run broken),
 * 2 bad input.
 */
import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_PROFILE } from "../../qemu/erdma/profile-file.ts";
import { HilError, isHilError } from "../../util/errors.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { stampedRunDir } from "../cli/repro-command.ts";
import { readRunRecord } from "../rundir/read.ts";
import type { RunRecord } from "../rundir/schema.ts";
import { DRIVERS, type DriverName, EXECUTORS, type ExecutorKind } from "../scenario/schema.ts";
import { type JobSpec, runJob } from "../workflows/job/job.ts";
import { compareRuns, outcomeOf, type RunComparison, summarize } from "./mutants/classify.ts";
import { loadManifest, MANIFEST_FILE, type SeriesEntry, selectSeries } from "./mutants/manifest.ts";
import { catchesByDriver, renderSeries, renderSummary, type SeriesReport } from "./mutants/report.ts";

const BASE_KERNEL = "debian:6.12";

const USAGE = `usage: node --import tsx harness/bench/mutants.ts [options]
  --only <a,b>         these series of the manifest (default: all)
  --driver <name>      only the series of this driver (erdma, siw, rxe; default: all)
  --executor <kind>    only this executor (kernel, user; default: each series' own)
  --scenario <globs>   narrow the suite (default: every scenario meant for the target)
  --manifest <file>    default ${MANIFEST_FILE}
  --full               the whole suite for every mutant (default: its predicted scenarios first)
  --base-from <dir>    reuse the base runs (base-<driver>-<executor>/) of an earlier campaign's run dir
  --run-dir <dir>      where the runs go (default runs/mutants-<timestamp>)
  --json               the results as JSON on stdout
`;

interface Options {
  only?: string[];
  driver?: DriverName;
  executor?: ExecutorKind;
  scenario?: string;
  manifest: string;
  runDir: string;
  full: boolean;
  baseFrom?: string;
  json: boolean;
}

function parseOptions(argv: string[]): Options | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      only: { type: "string" },
      driver: { type: "string" },
      executor: { type: "string" },
      scenario: { type: "string" },
      manifest: { type: "string", default: MANIFEST_FILE },
      "run-dir": { type: "string" },
      full: { type: "boolean", default: false },
      "base-from": { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return undefined;
  const executor = values.executor;
  if (executor !== undefined && !(EXECUTORS as readonly string[]).includes(executor))
    throw new HilError(`--executor ${executor}: one of ${EXECUTORS.join(", ")}`);
  const driver = values.driver;
  if (driver !== undefined && !(DRIVERS as readonly string[]).includes(driver))
    throw new HilError(`--driver ${driver}: one of ${DRIVERS.join(", ")}`);
  return {
    ...(values.only
      ? {
          only: values.only
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean),
        }
      : {}),
    ...(driver ? { driver: driver as DriverName } : {}),
    ...(executor ? { executor: executor as ExecutorKind } : {}),
    ...(values.scenario ? { scenario: values.scenario } : {}),
    manifest: resolve(values.manifest as string),
    runDir: values["run-dir"] ? resolve(values["run-dir"]) : stampedRunDir("mutants"),
    full: values.full as boolean,
    ...(values["base-from"] ? { baseFrom: resolve(values["base-from"]) } : {}),
    json: values.json as boolean,
  };
}

/** A base run: one driver on one executor. */
interface Target {
  driver: DriverName;
  executor: ExecutorKind;
}

const targetKey = (t: Target): string => `${t.driver}-${t.executor}`;

function describeTarget(t: Target): string {
  return `${BASE_KERNEL} ${t.driver === "erdma" ? `erdma/${DEFAULT_PROFILE}` : t.driver} ${t.executor} executor`;
}

function specFor(target: Target, scenarios: string, series?: string): JobSpec {
  return {
    kernel: BASE_KERNEL,
    ...(series ? { series } : {}),
    driver: target.driver,
    executor: target.executor,
    ...(target.driver === "erdma" ? { deviceProfile: DEFAULT_PROFILE } : {}),
    scenarios,
  };
}

function targetsOf(entry: SeriesEntry, opts: Options): Target[] {
  if (opts.driver && entry.driver !== opts.driver) return [];
  return entry.executors
    .filter((e) => !opts.executor || e === opts.executor)
    .map((executor) => ({ driver: entry.driver, executor }));
}

async function runBase(target: Target, opts: Options): Promise<RunRecord> {
  const name = `base-${targetKey(target)}`;
  if (opts.baseFrom) {
    const dir = join(opts.baseFrom, name);
    progress.info(`[mutants] base: ${describeTarget(target)}, from ${dir}`);
    return readRunRecord(dir);
  }
  progress.info(`[mutants] base: ${describeTarget(target)}`);
  const record = await runJob(specFor(target, opts.scenario ?? "*"), {
    runDir: join(opts.runDir, name),
    id: name,
    meantOnly: opts.scenario === undefined,
  });
  const broken = record.results.find((r) => r.id === "kernel" || r.id === "suite");
  if (broken)
    throw new HilError(`the base run (${describeTarget(target)}) could not be judged: ${broken.reason}`, {
      exitCode: 3,
    });
  return record;
}

/** The series on its executors over some scenarios (undefined: the campaign's whole suite). */
async function judgeSeries(
  entry: SeriesEntry,
  bases: Map<string, RunRecord>,
  opts: Options,
  predicted?: readonly string[],
): Promise<RunComparison[]> {
  const runs: RunComparison[] = [];
  for (const target of targetsOf(entry, opts)) {
    const { executor } = target;
    const id = `${entry.name}-${executor}${predicted ? "-predicted" : ""}`;
    const patched = await runJob(specFor(target, predicted?.join(",") ?? opts.scenario ?? "*", entry.file), {
      runDir: join(opts.runDir, id),
      id,
      meantOnly: opts.scenario === undefined,
      kernelErrors: "record",
    });
    const base = bases.get(targetKey(target)) as RunRecord;
    // a narrowed suite (--scenario) is compared on the scenarios it ran, not on the base's others
    const ran = new Set((patched.scenarios ?? []).map((s) => s.scenario ?? s.name));
    const scope = predicted ? new Set(predicted) : opts.scenario !== undefined ? ran : undefined;
    const based = new Set((base.scenarios ?? []).map((s) => s.scenario ?? s.name));
    for (const name of ran)
      if (!based.has(name))
        progress.info(
          `[mutants] ${entry.name}: the base run has no verdict for ${name}, so the series' is not compared (run the base again: without --base-from)`,
        );
    runs.push(compareRuns(base, patched, executor, scope));
  }
  return runs;
}

async function runSeries(
  entry: SeriesEntry,
  bases: Map<string, RunRecord>,
  opts: Options,
): Promise<SeriesReport> {
  const started = Date.now();
  const predictedFirst =
    entry.kind === "mutant" && !opts.full && opts.scenario === undefined && entry.scenarios.length > 0;
  let runs = predictedFirst ? await judgeSeries(entry, bases, opts, entry.scenarios) : [];
  const byPredicted = predictedFirst && outcomeOf(entry.kind, runs) === "caught";
  if (!byPredicted) {
    if (predictedFirst)
      progress.info(
        `[mutants] ${entry.name}: not caught by ${entry.scenarios.join(", ")}; the whole suite now`,
      );
    runs = await judgeSeries(entry, bases, opts);
  }
  const invalid = runs.find((r) => r.invalid !== undefined)?.invalid;
  return {
    name: entry.name,
    kind: entry.kind,
    driver: entry.driver,
    class: entry.class,
    outcome: outcomeOf(entry.kind, runs),
    ...(entry.predict ? { predict: entry.predict } : {}),
    catches: runs.flatMap((r) => r.catches),
    scope: byPredicted ? "predicted" : "suite",
    ...(invalid !== undefined ? { invalid } : {}),
    wallMs: Date.now() - started,
  };
}

function exitCode(reports: readonly SeriesReport[]): number {
  if (reports.some((r) => r.outcome === "false-fail")) return 1;
  if (reports.some((r) => r.outcome === "invalid" || r.outcome === "not-judged")) return 3;
  return 0;
}

async function main(): Promise<number> {
  const opts = parseOptions(process.argv.slice(2));
  if (!opts) {
    process.stdout.write(USAGE);
    return 0;
  }
  const manifest = await loadManifest(opts.manifest);
  const series = selectSeries(manifest, opts.only).filter((s) => targetsOf(s, opts).length > 0);
  if (series.length === 0) {
    const on = [opts.driver, opts.executor && `the ${opts.executor} executor`].filter(Boolean).join(" on ");
    throw new HilError(`no series of the manifest runs on ${on}`);
  }
  await makeDir(opts.runDir);
  const started = Date.now();
  const bases = new Map<string, RunRecord>();
  for (const entry of series)
    for (const target of targetsOf(entry, opts))
      if (!bases.has(targetKey(target))) bases.set(targetKey(target), await runBase(target, opts));
  const reports: SeriesReport[] = [];
  for (const [i, entry] of series.entries()) {
    progress.info(`[mutants] ${i + 1}/${series.length} ${entry.kind} ${entry.name}: ${entry.class}`);
    const report = await runSeries(entry, bases, opts);
    reports.push(report);
    progress.info(`[mutants] ${entry.name}: ${report.outcome} in ${Math.round(report.wallMs / 1000)}s`);
    if (!opts.json) process.stdout.write(renderSeries(report));
  }
  const summary = summarize(reports);
  const byDriver = catchesByDriver(reports);
  const out = {
    base: BASE_KERNEL,
    deviceProfile: DEFAULT_PROFILE,
    drivers: [...new Set(series.map((s) => s.driver))],
    runDir: opts.runDir,
    wallMs: Date.now() - started,
    summary,
    byDriver,
    series: reports,
  };
  await writeFile(join(opts.runDir, "mutants.json"), `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(
    opts.json ? `${JSON.stringify(out, null, 2)}\n` : `\n${renderSummary(summary, byDriver)}`,
  );
  progress.info(`[mutants] run directory: ${opts.runDir}`);
  return exitCode(reports);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
    process.exitCode = isHilError(err) ? err.exitCode : 1;
  },
);
