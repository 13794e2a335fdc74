import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { DEFAULT_GUEST_MAC, prepareGuest, withGuest } from "../boot.ts";
import { runSmokeChecks } from "../probe/checks.ts";
import { renderRepeatedTable, renderScenarioTable } from "../report/scenario-table.ts";
import { renderVerdictTable } from "../report/table.ts";
import {
  DRIVERS,
  type DriverName,
  EXECUTORS,
  type ExecutorKind,
  ORACLE_PROFILES,
  type OracleProfile,
} from "../scenario/schema.ts";
import { selectScenarios } from "../scenario/select.ts";
import { HW_TRACE_FILE } from "../suite/hw-trace.ts";
import { planScenario } from "../suite/plan.ts";
import { MAX_REPEAT } from "../suite/repeat.ts";
import { runSuite, suiteResults } from "../suite/suite.ts";
import { type CheckResult, exitCodeFor } from "../verdict.ts";
import { recordSeries } from "../workflows/series-record.ts";
import {
  addDeviceOptions,
  bootDevice,
  type ChosenDevice,
  type DeviceOptionValues,
  deviceOptions,
  recordedDevice,
  smokeDevice,
} from "./device-options.ts";
import { addKernelOptions, type KernelOptionValues, kernelRequest } from "./kernel-options.ts";

/** The hardware trace of the emulated device, in the run directory (hw-trace-<n>.jsonl after a reboot). */
export { HW_TRACE_FILE };

interface RunOptionValues extends KernelOptionValues, DeviceOptionValues {
  runDir?: string;
  json?: boolean;
  scenario?: string;
  executor?: ExecutorKind;
  driver?: DriverName;
  oracle?: OracleProfile[];
  repeat?: number;
}

function oracleList(value: string): OracleProfile[] {
  const list = value.split(",").map((v) => v.trim());
  for (const v of list)
    if (!(ORACLE_PROFILES as readonly string[]).includes(v))
      throw new InvalidArgumentError(`"${v}" is not an oracle profile (${ORACLE_PROFILES.join(", ")})`);
  return list as OracleProfile[];
}

