/**
 * A run directory as the report formats read it: verdicts.json (what `hil run` wrote: the probe
 * stage, each scenario's judgements per oracle profile with per-rule verdicts, the kernel, driver,
 * executor, device (an emulated one's profile, or an external one's socket), timings) and, on
 * demand, a scenario's verbs trace and hardware trace. A repeated run (--repeat n) names each
 * repetition <scenario>#<k> (with scenario and repetition beside the name) and says per scenario
 * and oracle profile whether the repetitions agree (stability).
 * A missing or corrupt file is one HilError naming it (exit 2).
 */
import { readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { HilError } from "../../util/errors.ts";
import { parseTrace, type TraceRecord } from "../protocol/trace.ts";
import { VERDICTS } from "../verdict.ts";

export const VERDICTS_FILE = "verdicts.json";

const verdict = z.enum(VERDICTS);

const check = z.looseObject({
  id: z.string(),
  title: z.string(),
  verdict,
  reason: z.string(),
  evidence: z.array(z.string()).optional(),
});

const ruleVerdict = z.looseObject({
  rule: z.union([z.string(), z.number()]).transform(String),
  title: z.string(),
  citation: z.string().optional(),
  verdict,
  reason: z.string(),
  evidence: z.array(z.string()).optional(),
  knownBug: z.looseObject({ reference: z.string(), note: z.string() }).optional(),
});

const judgement = z.looseObject({
  profile: z.string(),
  verdict,
  rules: z.array(ruleVerdict),
});

const scenario = z.looseObject({
  /** a repetition's is <scenario>#<k> */
  name: z.string(),
  file: z.string().optional(),
  scenario: z.string().optional(),
  repetition: z.number().int().min(1).optional(),
  judgements: z.array(judgement),
  outcome: z.looseObject({ verdict, reason: z.string() }).optional(),
  trace: z.string().optional(),
  hwTrace: z.string().optional(),
  observations: z.array(z.looseObject({ ev: z.string() })).optional(),
  knownBugs: z.array(z.looseObject({ reference: z.string().optional() })).optional(),
  durationMs: z.number().optional(),
});

/** Whether a scenario's repetitions agree under one oracle profile (suite/repeat.ts Stability). */
const stability = z.looseObject({
  scenario: z.string(),
  profile: z.string(),
  repetitions: z.number().int().min(1),
  verdicts: z.partialRecord(verdict, z.number().int().min(0)),
  flaky: z.boolean(),
  worst: verdict,
  first: z.looseObject({ verdict, reason: z.string() }).optional(),
  differs: z.looseObject({ repetition: z.number().int().min(1), verdict, reason: z.string() }).optional(),
});

/** The patch series the kernel was built with, as a run may record it (see seriesOf). */
const series = z.looseObject({
  path: z.string().optional(),
  patches: z.array(
    z.looseObject({
      /** file name in the run directory's series/ folder, or the patch's source */
      name: z.string(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      subject: z.string().optional(),
    }),
  ),
});

/** The emulated device (its profile, its trace file) or an external vfio-user server (its socket). */
const device = z
  .looseObject({ profile: z.string().optional(), external: z.string().optional() })
  .refine((d) => d.profile !== undefined || d.external !== undefined, {
    message: "a device has a profile (the emulated one) or an external socket",
  });

const runRecord = z.looseObject({
  kernel: z.string(),
  release: z.string().optional(),
  driver: z.string().optional(),
  executor: z.string().optional(),
  deviceProfile: z.string().optional(),
  device: device.nullable().optional(),
  boots: z.number().optional(),
  timings: z.looseObject({}).optional(),
  wallMs: z.number().optional(),
  startedAt: z.string().optional(),
  probe: z.array(check).optional(),
  scenarios: z.array(scenario).optional(),
  repeat: z.number().int().min(1).optional(),
  stability: z.array(stability).optional(),
  series: series.optional(),
  results: z.array(check),
});

export type RunCheck = z.infer<typeof check>;
export type RunRule = z.infer<typeof ruleVerdict>;
export type RunJudgement = z.infer<typeof judgement>;
export type RunScenario = z.infer<typeof scenario>;
export type RunSeries = z.infer<typeof series>;
export type RunStability = z.infer<typeof stability>;
export type RunRecord = z.infer<typeof runRecord>;

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
  const text = await readText(file, `${VERDICTS_FILE} (written by hil run)`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new HilError(`${VERDICTS_FILE} is not JSON`, { where: file, detail: (err as Error).message });
  }
  const r = runRecord.safeParse(json);
  if (!r.success) {
    const issues = r.error.issues
      .slice(0, 8)
      .map((x) => `${x.path.join(".") || "(top)"}: ${x.message}`)
      .join("\n");
    throw new HilError(`${VERDICTS_FILE} is not a hil run record`, { where: file, detail: issues });
  }
  return { dir, record: r.data, finishedAt: (await stat(file)).mtime };
}

/** A scenario's verbs trace (traces/<name>.jsonl), checked against the executor's schema. */
export async function loadVerbsTrace(run: RunDir, s: RunScenario): Promise<TraceRecord[] | undefined> {
  if (!s.trace) return undefined;
  const file = join(run.dir, s.trace);
  return parseTrace(await readText(file, "the scenario's verbs trace"), file);
}

export type HwEvent = Record<string, unknown> & { kind: string; t: number };

/** A scenario's hardware trace slice (traces/<name>.hw.jsonl): every line a JSON event with kind and t. */
export async function loadHwTrace(run: RunDir, s: RunScenario): Promise<HwEvent[] | undefined> {
  if (!s.hwTrace) return undefined;
  const file = join(run.dir, s.hwTrace);
  const text = await readText(file, "the scenario's hardware trace");
  const out: HwEvent[] = [];
  text.split("\n").forEach((line, i) => {
    if (line === "") return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new HilError(`hardware trace line ${i + 1} is not JSON`, {
        where: file,
        detail: `${(err as Error).message}\n${line.slice(0, 200)}`,
      });
    }
    const e = v as Partial<HwEvent> | null;
    if (!e || typeof e !== "object" || typeof e.kind !== "string" || typeof e.t !== "number")
      throw new HilError(`hardware trace line ${i + 1} is not an event (kind and t)`, {
        where: file,
        detail: line.slice(0, 200),
      });
    out.push(e as HwEvent);
  });
  return out;
}

