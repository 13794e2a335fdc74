import { resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import {
  askedBackend,
  backendOf,
  impliedBackend,
  oneGuestOptions,
  profileOf,
  runsRemotely,
} from "../backend/registry.ts";
import type { RemoteTarget } from "../backend/remote-target.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import { renderRepeatedTable, renderScenarioTable } from "../report/scenario-table.ts";
import { renderVerdictTable } from "../report/table.ts";
import { DRIVERS, type DriverName, EXECUTORS } from "../scenario/schema.ts";
import { selectScenarios } from "../scenario/select.ts";
import { MAX_DEFAULT_GUESTS, MAX_GUESTS } from "../suite/guests.ts";
import { HW_TRACE_FILE } from "../suite/hw-trace.ts";
import { planScenario } from "../suite/plan.ts";
import { MAX_REPEAT } from "../suite/repeat.ts";
import { runOnTarget } from "../target/run.ts";
import { exitCodeFor } from "../verdict.ts";
import { type JobRecord, type JobSpec, runJob } from "../workflows/job/job.ts";
import { addDeviceOptions, type DeviceOptionValues } from "./device-options.ts";
import { addKernelOptions, type KernelOptionValues, resolvedKernelRequest } from "./kernel-options.ts";
import { addRulesOption } from "./rules-option.ts";
import type { SuiteOptionValues } from "./suite-options.ts";
import { addTargetOptions, checkTargetOptions, type TargetOptionValues } from "./target-options.ts";

/** The hardware trace of the emulated device, in the run directory (hw-trace-<n>.jsonl for the n-th boot). */
export { HW_TRACE_FILE };

interface RunOptionValues
  extends KernelOptionValues,
    DeviceOptionValues,
    TargetOptionValues,
    SuiteOptionValues {
  runDir?: string;
  json?: boolean;
  scenario?: string;
  repeat?: number;
  guests?: number;
  strict?: boolean;
}

/** --repeat: a whole number from 1 to MAX_REPEAT. */
export function repeatCount(value: string): number {
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_REPEAT)
    throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_REPEAT}, got "${value}"`);
  return n;
}

/** --guests: a whole number from 1 to MAX_GUESTS. */
export function guestCount(value: string): number {
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_GUESTS)
    throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_GUESTS}, got "${value}"`);
  return n;
}

/**
 * The guest smoke checks alone: with --no-device and no suite option (the suite needs a device
 * on erdma; --driver siw runs it without one).
 */
