import { resolve } from "node:path";
import { type Command, Option } from "commander";
import { progress } from "../../util/progress.ts";
import { judgeLavaLog } from "../lava/judge-log.ts";
import { runLavaJobLocally } from "../lava/local-run.ts";
import { makeLavaJob } from "../lava/make-job.ts";
import { renderScenarioTable } from "../report/scenario-table.ts";
import { withDriverFragment } from "../scenario/drivers.ts";
import { DRIVERS, type DriverName, type OracleProfile } from "../scenario/schema.ts";
import { selectScenarios } from "../scenario/select.ts";
import { exitCodeFor } from "../verdict.ts";
import { addDeviceProfileOption } from "./device-options.ts";
import { addKernelOptions, type KernelOptionValues, resolvedKernelRequest } from "./kernel-options.ts";
import { addRulesOption } from "./rules-option.ts";

interface LavaJobOptionValues extends KernelOptionValues {
  outDir: string;
  scenario?: string;
  driver?: DriverName;
  deviceProfile?: string;
  artifactUrl?: string;
  addr?: string;
  qemuOption: string[];
  rules?: OracleProfile[];
}

const collect = (value: string, previous: string[]) => [...previous, value];

function registerLavaJob(program: Command): void {
  const cmd = program
    .command("lava-job")
    .description(
      "write a LAVA job that runs the drain suite on a lab's device (kernel, ramdisk with hil_kverbs and the runner, job.yaml, the plan hil judge reads its log with)",
    )
    .requiredOption("--out-dir <dir>", "the new directory to write the job into")
    .option(
      "--scenario <glob>",
      "the scenarios (names from fixtures/scenarios or paths, comma-separated; default all)",
    )
    .addOption(
      new Option(
        "--driver <name>",
        "the RDMA driver on the device under test (default: erdma; rxe adds --config rxe)",
      ).choices(DRIVERS),
    )
    .option(
      "--artifact-url <url>",
      "where the lab fetches bzImage and ramdisk.cpio.gz from (default: file:// URLs of --out-dir)",
    )
    .option(
      "--addr <ipv4>",
      "the address of the RDMA device's netdev on the device under test (default: 10.0.2.15, a QEMU guest)",
    )
    .option(
      "--qemu-option <arg>",
      "an extra QEMU argument for a qemu device type, e.g. the device (repeatable)",
      collect,
      [],
    );
  addRulesOption(addDeviceProfileOption(addKernelOptions(cmd)), "judge the job's scenarios").addHelpText(
    "after",
    [
      "",
      "The job (device type qemu, x86_64) deploys bzImage and ramdisk.cpio.gz to tmpfs, boots with hil.shell (a root",
      'shell on the console, prompt "hil# ") and runs /hil-lava/run.sh as an inline test definition. The runner',
      "loads hil_kverbs, runs each scenario's batches with the module's watchdog, prints its statuses, trace and",
      "kernel log as HIL-LAVA lines on the console, and records a lava-test-case per scenario. For a board, keep the",
      "ramdisk and the runner and change the deploy and boot actions to the board's. Not in a LAVA job: scenarios",
      "with device faults (no control channel), and a scenario that leaves the executor stuck ends the job's",
      "scenarios (no reboot). Then: hil judge <the job's log> --plan <out-dir>/lava-plan.json.",
      "",
    ].join("\n"),
  );
  cmd.action(async (opts: LavaJobOptionValues) => {
    const driver = opts.driver ?? "erdma";
    const scenarios = await selectScenarios(opts.scenario ?? "*");
    const kernel = resolvedKernelRequest(opts);
    const { outDir, plan } = await makeLavaJob({
      // a software driver's module where base.config lacks it (rxe: guest/kconfig/rxe.config)
      kernel: { ...kernel, configs: withDriverFragment(kernel.configs, driver) },
      scenarios,
      driver,
      ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
      outDir: opts.outDir,
      ...(opts.artifactUrl ? { artifactUrl: opts.artifactUrl } : {}),
      ...(opts.addr ? { addr: opts.addr } : {}),
      ...(opts.rules ? { profiles: opts.rules } : {}),
      qemuOptions: opts.qemuOption,
    });
    process.stdout.write(
      `${outDir}: ${plan.scenarios.length} scenario(s) planned, ${plan.notPlanned.length} left out (judged as SKIP/MISS)\n`,
    );
  });
}

