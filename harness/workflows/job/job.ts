/**
 * One job: the drain suite on one kernel (base + series), one driver, one device, one executor
 * and one scenario selection (the device probes stage first, then each scenario), written into a
 * run directory (verdicts.json through rundir/). `hil run` is one job built from its options;
 * repro runs one, validate two (base, base+series), a matrix one per cell of its plan.
 */

import { existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { HilError } from "../../../util/errors.ts";
import { invocation } from "../../../util/invocation.ts";
import { packageVersion } from "../../../util/package.ts";
import { progress } from "../../../util/progress.ts";
import {
  backendOf,
  bootDevice,
  type ChosenDevice,
  hwTraceOf,
  impliedDevice,
  impliedProfile,
  profileOf,
  recordedDevice,
  smokeDevice,
} from "../../backend/registry.ts";
import { DEFAULT_GUEST_MAC, type PreparedGuest, prepareGuest, withGuest } from "../../boot.ts";
import { isNamedKernel } from "../../kernel/base-spec.ts";
import type { KernelRequest } from "../../kernel/types.ts";
import { runSmokeChecks } from "../../probe/checks.ts";
import { writeClaimedRun } from "../../rundir/claim.ts";
import type { RunRecord } from "../../rundir/schema.ts";
import { runDirFull } from "../../rundir/write.ts";
import { withDriverFragment } from "../../scenario/drivers.ts";
import type { DriverName, ExecutorKind, OracleProfile, Scenario } from "../../scenario/schema.ts";
import { selectScenarios } from "../../scenario/select.ts";
import { defaultGuests } from "../../suite/guests.ts";
import { HW_TRACE_FILE } from "../../suite/hw-trace.ts";
import { planScenario } from "../../suite/plan.ts";
import { type SuiteReport, suiteResults } from "../../suite/results.ts";
import { runSuite } from "../../suite/suite.ts";
import type { CheckResult } from "../../verdict.ts";
import { runVersions } from "../../versions.ts";
import { recordSeries } from "./series-record.ts";

/** What a job runs; paths (series, configs, scenario files) as written, relative to a base dir. */
export type JobSpec = {
  kernel: string;
  series?: string;
  configs?: string[];
  driver: DriverName;
  executor: ExecutorKind;
  /** the device profile, a name or a JSON file (where the driver's device takes one: erdma; default erdma-reflush) */
  deviceProfile?: string;
  /** scenario names or globs from fixtures/scenarios, or paths; comma-separated */
  scenarios: string;
  /** judge under these oracle profiles only */
  oracle?: OracleProfile[];
};

/** A run record of a job: verdicts.json with the job's spec and the directory its paths are relative to. */
export type JobRecord = RunRecord & { job: { id?: string; spec: JobSpec; baseDir?: string } };

export interface RunJobOptions {
  runDir: string;
  /** where the spec's relative paths are (default: the working directory) */
  baseDir?: string;
  /** changes the loaded scenarios before they run (repro judges without known-bug records) */
  adjustScenarios?: (scenarios: Scenario[]) => Scenario[];
  /** leave out the scenarios not meant for the job's driver/executor/profile (as `hil run` does without --scenario) */
  meantOnly?: boolean;
  id?: string;
  /** a kernel that cannot be built: thrown (default), or recorded as an ERROR (a matrix goes on) */
  kernelErrors?: "throw" | "record";
  /**
   * the device instead of the one the spec implies (erdma: the emulated device with its profile;
   * siw: none; backend/registry.ts impliedDevice): another backend's, or null for none
   * (`hil run --no-device`)
   */
  device?: ChosenDevice | null;
  /** the guest NIC's MAC, which the device reports (default DEFAULT_GUEST_MAC) */
  mac?: string;
  /** run each scenario this many times in a row (hil run --repeat) */
  repeat?: number;
  /** guests booted side by side for the suite (hil run --guests; default defaultGuests()) */
  guests?: number;
  /** the device probes stage alone, no suite (`hil run --no-device` without --driver) */
  probeOnly?: boolean;
  /** an XPASS fails the run (recorded in verdicts.json) */
  strict?: boolean;
  /**
   * writes the caller's own files into the run directory (repro.json) while the run still holds it,
   * before verdicts.json: a reader that finds the run whole, or the directory unlocked, finds them too
   */
  alsoWrite?: (record: JobRecord) => Promise<void>;
}

/** The kernel a job boots, its paths made absolute. */
export function kernelRequestOf(
  spec: Pick<JobSpec, "kernel" | "series" | "configs">,
  baseDir = process.cwd(),
): KernelRequest {
  const isPath = (b: string) => !isNamedKernel(b);
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
  const configs = (spec.configs ?? []).map((c) => ` +config ${c}`).join("");
  const kernel = `${spec.series ? `${spec.kernel} + ${spec.series}` : spec.kernel}${configs}`;
  const profile = impliedProfile(spec.driver, spec.deviceProfile);
  const device = profile !== undefined ? `/${profile}` : "";
  return `${kernel} ${spec.driver}${device} ${spec.executor} [${spec.scenarios}]`;
}

/** Checks what can be checked before anything is built: the driver/profile pairing, the profile. */
export function checkJobSpec(spec: JobSpec): void {
  if (spec.deviceProfile && impliedProfile(spec.driver, spec.deviceProfile) === undefined)
    throw new HilError(
      `device profile ${spec.deviceProfile} is for the emulated erdma device; driver ${spec.driver} attaches none`,
    );
  // the device the driver implies, made: a profile that does not load is an error now
  impliedDevice(spec.driver, spec.deviceProfile ? { deviceProfile: spec.deviceProfile } : {});
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

/** The device a job attaches: the options' choice, else what the spec implies. */
function jobDevice(spec: JobSpec, opts: RunJobOptions, runDir: string): ChosenDevice | undefined {
  const chosen =
    opts.device !== undefined
      ? (opts.device ?? undefined)
      : impliedDevice(spec.driver, {
          ...(spec.deviceProfile ? { deviceProfile: spec.deviceProfile } : {}),
          mac: opts.mac ?? DEFAULT_GUEST_MAC,
        });
  // a device with a hardware trace keeps it in the run directory
  const hwTrace = backendOf(chosen).hwTrace;
  return hwTrace ? hwTrace.keepIn(chosen, join(runDir, HW_TRACE_FILE)) : chosen;
}

/**
 * The scenarios the job runs, and the notices of those left out: said once the inputs are known
 * good (a notice before an error would push the error out of sight).
 */
async function selectJobScenarios(
  spec: JobSpec,
  opts: RunJobOptions,
  baseDir: string,
  device: ChosenDevice | undefined,
): Promise<{ scenarios: Scenario[]; notices: string[] }> {
  let scenarios = await selectScenarios(scenarioPatterns(spec, baseDir));
  if (opts.adjustScenarios) scenarios = opts.adjustScenarios(scenarios);
  const notices: string[] = [];
  if (!opts.meantOnly) return { scenarios, notices };
  const profile = profileOf(device);
  const target = {
    driver: spec.driver,
    executor: spec.executor,
    ...(profile !== undefined ? { deviceProfile: profile } : {}),
  };
  const verbs = scenarios.filter((s) => s.workload === "verbs");
  if (verbs.length < scenarios.length)
    notices.push(
      `[run] ${scenarios.length - verbs.length} ULP workload scenario(s) left out (their kernel needs --config ${ULP_CONFIG}): select them with --scenario 'ulp-*'`,
    );
  scenarios = verbs;
  const meant = scenarios.filter((s) => planScenario(s, target).run);
  if (meant.length < scenarios.length) {
    const name = profile ?? (device ? backendOf(device).kind : undefined);
    const on = name !== undefined ? `/${name}` : "";
    notices.push(
      `[run] ${scenarios.length - meant.length} scenario(s) not meant for ${spec.driver}/${spec.executor}${on} left out`,
    );
  }
  return { scenarios: meant, notices };
}

/** The device probes stage alone: boot, the smoke checks, nothing else. */
async function probeOnly(
  prepared: PreparedGuest,
  device: ChosenDevice | undefined,
  runDir: string,
  mac: string,
): Promise<CheckResult[]> {
  const step = progress.step(`[run] ${prepared.kernel.describe}`);
  try {
    const results = await withGuest(
      prepared,
      { keepConsole: join(runDir, "console.log"), mac, device: bootDevice(device) },
      (guest) =>
        runSmokeChecks(guest, {
          release: prepared.kernel.release,
          device: smokeDevice(device, hwTraceOf(device)),
        }),
    );
    step.succeed();
    return results;
  } catch (err) {
    step.fail();
    return [errorResult("guest-boot", "the guest boots and answers over SSH", recordable(runDir, err))];
  }
}

/**
 * Runs the job and writes its run directory, which it holds (claims) meanwhile: a directory another
 * run is writing, or one that holds a run already, is refused (rundir/claim.ts). Bad input (a
 * scenario file, a profile, a series that does not apply) throws HilError before the suite starts;
 * with `kernelErrors: "record"` a kernel that cannot be built is recorded as an ERROR result
 * instead. A full file system under the run directory throws one HilError (exit 3). Whatever
 * throws leaves the run directory as it was: what the job wrote is discarded.
 */
export async function runJob(spec: JobSpec, opts: RunJobOptions): Promise<JobRecord> {
  const baseDir = opts.baseDir ?? process.cwd();
  checkJobSpec(spec);
  const runDir = resolve(opts.runDir);
  const device = jobDevice(spec, opts, runDir);
  const { scenarios, notices } = opts.probeOnly
    ? { scenarios: [], notices: [] }
    : await selectJobScenarios(spec, opts, baseDir, device);
  const kernelSpec = withUlpConfig(withDriverConfig(spec), scenarios);
  return writeClaimedRun(runDir, async () => {
    const record = await runClaimedJob(kernelSpec, opts, { baseDir, runDir, device, scenarios, notices });
    await opts.alsoWrite?.(record);
    return record;
  });
}

/** Whether the fragments name the shipped fragment `name` (guest/kconfig/<name>.config), by name or by path. */
function namesFragment(configs: readonly string[], name: string): boolean {
  return configs.some((c) => c === name || basename(c) === `${name}.config`);
}

/**
 * The spec with the config fragment its driver's module needs (rxe: guest/kconfig/rxe.config, kept
 * out of base.config so the default kernels keep their cache keys) added first when its fragments
 * do not name it already.
 */
export function withDriverConfig(spec: JobSpec): JobSpec {
  const configs = spec.configs ?? [];
  const withFragment = withDriverFragment(configs, spec.driver);
  if (withFragment.length === configs.length) return spec;
  progress.info(
    `[run] --driver ${spec.driver}: the kernel gets --config ${withFragment[0]} (guest/kconfig/${withFragment[0]}.config)`,
  );
  return { ...spec, configs: withFragment };
}

/** The shipped config fragment a ULP workload's kernel needs (guest/kconfig/ulp.config). */
export const ULP_CONFIG = "ulp";

/**
 * The spec with the ULP config fragment added when a selected scenario runs a ULP workload and the
 * spec's fragments do not name it (said on stderr): the block layer, nvme-rdma, nvmet-rdma.
 */
export function withUlpConfig(spec: JobSpec, scenarios: readonly Scenario[]): JobSpec {
  const configs = spec.configs ?? [];
  const named = namesFragment(configs, ULP_CONFIG);
  const ulp = scenarios.filter((s) => s.workload !== "verbs");
  if (ulp.length === 0 || named) return spec;
  progress.info(
    `[run] ${ulp.length} ULP workload scenario(s) selected: the kernel gets --config ${ULP_CONFIG} (guest/kconfig/ulp.config)`,
  );
  return { ...spec, configs: [...configs, ULP_CONFIG] };
}

/** A failure the job records as an ERROR result, or rethrows: a full disk cannot be recorded. */
function recordable(runDir: string, err: unknown): unknown {
  const full = runDirFull(runDir, err);
  if (full) throw full;
  return err;
}

/** The job's run: everything but verdicts.json, which the caller writes last. */
async function runClaimedJob(
  spec: JobSpec,
  opts: RunJobOptions,
  ctx: {
    baseDir: string;
    runDir: string;
    device: ChosenDevice | undefined;
    scenarios: Scenario[];
    notices: readonly string[];
  },
): Promise<JobRecord> {
  const { baseDir, runDir, device, scenarios } = ctx;
  const started = Date.now();
  const job = { ...(opts.id ? { id: opts.id } : {}), spec, baseDir: resolve(baseDir) };
  const made = invocation();
  const mac = opts.mac ?? DEFAULT_GUEST_MAC;
  const profile = profileOf(device);
  const kernelRequest = kernelRequestOf(spec, baseDir);
  let guestKernel: PreparedGuest;
  try {
    guestKernel = await preparedGuestFor(kernelRequest);
  } catch (err) {
    if (opts.kernelErrors !== "record") throw err;
    return {
      kernel: describeJob(spec),
      driver: spec.driver,
      executor: spec.executor,
      ...(profile !== undefined ? { deviceProfile: profile } : {}),
      scenarios: [],
      wallMs: Date.now() - started,
      results: [errorResult("kernel", "the kernel builds", err)],
      job,
      versions: { hil: packageVersion() },
      ...(made ? { invocation: made } : {}),
    };
  }
  const prepareMs = Date.now() - started;
  const series = spec.series ? await recordSeries(spec.series, runDir, baseDir) : undefined;
  for (const notice of ctx.notices) progress.info(notice);
  const head = {
    kernel: guestKernel.kernel.describe,
    release: guestKernel.kernel.release,
  };
  const tail = {
    ...(opts.strict ? { strict: true } : {}),
    device: recordedDevice(device, HW_TRACE_FILE),
    ...(series ? { series } : {}),
    startedAt: new Date(started).toISOString(),
    prepareMs,
    versions: runVersions(guestKernel, kernelRequest.base),
    ...(made ? { invocation: made } : {}),
  };
  if (opts.probeOnly) {
    const results = await probeOnly(guestKernel, device, runDir, mac);
    return { ...head, ...tail, wallMs: Date.now() - started, results, job };
  }
  const target = {
    driver: spec.driver,
    executor: spec.executor,
    ...(profile !== undefined ? { deviceProfile: profile } : {}),
  };
  let report: SuiteReport;
  let results: CheckResult[];
  try {
    report = await runSuite({
      prepared: guestKernel,
      scenarios,
      runDir,
      ...target,
      ...(device ? { device } : {}),
      ...(opts.mac ? { mac: opts.mac } : {}),
      ...(spec.oracle ? { profiles: spec.oracle } : {}),
      ...(opts.repeat && opts.repeat > 1 ? { repeat: opts.repeat } : {}),
      guests: opts.guests ?? defaultGuests(),
      probe: (guest, traceFile) =>
        runSmokeChecks(guest, {
          release: guestKernel.kernel.release,
          device: smokeDevice(device, traceFile),
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
    results = [errorResult("suite", "the drain suite runs", recordable(runDir, err))];
  }
  return {
    ...head,
    ...report,
    ...tail,
    wallMs: Date.now() - started,
    results,
    job,
  };
}