function smokeOnly(opts: RunOptionValues): boolean {
  return !opts.device && opts.driver === undefined;
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
        "the RDMA driver under test in the drain suite: erdma (the emulated device; default), siw (soft-iWARP on the guest NIC, no device) or rxe (soft-RoCE on the guest NIC, no device; adds --config rxe)",
      ).choices(DRIVERS),
    )
    .option("--strict", "a known bug's rule that holds (XPASS: its record is stale) fails the run (exit 1)")
    .option(
      "--repeat <n>",
      `run each scenario n times in a row (1-${MAX_REPEAT}, default 1) and say whether its verdicts are stable`,
      repeatCount,
    )
    .option(
      "--guests <n>",
      `boot n guests side by side, each running the next scenario when free (1-${MAX_GUESTS}; default one per CPU, at most ${MAX_DEFAULT_GUESTS}; one with --device-socket or --device-pci)`,
      guestCount,
    )
    .addHelpText(
      "after",
      [
        "",
        "run is the drain suite. Defaults: --kernel debian:6.12, --driver erdma, --device-profile erdma-reflush,",
        "--executor kernel, and every scenario of fixtures/scenarios meant for that combination (with --scenario, those",
        'not meant for it are listed as SKIP). First stage on the first guest, "the device probes": the guest smoke',
        "checks (the kernel built here runs, erdma loads and probes, rdma-core sees it, a verbs object lifecycle, a clean",
        "console); if one fails, every scenario is a MISS. Then each scenario on that guest and the others booted",
        "beside it (--guests; a guest is rebooted after a hang, and the scenarios whose hang is foreseen run last),",
        "judged by the oracle (rules 1-9 of the README's What is judged) under each of its rule sets (ib, iwarp-rdmac,",
        "linux; --rules picks some): a verdict table with a column per rule set and a run directory with verdicts.json,",
        "traces/<scenario>.jsonl, traces/<scenario>.hw.jsonl (the device's hardware trace of that scenario),",
        "console.log and hw-trace.jsonl. --no-device (without --driver) runs the smoke checks alone; --driver siw runs",
        "the suite on soft-iWARP without the device. --driver rxe runs it on soft-RoCE (rdma_rxe linked to the guest",
        "NIC as rxe0), judged under the ib and linux rule sets only (RoCE is an IB transport: no iwarp-rdmac); its",
        "kernel gets --config rxe (guest/kconfig/rxe.config: CONFIG_RDMA_RXE, not in base.config) added for it.",
        "",
        "--device-socket <path> runs it all on an external vfio-user device server you started (an RTL co-simulation,",
        "an FPGA bridge, another model) instead of the emulated device. It must present an erdma function",
        `(0x1ded:0x107f) that reports the guest NIC's MAC (${DEFAULT_GUEST_MAC}, or --mac). Its attributes are not`,
        "compared with a profile, scenarios with fault steps are SKIP (no control channel to arm them on), there is",
        'no hardware trace, verdicts.json records device: { external: "<path>" }, and hil never stops the server.',
        "",
        "Known driver bugs recorded in a scenario (known_bugs: rules, driver, kernels, device profiles, executors,",
        "failure pattern, reference) make those rules' FAILs XFAIL when every problem matches the record's failure",
        "pattern; a recorded rule that holds is an XPASS (shown, not a failure; with --strict it fails the run).",
        "",
        "--repeat <n> runs each scenario n times in a row on the same guest (A#1..A#n, then B#1..), each repetition",
        "judged on its own and kept as <scenario>#<k> in verdicts.json and traces/. The table has a line per scenario:",
        "the verdict when every repetition agrees, else e.g. FLAKY 3/5 FAIL (3 of 5 repetitions FAIL; the reason names",
        'the first repetition that differs); the summary line adds "k flaky", and verdicts.json a stability entry per',
        "scenario and rule set. A FAIL in any repetition fails the run; a scenario flaky between PASS, XFAIL and",
        "XPASS only is counted as flaky but does not.",
        "",
        "A run directory holds one run: the run locks it (.hil-run.lock, its pid) while it writes it, and a directory",
        "another run is writing or that holds a run already (verdicts.json, traces/, console.log, ...) is refused;",
        "a lock whose run is gone is taken over with a notice. Every file is written whole (temp + rename),",
        "verdicts.json last; a run that cannot finish (a full disk) removes what it wrote.",
        "",
        "Exit status: 0 every verdict PASS, SKIP, XFAIL or XPASS; 1 a check or rule FAILed; 3 the harness could not judge",
        "(ERROR or MISS, e.g. a fault the device model has no equivalent for), which wins over 1, or no space was left",
        "on the run directory's file system; 2 bad input (a run directory in use or holding a run too).",
        "",
      ].join("\n"),
    );
  addRulesOption(cmd, "judge the drain suite");
  addTargetOptions(addDeviceOptions(addKernelOptions(cmd))).action(async (opts: RunOptionValues) => {
    checkTargetOptions(opts);
    const probeOnly = smokeOnly(opts);
    const driver = opts.driver ?? "erdma";
    const extra = probeOnly ? {} : { driver };
    // the backend the options ask for, before its device is checked (a socket, a PCI function)
    const backend = askedBackend(opts, extra);
    if ((opts.guests ?? 1) > backend.maxGuests)
      throw new HilError(
        `--guests ${opts.guests}: the device of ${oneGuestOptions()} can be given to one guest only`,
        { where: "--guests" },
      );
    if (probeOnly && (opts.repeat ?? 1) > 1)
      throw new HilError(
        "--repeat repeats the drain suite's scenarios; --no-device without --driver runs the smoke checks alone",
      );
    // contradictions first (--device-socket with --no-device or --driver siw, --device-profile with siw)
    const device = backend.choose(opts, extra);
    // a device hil boots no guest for: the run is the remote machine's (harness/target)
    if (runsRemotely(device)) return runTargetCommand(opts, device);
    if (!probeOnly && !backendOf(device).drivers.includes(driver))
      throw new HilError(
        `--driver ${driver} needs the ${impliedBackend(driver).kind} device (drop --no-device, or use --driver ${backend.drivers.join(" or ")})`,
      );
    const profile = profileOf(device);
    const spec: JobSpec = {
      kernel: opts.kernel,
      ...(opts.series ? { series: opts.series } : {}),
      ...(opts.config.length > 0 ? { configs: opts.config } : {}),
      driver,
      executor: opts.executor ?? "kernel",
      ...(profile !== undefined ? { deviceProfile: profile } : {}),
      scenarios: opts.scenario ?? "*",
      ...(opts.rules ? { oracle: opts.rules } : {}),
    };
    const runDir = opts.runDir ? resolve(opts.runDir) : defaultRunDir();
    const record = await runJob(spec, {
      runDir,
      meantOnly: opts.scenario === undefined,
      device: device ?? null,
      ...(opts.mac ? { mac: opts.mac } : {}),
      ...(opts.repeat && opts.repeat > 1 ? { repeat: opts.repeat } : {}),
      ...(opts.guests ? { guests: opts.guests } : {}),
      probeOnly,
      ...(opts.strict ? { strict: true } : {}),
    });
    if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else process.stdout.write(renderRunTable(record));
    progress.info(`[run] run directory: ${runDir}`);
    process.exitCode = exitCodeFor(record.results, { strict: opts.strict === true });
  });
}

/** As a run on a guest: without --scenario, only the scenarios meant for the driver (and the kernel executor). */
async function targetScenarios(glob: string | undefined, driver: DriverName) {
  const all = await selectScenarios(glob ?? "*");
  return glob === undefined ? all.filter((s) => planScenario(s, { driver, executor: "kernel" }).run) : all;
}

/** hil run --target: the suite on the target's device, judged into the run directory. */
async function runTargetCommand(opts: RunOptionValues, target: RemoteTarget): Promise<void> {
  const driver = opts.driver ?? "erdma";
  const runDir = opts.runDir ? resolve(opts.runDir) : defaultRunDir();
  const record = await runOnTarget({
    target: target.url,
    ...(target.identity !== undefined ? { identity: target.identity } : {}),
    ...(target.deviceName !== undefined ? { device: target.deviceName } : {}),
    kernel: resolvedKernelRequest(opts),
    scenarios: await targetScenarios(opts.scenario, driver),
    driver,
    ...(opts.rules ? { profiles: opts.rules } : {}),
    runDir,
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
  else process.stdout.write(renderScenarioTable(record.results));
  progress.info(`[run] run directory: ${runDir}`);
  process.exitCode = exitCodeFor(record.results, { strict: opts.strict === true });
}

/** The verdict table: per check for the probe stage alone or a broken suite, else per scenario. */
function renderRunTable(record: JobRecord): string {
  const results = record.results;
  if (record.scenarios === undefined || results.some((r) => r.id === "suite"))
    return renderVerdictTable(results);
  return record.stability ? renderRepeatedTable(results, record.stability) : renderScenarioTable(results);
}
