import { existsSync } from "node:fs";
/**
 * One job of the workflows: the drain suite on one kernel (base + series), one driver, one device
 * profile, one executor and one scenario selection, run the way `hil run` runs it (the device
 * probes stage first, then each scenario), into a run directory with the same verdicts.json.
 * repro runs one job, validate two (base, base+series), a matrix one per cell of its plan.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { DEFAULT_PROFILE, loadProfile } from "../../qemu/erdma/profile-file.ts";
import { HilError } from "../../util/errors.ts";
import { DEFAULT_GUEST_MAC, type PreparedGuest, prepareGuest } from "../boot.ts";
import type { KernelRequest } from "../kernel/types.ts";
import { runSmokeChecks } from "../probe/checks.ts";
import type { DriverName, ExecutorKind, OracleProfile, Scenario } from "../scenario/schema.ts";
import { selectScenarios } from "../scenario/select.ts";
import { HW_TRACE_FILE } from "../suite/hw-trace.ts";
import { planScenario } from "../suite/plan.ts";
import { runSuite, type SuiteReport, suiteResults } from "../suite/suite.ts";
import type { CheckResult } from "../verdict.ts";
import { recordSeries } from "./series-record.ts";
import type { SuiteRecord } from "./verdict-list.ts";

/** What a job runs; paths (series, configs, scenario files) as written, relative to a base dir. */
export interface JobSpec {
  kernel: string;
  series?: string;
  configs?: string[];
  driver: DriverName;
  executor: ExecutorKind;
  /** the erdma device profile (driver erdma; default erdma-reflush) */
  deviceProfile?: string;
  /** scenario names or globs from fixtures/scenarios, or paths; comma-separated */
  scenarios: string;
  /** judge under these oracle profiles only */
  oracle?: OracleProfile[];
}

export interface JobRecord extends SuiteRecord {
  job: { id?: string; spec: JobSpec };
}

export interface RunJobOptions {
  runDir: string;
  /** where the spec's relative paths are (default: the working directory) */
  baseDir?: string;
  /** the job's name in progress lines */
  label?: string;
  /** changes the loaded scenarios before they run (repro judges without known-bug records) */
  adjustScenarios?: (scenarios: Scenario[]) => Scenario[];
  /** leave out the scenarios not meant for the job's driver/executor/profile (as `hil run` does without --scenario) */
  meantOnly?: boolean;
  id?: string;
}

/** The kernel a job boots, its paths made absolute. */
export function kernelRequestOf(spec: JobSpec, baseDir = process.cwd()): KernelRequest {
  const isPath = (b: string) => !b.startsWith("debian:");
  return {
    base: isPath(spec.kernel) ? resolve(baseDir, spec.kernel) : spec.kernel,
    ...(spec.series ? { series: resolve(baseDir, spec.series) } : {}),
    // a bare name that is no file next to the plan is a fragment shipped in guest/kconfig (`smp`)
    configs: (spec.configs ?? []).map((c) =>
      c.includes("/") || existsSync(resolve(baseDir, c)) ? resolve(baseDir, c) : c,
    ),
  };
}

/** The scenario patterns with path patterns made absolute. */
export function scenarioPatterns(spec: JobSpec, baseDir = process.cwd()): string {
  return spec.scenarios
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => (p.includes("/") ? resolve(baseDir, p) : p))
    .join(",");
}

export function describeJob(spec: JobSpec): string {
  const kernel = spec.series ? `${spec.kernel} + ${spec.series}` : spec.kernel;
  const device = spec.driver === "erdma" ? `/${spec.deviceProfile ?? DEFAULT_PROFILE}` : "";
  return `${kernel} ${spec.driver}${device} ${spec.executor} [${spec.scenarios}]`;
}

/** Checks what can be checked before anything is built: the driver/profile pairing, the profile. */
export function checkJobSpec(spec: JobSpec): void {
  if (spec.driver === "siw" && spec.deviceProfile)
    throw new HilError(
      `device profile ${spec.deviceProfile} is for the emulated erdma device; driver siw attaches none`,
    );
  if (spec.driver === "erdma") loadProfile(spec.deviceProfile ?? DEFAULT_PROFILE);
}

const prepared = new Map<string, Promise<PreparedGuest>>();

/** prepareGuest, once per kernel request in this process (a matrix has many jobs per kernel). */
export function preparedGuestFor(req: KernelRequest): Promise<PreparedGuest> {
  const key = JSON.stringify(req);
  let p = prepared.get(key);
  if (!p) {
    p = prepareGuest(req);
    prepared.set(key, p);
    p.catch(() => prepared.delete(key));
  }
  return p;
}