/** --repeat: a whole number from 1 to MAX_REPEAT. */
export function repeatCount(value: string): number {
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_REPEAT)
    throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_REPEAT}, got "${value}"`);
  return n;
}

/**
 * The guest smoke checks alone: with --no-device and no suite option (the suite needs a device
 * on erdma; --driver siw runs it without one).
 */
function smokeOnly(opts: RunOptionValues): boolean {
  return !opts.device && opts.driver === undefined;
}

/** The emulated device keeps its hardware trace in the run directory; an external one has none. */
function withRunTrace(device: ChosenDevice | undefined, runDir: string): ChosenDevice | undefined {
  return device?.kind === "emulated" ? { ...device, traceFile: join(runDir, HW_TRACE_FILE) } : device;
}

function defaultRunDir(): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return resolve("runs", stamp);
}

export function register(program: Command): void {
  const cmd = program
    .command("run")
    .description(
      "the main job: build what is needed, boot the kernel with the emulated erdma device, check that the device probes, run the drain suite and judge it",
    )
    .option(
      "--run-dir <dir>",
      `where the verdicts, the console log and the device's hardware trace (${HW_TRACE_FILE}) go (default: runs/<timestamp>)`,
    )
    .option("--json", "print the verdicts as JSON instead of a table")
    .option(
      "--scenario <glob>",
      "run the drain suite: scenario names from fixtures/scenarios (e.g. 'drain-*') or paths to scenario files (comma-separated)",
    )
    .addOption(
      new Option("--executor <kind>", "the in-guest executor of the drain suite (default: kernel)").choices(
        EXECUTORS,
      ),
    )
    .addOption(
      new Option(
        "--driver <name>",
        "the RDMA driver under test in the drain suite: erdma (the emulated device; default) or siw (soft-iWARP on the guest NIC, no device)",
      ).choices(DRIVERS),
    )
    .option(
      "--oracle <profiles>",
      `judge the drain suite under these oracle profiles only (comma-separated: ${ORACLE_PROFILES.join(", ")}; default: each scenario's own)`,
      oracleList,
    )
    .option(
      "--repeat <n>",
      `run each scenario n times in a row (1-${MAX_REPEAT}, default 1) and say whether its verdicts are stable`,
      repeatCount,
    )
    .addHelpText(
      "after",
      [
        "",
        "run is the drain suite. Defaults: --kernel debian:6.12, --driver erdma, --profile erdma-reflush, --executor",
        "kernel, and every scenario of fixtures/scenarios meant for that combination (with --scenario, those not meant",
        'for it are listed as SKIP). First stage on the first guest, "the device probes": the guest smoke checks (the',
        "kernel built here runs, erdma loads and probes, rdma-core sees it, a verbs object lifecycle, a clean console);",
        "if one fails, every scenario is a MISS. Then each scenario on that guest (rebooted after a hang), judged by the",
        "oracle (rules 1-9 of DESIGN.md, per oracle profile): a verdict table with a column per profile and a run",
        "directory with verdicts.json, traces/<scenario>.jsonl, traces/<scenario>.hw.jsonl (the device's hardware",
        "trace of that scenario), console.log and hw-trace.jsonl. --no-device (without --driver) runs the smoke",
        "checks alone; --driver siw runs the suite on soft-iWARP without the device.",
        "",
        "--device-socket <path> runs it all on an external vfio-user device server you started (an RTL co-simulation,",
        "an FPGA bridge, another model) instead of the emulated device. It must present an erdma function",
        `(0x1ded:0x107f) that reports the guest NIC's MAC (${DEFAULT_GUEST_MAC}, or --mac). Its attributes are not`,
        "compared with a profile, scenarios with fault steps are MISS (no control channel to arm them on), there is",
        'no hardware trace, verdicts.json records device: { external: "<path>" }, and hil never stops the server.',
        "",
        "Known driver bugs recorded in a scenario (known_bugs: rules, driver, kernels, device profiles, executors,",
        "reference) make those rules' FAILs XFAIL; a recorded rule that holds is an XPASS (shown, not a failure).",
        "",
        "--repeat <n> runs each scenario n times in a row on the same guest (A#1..A#n, then B#1..), each repetition",
        "judged on its own and kept as <scenario>#<k> in verdicts.json and traces/. The table has a line per scenario:",
        "the verdict when every repetition agrees, else e.g. FLAKY 3/5 FAIL (3 of 5 repetitions FAIL; the reason names",
        'the first repetition that differs); the summary line adds "k flaky", and verdicts.json a stability entry per',
        "scenario and oracle profile. A FAIL in any repetition fails the run; a scenario flaky between PASS, XFAIL and",
        "XPASS only is counted as flaky but does not.",
        "",
        "Exit status: 0 every verdict PASS, SKIP, XFAIL or XPASS; 1 a check or rule FAILed; 3 the harness could not judge",
        "(ERROR or MISS, e.g. a fault the device model has no equivalent for), which wins over 1; 2 bad input.",
        "",
      ].join("\n"),
    );
  addDeviceOptions(addKernelOptions(cmd)).action(async (opts: RunOptionValues) => {
    if (!smokeOnly(opts)) return runDrainSuite(opts);
    if ((opts.repeat ?? 1) > 1)
      throw new HilError(
        "--repeat repeats the drain suite's scenarios; --no-device without --driver runs the smoke checks alone",
      );
    const runDir = opts.runDir ? resolve(opts.runDir) : defaultRunDir();
    const device = withRunTrace(deviceOptions(opts), runDir);
    await mkdir(runDir, { recursive: true });
    const prepared = await prepareGuest(kernelRequest(opts));
    const consolePath = join(runDir, "console.log");
    const step = progress.step(`[run] ${prepared.kernel.describe}`);
    let results: CheckResult[];
    try {
      results = await withGuest(
        prepared,
        {
          keepConsole: consolePath,
          mac: opts.mac ?? DEFAULT_GUEST_MAC,
          device: bootDevice(device),
        },
        (guest) =>
          runSmokeChecks(guest, {
            release: prepared.kernel.release,
            device: smokeDevice(device, device?.kind === "emulated" ? device.traceFile : undefined),
          }),
      );
      step.succeed();
    } catch (err) {
      step.fail();
      results = [
        {
          id: "guest-boot",
          title: "the guest boots and answers over SSH",
          verdict: "ERROR",
          reason: err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err),
          evidence:
            err instanceof Error && "format" in err
              ? String((err as { format(): string }).format()).split("\n")
              : [],
        },
      ];
    }
    const record = {
      kernel: prepared.kernel.describe,
      release: prepared.kernel.release,
      device: recordedDevice(device, HW_TRACE_FILE),
      results,
    };
    await writeFile(join(runDir, "verdicts.json"), `${JSON.stringify(record, null, 2)}\n`);
    if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else process.stdout.write(renderVerdictTable(results));
    progress.info(`[run] run directory: ${runDir}`);
    process.exitCode = exitCodeFor(results);
  });
}

