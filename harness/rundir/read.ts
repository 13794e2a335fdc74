/**
 * A run directory as the reports and workflows read it: verdicts.json (schema.ts) and, on demand,
 * a scenario's verbs trace (traces/<name>.jsonl) and hardware trace (traces/<name>.hw.jsonl). A
 * missing or corrupt file is one HilError naming it (exit 2).
 */
import { readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { HilError } from "../../util/errors.ts";
import { type RunDevice, readDevice, runViews } from "../backend/registry.ts";
import { type HwTraceEvent, parseHwTrace } from "../protocol/hw-trace.ts";
import { parseTrace, type TraceRecord } from "../protocol/trace.ts";
import {
  type RunCheck,
  type RunRecord,
  type RunScenario,
  type RunStability,
  runRecordIssues,
  runRecordSchema,
  VERDICTS_FILE,
} from "./schema.ts";

export interface RunDir {
  /** absolute path */
  dir: string;
  record: RunRecord;
  /** verdicts.json's modification time (when the run finished) */
  finishedAt: Date;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT" ? "does not exist" : code === "EISDIR" ? "is a directory" : "cannot be read";
    throw new HilError(`${what} ${why}`, { where: file, cause: err });
  }
}

export async function loadRunDir(path: string): Promise<RunDir> {
  const dir = resolve(path);
  const info = await stat(dir).catch(() => undefined);
  if (!info) throw new HilError("the run directory does not exist", { where: dir });
  if (!info.isDirectory()) throw new HilError("is not a run directory (not a directory)", { where: dir });
  const file = join(dir, VERDICTS_FILE);
  return { dir, record: await readRunRecord(dir), finishedAt: (await stat(file)).mtime };
}

/** A run directory's verdicts.json, checked against the schema. */
export async function readRunRecord(runDir: string): Promise<RunRecord> {
  const file = join(resolve(runDir), VERDICTS_FILE);
  const text = await readText(file, `${VERDICTS_FILE} (written by hil run)`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new HilError(`${VERDICTS_FILE} is not JSON`, { where: file, detail: (err as Error).message });
  }
  const r = runRecordSchema.safeParse(json);
  if (!r.success) {
    throw new HilError(`${VERDICTS_FILE} is not a hil run record`, {
      where: file,
      detail: runRecordIssues(r.error),
    });
  }
  return r.data;
}

/** A scenario's verbs trace (traces/<name>.jsonl), checked against the executor's schema. */
export async function loadVerbsTrace(run: RunDir, s: RunScenario): Promise<TraceRecord[] | undefined> {
  if (!s.trace) return undefined;
  const file = join(run.dir, s.trace);
  return parseTrace(await readText(file, "the scenario's verbs trace"), file);
}

/** A scenario's hardware trace slice (traces/<name>.hw.jsonl): every line an event of the device or its server. */
export async function loadHwTrace(run: RunDir, s: RunScenario): Promise<HwTraceEvent[] | undefined> {
  if (!s.hwTrace) return undefined;
  const file = join(run.dir, s.hwTrace);
  return parseHwTrace(await readText(file, "the scenario's hardware trace"), { source: file });
}

/** The device of a run, as its backend reads it back (backend/registry.ts RunDevice). */
export type { RunDevice };

/** The run's device, or undefined when it had none (--no-device, siw, a target, or an old record without it). */
export function deviceOf(run: RunDir): RunDevice | undefined {
  return readDevice(run.record);
}

/** The device in a few words, as the reports' headers say it. */
export function describeDevice(d: RunDevice): string {
  return runViews(d).describe(d);
}

/** What a run ran on, in the words of the reports' headers: the kernel, the driver, the executor, the device. */
export function runSetting(run: RunDir): string[] {
  const r = run.record;
  const device = deviceOf(run);
  return [
    `kernel ${r.kernel}${r.release ? ` (${r.release})` : ""}`,
    r.driver && `driver ${r.driver}`,
    r.executor && `executor ${r.executor}`,
    device && describeDevice(device),
  ].filter((part): part is string => Boolean(part));
}

/** The scenarios of a run; a run of the smoke checks alone has none. */
export function scenariosOf(run: RunDir): RunScenario[] {
  return run.record.scenarios ?? [];
}

/** The scenario a run of it repeats and which repetition it is (none when the run was not repeated). */
export function repetitionOf(s: RunScenario): { scenario: string; repetition?: number } {
  if (s.scenario !== undefined && s.repetition !== undefined)
    return { scenario: s.scenario, repetition: s.repetition };
  const m = /^(.*)#(\d+)$/.exec(s.name);
  return m ? { scenario: m[1] as string, repetition: Number(m[2]) } : { scenario: s.name };
}

/** The run's stability entries: a repeated run's, none otherwise. */
export function stabilityOf(run: RunDir): RunStability[] {
  return run.record.stability ?? [];
}

/** The checks that are not a scenario under a profile: the probe stage, a broken suite, stale shared known-bug records. */
export function stageChecks(run: RunDir): RunCheck[] {
  const others = run.record.results.filter((r) => !/^(.*)\[([a-z-]+)\]$/.test(r.id));
  if (!run.record.probe) return others;
  const probe = new Set(run.record.probe.map((c) => c.id));
  return [...run.record.probe, ...others.filter((r) => !probe.has(r.id))];
}

/** The kernel base (debian:6.12, a path) without the series and config suffixes. */
export function kernelBase(run: RunDir): string {
  return run.record.kernel.split(" + ")[0]?.trim() ?? run.record.kernel;
}

/** Whether the kernel was built with a patch series (the describe string says so). */
export function hasSeries(run: RunDir): boolean {
  return run.record.series !== undefined || /\+ \d+ patch\(es\) from /.test(run.record.kernel);
}
