import { resolve } from "node:path";
import { type Command, Option } from "commander";
import { DEFAULT_PROFILE } from "../../qemu/erdma/profile-file.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { DEFAULT_KERNEL } from "../defaults.ts";
import {
  DRIVERS,
  type DriverName,
  EXECUTORS,
  type ExecutorKind,
  type OracleProfile,
} from "../scenario/schema.ts";
import { runValidate } from "../workflows/validate.ts";
import { diffSummary, renderDiff } from "../workflows/validate-diff.ts";
import { addDeviceProfileOption, DEVICE_PROFILE_WITHOUT_DEVICE } from "./device-options.ts";
import { collect, KERNEL_HELP } from "./kernel-options.ts";
import { addOldSpelling } from "./old-spellings.ts";
import { stampedRunDir } from "./repro-command.ts";
import { addRulesOption } from "./rules-option.ts";

interface ValidateOptionValues {
  kernel: string;
  series: string;
  config: string[];
  deviceProfile?: string;
  scenario?: string;
  executor?: ExecutorKind;
  driver?: DriverName;
  rules?: OracleProfile[];
  runDir?: string;
  json?: boolean;
  changedOnly?: boolean;
}

export function registerValidateCommand(program: Command): void {
  const cmd = program
    .command("validate")
    .description(
      "validate a patch series: run the drain suite on the base kernel and on base+series, and print what the series changed (new FAILs, fixed FAILs, unchanged)",
    )
    .option("--kernel <base>", KERNEL_HELP, DEFAULT_KERNEL)
    .requiredOption(
      "--series <mbox|dir>",
      "the patch series (an mbox or a directory of *.patch files; may be empty)",
    )
    .option("--config <fragment>", "a Kconfig fragment for both kernels (repeatable)", collect, []);
  addOldSpelling(cmd, "--base <base>");
  addDeviceProfileOption(cmd)
    .option(
      "--scenario <glob>",
      "scenario names or globs from fixtures/scenarios, or paths (comma-separated; default: every scenario meant for the target)",
    )
    .addOption(new Option("--executor <kind>", "the in-guest executor (default: kernel)").choices(EXECUTORS))
    .addOption(new Option("--driver <name>", "the RDMA driver under test (default: erdma)").choices(DRIVERS));
  addRulesOption(cmd, "judge")
    .option(
      "--run-dir <dir>",
      "where both runs go: <dir>/base, <dir>/patched, <dir>/validate.json (default: runs/validate-<timestamp>)",
    )
    .option("--changed-only", "leave the unchanged rows out of the table")
    .option("--json", "print the comparison as JSON")
    .addHelpText(
      "after",
      [
        "",
        "Both kernels are built (or found cached) first, so a series that does not apply is reported before",
        "anything runs. An empty series (an mbox with no patch, a directory with no *.patch) is the base kernel:",
        "both sides run on it, and the suite should agree with itself. Verdicts are compared per scenario and",
        "rule set (and per probe check): NEW FAIL (FAIL with the series only), FIXED (FAIL without it only),",
        "NOT JUDGED (ERROR or MISS with the series only), changed, unchanged; the rules that moved are listed.",
        "",
        "Exit status: 0 no new FAIL; 1 a regression (a new FAIL); 3 no new FAIL but some verdict could not be",
        "judged with the series; 2 bad input (a series that does not exist, parse or apply, a scenario, a device profile).",
        "",
      ].join("\n"),
    );
  cmd.action(async (opts: ValidateOptionValues) => {
    const driver = opts.driver ?? "erdma";
    if (driver === "siw" && opts.deviceProfile) throw new HilError(DEVICE_PROFILE_WITHOUT_DEVICE);
    const runDir = opts.runDir ? resolve(opts.runDir) : stampedRunDir("validate");
    const result = await runValidate({
      spec: {
        kernel: opts.kernel,
        configs: opts.config,
        driver,
        executor: opts.executor ?? "kernel",
        ...(driver === "erdma" ? { deviceProfile: opts.deviceProfile ?? DEFAULT_PROFILE } : {}),
        scenarios: opts.scenario ?? "*",
        ...(opts.rules ? { oracle: opts.rules } : {}),
      },
      series: opts.series,
      runDir,
      meantOnly: opts.scenario === undefined,
    });
    const summary = `hil validate: ${diffSummary(result.diff)} (${result.base.kernel} vs ${result.patched.kernel}${result.series.subjects.length === 0 ? ", empty series" : ""}) in ${Math.round(result.wallMs / 1000)}s`;
    if (opts.json) {
      process.stdout.write(
        `${JSON.stringify({ series: result.series, regression: result.diff.regression, counts: result.diff.counts, deltas: result.diff.deltas, runDir, exitCode: result.exitCode }, null, 2)}\n`,
      );
      progress.info(summary);
    } else {
      process.stdout.write(
        `${renderDiff(result.diff, { showUnchanged: !opts.changedOnly })}\nrun directory: ${runDir}\n${summary}\n`,
      );
    }
    process.exitCode = result.exitCode;
  });
}

export { registerValidateCommand as register };