async function runDrainSuite(opts: RunOptionValues): Promise<void> {
  const driver = opts.driver ?? "erdma";
  const executor = opts.executor ?? "kernel";
  // contradictions first (--device-socket with --no-device or --driver siw, --profile with siw)
  const chosen = deviceOptions(opts, { driver });
  if (driver === "erdma" && !chosen)
    throw new HilError("--driver erdma needs the emulated device (drop --no-device, or use --driver siw)");
  const runDir = opts.runDir ? resolve(opts.runDir) : defaultRunDir();
  const device = withRunTrace(chosen, runDir);
  const target = {
    driver,
    executor,
    ...(device?.kind === "emulated" ? { deviceProfile: device.profileName } : {}),
  };
  const deviceName = device?.kind === "emulated" ? `/${device.profileName}` : device ? "/external" : "";
  let scenarios = await selectScenarios(opts.scenario);
  if (opts.scenario === undefined) {
    const meant = scenarios.filter((s) => planScenario(s, target).run);
    if (meant.length < scenarios.length)
      progress.info(
        `[run] ${scenarios.length - meant.length} scenario(s) not meant for ${driver}/${executor}${deviceName} left out`,
      );
    scenarios = meant;
  }
  await mkdir(runDir, { recursive: true });
  const prepared = await prepareGuest(kernelRequest(opts));
  const series = opts.series ? await recordSeries(opts.series, runDir) : undefined;
  let report: Awaited<ReturnType<typeof runSuite>>;
  let results: CheckResult[];
  const started = Date.now();
  try {
    report = await runSuite({
      prepared,
      scenarios,
      runDir,
      ...target,
      ...(device?.kind === "emulated" && device.traceFile ? { hwTraceFile: device.traceFile } : {}),
      ...(device?.kind === "external" ? { deviceSocket: device.socketPath } : {}),
      ...(opts.mac ? { mac: opts.mac } : {}),
      ...(opts.oracle ? { profiles: opts.oracle } : {}),
      ...(opts.repeat && opts.repeat > 1 ? { repeat: opts.repeat } : {}),
      probe: (guest, traceFile) =>
        runSmokeChecks(guest, { release: prepared.kernel.release, device: smokeDevice(device, traceFile) }),
    });
    results = suiteResults(report);
  } catch (err) {
    report = { driver, executor, scenarios: [], boots: 0, timings: { bootMs: 0, runMs: 0, judgeMs: 0 } };
    results = [
      {
        id: "suite",
        title: "the drain suite runs",
        verdict: "ERROR",
        reason: err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err),
        evidence:
          err instanceof Error && "format" in err
            ? String((err as { format(): string }).format()).split("\n")
            : [],
      },
    ];
  }
  const record = {
    kernel: prepared.kernel.describe,
    release: prepared.kernel.release,
    ...report,
    device: recordedDevice(device, HW_TRACE_FILE),
    ...(series ? { series } : {}),
    startedAt: new Date(started).toISOString(),
    wallMs: Date.now() - started,
    results,
  };
  await writeFile(join(runDir, "verdicts.json"), `${JSON.stringify(record, null, 2)}\n`);
  if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
  else
    process.stdout.write(
      results.some((r) => r.id === "suite")
        ? renderVerdictTable(results)
        : report.stability
          ? renderRepeatedTable(results, report.stability)
          : renderScenarioTable(results),
    );
  progress.info(`[run] run directory: ${runDir}`);
  process.exitCode = exitCodeFor(results);
}