function registerJudge(program: Command): void {
  program
    .command("judge")
    .description("judge what a LAVA job from hil lava-job brought back: its log, against the job's plan")
    .argument("<log>", "the job's log: LAVA's log.yaml, or the console text")
    .requiredOption("--plan <file>", "the lava-plan.json of the hil lava-job directory the job ran")
    .option("--run-dir <dir>", "where verdicts.json and the traces go (default: runs/judge-<timestamp>)")
    .option("--json", "print the verdicts as JSON instead of a table")
    .addHelpText(
      "after",
      [
        "",
        "Each scenario is judged by the same rules as in hil run. A scenario the job did not reach, or whose output",
        "the log lost or mangled (each batch's digest is checked), is a MISS naming why.",
        "",
        "Exit status: as hil run's: 0 every verdict PASS, SKIP, XFAIL or XPASS; 1 a rule FAILed; 3 ERROR or MISS; 2",
        "bad input (a log without the runner's lines, a log of another plan).",
        "",
      ].join("\n"),
    )
    .action(async (log: string, opts: { plan: string; runDir?: string; json?: boolean }) => {
      const runDir = resolve(opts.runDir ?? `runs/judge-${new Date().toISOString().replace(/[:.]/g, "-")}`);
      const record = await judgeLavaLog({ log, plan: opts.plan, runDir });
      if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
      else process.stdout.write(renderScenarioTable(record.results));
      progress.info(`[judge] run directory: ${runDir}`);
      process.exitCode = exitCodeFor(record.results);
    });
}

function registerLavaRun(program: Command): void {
  program
    .command("lava-run")
    .description(
      "run a job from hil lava-job here with Debian's lava-run (LAVA's qemu device, hil's QEMU, the emulated erdma) and judge its log",
    )
    .argument("<job-dir>", "the directory hil lava-job wrote (its images as file:// URLs)")
    .option("--run-dir <dir>", "where verdicts.json and the traces go (default: runs/lava-run-<timestamp>)")
    .option("--json", "print the verdicts as JSON instead of a table")
    .addHelpText(
      "after",
      [
        "",
        "The device is LAVA's qemu device type (Debian's lava-server templates) with no KVM, hil's QEMU first on",
        "lava-run's PATH, and extra_options that attach the emulated erdma (its server started before lava-run with",
        "the plan's device profile, stopped after it). lava-run deploys the images to tmpfs, adds LAVA's overlay",
        "to the ramdisk, boots to the console shell and runs the job's test definition; its log is then judged as",
        "hil judge judges a lab's log (lava-log.txt in the run directory). Needs hil setup --lava.",
        "",
        "Exit status: as hil judge's; 3 also when the job never reached the runner (it did not boot), with LAVA's",
        "error.",
        "",
      ].join("\n"),
    )
    .action(async (jobDir: string, opts: { runDir?: string; json?: boolean }) => {
      const runDir = resolve(
        opts.runDir ?? `runs/lava-run-${new Date().toISOString().replace(/[:.]/g, "-")}`,
      );
      const record = await runLavaJobLocally({ jobDir, runDir });
      if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
      else process.stdout.write(renderScenarioTable(record.results));
      progress.info(
        `[lava] job ${record.lava.result}${record.lava.errors ? `: ${record.lava.errors.join("; ")}` : ""}; run directory: ${runDir}`,
      );
      process.exitCode = exitCodeFor(record.results);
    });
}

export function register(program: Command): void {
  registerLavaJob(program);
  registerJudge(program);
  registerLavaRun(program);
}