/** The erdma device of a run: the emulated one with its profile, or an external device server. */
export type RunDevice = { kind: "emulated"; profile: string } | { kind: "external"; socket: string };

/** The run's device, or undefined when it had none (--no-device, siw, or an old record without it). */
export function deviceOf(run: RunDir): RunDevice | undefined {
  const r = run.record;
  if (r.device?.external !== undefined) return { kind: "external", socket: r.device.external };
  const profile = r.deviceProfile ?? r.device?.profile;
  return profile === undefined ? undefined : { kind: "emulated", profile };
}

/** The device in a few words, as the reports' headers say it. */
export function describeDevice(d: RunDevice): string {
  return d.kind === "external" ? `external device ${d.socket}` : `device profile ${d.profile}`;
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

/** The checks that are not a scenario under a profile: the probe stage, or a broken suite. */
export function stageChecks(run: RunDir): RunCheck[] {
  if (run.record.probe) return run.record.probe;
  return run.record.results.filter((r) => !/^(.*)\[([a-z-]+)\]$/.test(r.id));
}

/** The kernel base (debian:6.12, a path) without the series and config suffixes. */
export function kernelBase(run: RunDir): string {
  return run.record.kernel.split(" + ")[0]?.trim() ?? run.record.kernel;
}

/** Whether the kernel was built with a patch series (the describe string says so). */
export function hasSeries(run: RunDir): boolean {
  return run.record.series !== undefined || /\+ \d+ patch\(es\) from /.test(run.record.kernel);
}
