/**
 * The run directories `hil diff --traces` compares: each read with its scenarios (a repeated run's
 * first repetition of each) and named for the lines that say where two runs disagree, by its
 * device profile when that tells the runs apart, else by its directory's name.
 */
import { existsSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { HilError } from "../../../util/errors.ts";
import { runViews } from "../../backend/registry.ts";
import {
  deviceOf,
  loadRunDir,
  loadVerbsTrace,
  type RunDir,
  repetitionOf,
  scenariosOf,
} from "../../rundir/read.ts";
import { type RunScenario, VERDICTS_FILE } from "../../rundir/schema.ts";
import { MATRIX_FILE } from "../matrix/matrix.ts";
import { type ScenarioFacts, scenarioFacts } from "./facts.ts";

export interface TraceRun {
  run: RunDir;
  /** what the lines call it: its device profile, or its directory's name when profiles repeat */
  name: string;
  /** the device profile (or the external device, or the driver without one) */
  device: string;
  /** the device, kernel and executor in a few words */
  label: string;
  /** by scenario name: the scenario, or a repeated run's first repetition of it */
  scenarios: Map<string, RunScenario>;
  /** how many repetitions the run has of each scenario (1 when it was not repeated) */
  repetitions: number;
}

function deviceName(run: RunDir): string {
  const d = deviceOf(run);
  return (d && runViews(d).diffName(d)) ?? run.record.driver ?? "no device";
}

function firstRepetitions(run: RunDir): { scenarios: Map<string, RunScenario>; repetitions: number } {
  const scenarios = new Map<string, { s: RunScenario; repetition: number }>();
  const counts = new Map<string, number>();
  for (const s of scenariosOf(run)) {
    const r = repetitionOf(s);
    const repetition = r.repetition ?? 1;
    counts.set(r.scenario, (counts.get(r.scenario) ?? 0) + 1);
    const had = scenarios.get(r.scenario);
    if (!had || repetition < had.repetition) scenarios.set(r.scenario, { s, repetition });
  }
  return {
    scenarios: new Map([...scenarios].map(([name, x]) => [name, x.s])),
    repetitions: Math.max(1, ...counts.values()),
  };
}

async function loadOne(path: string): Promise<RunDir> {
  const dir = resolve(path);
  const info = statSync(dir, { throwIfNoEntry: false });
  if (!info) throw new HilError("does not exist (a run directory was expected)", { where: dir });
  if (info.isDirectory() && !existsSync(join(dir, VERDICTS_FILE)) && existsSync(join(dir, MATRIX_FILE)))
    throw new HilError(
      "is a matrix directory: hil diff --traces compares run directories (hil run --run-dir)",
      { where: dir },
    );
  if (!info.isDirectory() || !existsSync(join(dir, VERDICTS_FILE)))
    throw new HilError(`is not a run directory (no ${VERDICTS_FILE}: hil run --run-dir)`, { where: dir });
  return loadRunDir(dir);
}

/** Names every run apart: device profiles, else directory names, else positions. */
function names(runs: readonly RunDir[]): string[] {
  const unique = (xs: string[]) => new Set(xs).size === xs.length;
  const devices = runs.map(deviceName);
  if (unique(devices)) return devices;
  const dirs = runs.map((r) => basename(r.dir));
  if (unique(dirs)) return dirs;
  return runs.map((_, i) => `run ${i + 1}`);
}

/** Reads the run directories to compare; a path that is not one is a HilError naming it (exit 2). */
export async function loadTraceRuns(paths: readonly string[]): Promise<TraceRun[]> {
  const runs: RunDir[] = [];
  for (const p of paths) runs.push(await loadOne(p));
  const named = names(runs);
  return runs.map((run, i) => {
    const r = run.record;
    const device = deviceName(run);
    const label = [
      device,
      `kernel ${r.kernel}${r.release ? ` (${r.release})` : ""}`,
      r.executor && `${r.executor} executor`,
    ]
      .filter(Boolean)
      .join(", ");
    return { run, name: named[i] as string, device, label, ...firstRepetitions(run) };
  });
}

/** A scenario's facts, or undefined when it has no verbs trace (it did not run). */
export async function factsOf(t: TraceRun, s: RunScenario): Promise<ScenarioFacts | undefined> {
  const records = await loadVerbsTrace(t.run, s);
  return records === undefined ? undefined : scenarioFacts(records);
}
