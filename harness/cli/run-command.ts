import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { DEFAULT_GUEST_MAC, prepareGuest, withGuest } from "../boot.ts";
import { renderVerdictTable } from "../report/table.ts";
import { runSmokeChecks } from "../run/smoke.ts";
import { progress } from "../util/progress.ts";
import { type CheckResult, exitCodeFor } from "../verdict.ts";
import { addDeviceOptions, type DeviceOptionValues, deviceOptions } from "./device-options.ts";
import { addKernelOptions, type KernelOptionValues, kernelRequest } from "./kernel-options.ts";

/** The hardware trace of the emulated device, in the run directory. */
export const HW_TRACE_FILE = "hw-trace.jsonl";

interface RunOptionValues extends KernelOptionValues, DeviceOptionValues {
  runDir?: string;
  json?: boolean;
}

function defaultRunDir(): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return resolve("runs", stamp);
}

export function register(program: Command): void {
  const cmd = program
    .command("run")
    .description(
      "the main job: build what is needed, boot the kernel with the emulated erdma device and judge it; today the checks are the guest smoke checks: kernel, driver, device probe, verbs object lifecycle, console (the drain suite builds on them)",
    )
    .option(
      "--run-dir <dir>",
      `where the verdicts, the console log and the device's hardware trace (${HW_TRACE_FILE}) go (default: runs/<timestamp>)`,
    )
    .option("--json", "print the verdicts as JSON instead of a table")
    .addHelpText(
      "after",
      "\nExit status: 0 every verdict PASS or SKIP; 1 a check FAILed; 3 the harness could not judge (ERROR or MISS);\n2 bad input.\n",
    );
  addDeviceOptions(addKernelOptions(cmd)).action(async (opts: RunOptionValues) => {
    const runDir = opts.runDir ? resolve(opts.runDir) : defaultRunDir();
    const device = deviceOptions(opts, opts.device ? { traceFile: join(runDir, HW_TRACE_FILE) } : {});
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
          mac: DEFAULT_GUEST_MAC,
          device: device ? { profile: device.profileName, traceFile: device.traceFile } : false,
        },
        (guest) =>
          runSmokeChecks(guest, {
            release: prepared.kernel.release,
            device: device && {
              profileName: device.profileName,
              profile: device.profile,
              mac: DEFAULT_GUEST_MAC,
              traceFile: device.traceFile,
            },
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
      device: device ? { profile: device.profileName, trace: HW_TRACE_FILE } : null,
      results,
    };
    await writeFile(join(runDir, "verdicts.json"), `${JSON.stringify(record, null, 2)}\n`);
    if (opts.json) process.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
    else process.stdout.write(renderVerdictTable(results));
    progress.info(`[run] run directory: ${runDir}`);
    process.exitCode = exitCodeFor(results);
  });
}