function errorResult(id: string, title: string, err: unknown): CheckResult {
  return {
    id,
    title,
    verdict: "ERROR",
    reason: err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err),
    evidence:
      err instanceof HilError
        ? err.format().split("\n")
        : err instanceof Error && err.stack
          ? err.stack.split("\n").slice(0, 8)
          : [],
  };
}

/**
 * Runs the job and writes its run directory (verdicts.json as `hil run` writes it, plus the job).
 * Bad input (a scenario file, a profile, a series that does not apply) throws HilError before the
 * suite starts; with `kernelErrors: "record"` a kernel that cannot be built is recorded as an
 * ERROR result instead (a matrix goes on with its other jobs).
 */
export async function runJob(
  spec: JobSpec,
  opts: RunJobOptions & { kernelErrors?: "throw" | "record" },
): Promise<JobRecord> {
  const baseDir = opts.baseDir ?? process.cwd();
  checkJobSpec(spec);
  let scenarios = await selectScenarios(scenarioPatterns(spec, baseDir));
  if (opts.adjustScenarios) scenarios = opts.adjustScenarios(scenarios);
  if (opts.meantOnly) {
    const target = {
      driver: spec.driver,
      executor: spec.executor,
      ...(spec.driver === "erdma" ? { deviceProfile: spec.deviceProfile ?? DEFAULT_PROFILE } : {}),
    };
    scenarios = scenarios.filter((s) => planScenario(s, target).run);
  }
  const runDir = resolve(opts.runDir);
  await mkdir(runDir, { recursive: true });
  const started = Date.now();
  const job = { ...(opts.id ? { id: opts.id } : {}), spec };
  const device =
    spec.driver === "erdma"
      ? {
          profileName: spec.deviceProfile ?? DEFAULT_PROFILE,
          profile: loadProfile(spec.deviceProfile ?? DEFAULT_PROFILE),
          traceFile: join(runDir, HW_TRACE_FILE),
        }
      : undefined;
  let guestKernel: PreparedGuest;
  try {
    guestKernel = await preparedGuestFor(kernelRequestOf(spec, baseDir));
  } catch (err) {
    if (opts.kernelErrors !== "record") throw err;
    const record: JobRecord = {
      kernel: describeJob(spec),
      driver: spec.driver,
      executor: spec.executor,
      ...(device ? { deviceProfile: device.profileName } : {}),
      scenarios: [],
      wallMs: Date.now() - started,
      results: [errorResult("kernel", "the kernel builds", err)],
      job,
    };
    await writeRecord(runDir, record);
    return record;
  }
  const series = spec.series ? await recordSeries(spec.series, runDir, baseDir) : undefined;
  const target = {
    driver: spec.driver,
    executor: spec.executor,
    ...(device ? { deviceProfile: device.profileName } : {}),
  };
  let report: SuiteReport;
  let results: CheckResult[];
  try {
    report = await runSuite({
      prepared: guestKernel,
      scenarios,
      runDir,
      ...target,
      ...(device ? { hwTraceFile: device.traceFile } : {}),
      ...(spec.oracle ? { profiles: spec.oracle } : {}),
      probe: (guest, traceFile) =>
        runSmokeChecks(guest, {
          release: guestKernel.kernel.release,
          device: device && {
            profileName: device.profileName,
            profile: device.profile,
            mac: DEFAULT_GUEST_MAC,
            traceFile,
          },
        }),
    });
    results = suiteResults(report);
  } catch (err) {
    report = {
      driver: spec.driver,
      executor: spec.executor,
      scenarios: [],
      boots: 0,
      timings: { bootMs: 0, runMs: 0, judgeMs: 0 },
    };
    results = [errorResult("suite", "the drain suite runs", err)];
  }
  const record: JobRecord = {
    kernel: guestKernel.kernel.describe,
    release: guestKernel.kernel.release,
    ...report,
    device: device ? { profile: device.profileName, trace: HW_TRACE_FILE } : null,
    ...(series ? { series } : {}),
    startedAt: new Date(started).toISOString(),
    wallMs: Date.now() - started,
    results,
    job,
  };
  await writeRecord(runDir, record);
  return record;
}

export const VERDICTS_FILE = "verdicts.json";

async function writeRecord(runDir: string, record: JobRecord): Promise<void> {
  await writeFile(join(runDir, VERDICTS_FILE), `${JSON.stringify(record, null, 2)}\n`);
}

/** Reads a run directory's verdicts.json. */
export async function readRecord(runDir: string): Promise<JobRecord> {
  const file = join(runDir, VERDICTS_FILE);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new HilError("no verdicts in this run directory", { where: file, detail: (err as Error).message });
  }
  try {
    const data = JSON.parse(text) as JobRecord;
    if (!Array.isArray(data.results)) throw new Error("no results array");
    return data;
  } catch (err) {
    throw new HilError(`not a verdicts.json: ${(err as Error).message}`, { where: file });
  }
}
