import { resolve } from "node:path";
import type { Command } from "commander";
import { progress } from "../../util/progress.ts";
import { rtl } from "../backend/rtl.ts";
import { DEFAULT_KERNEL } from "../defaults.ts";
import { baseCacheLine } from "../workflows/validate/base.ts";
import { diffSummary, renderDiff } from "../workflows/validate/diff.ts";
import { runValidate, SIDES_AT_ONCE_CPUS } from "../workflows/validate/validate.ts";
import { addDeviceProfileOption } from "./device-options.ts";
import { collect, KERNEL_HELP } from "./kernel-options.ts";
import { addOldSpelling } from "./old-spellings.ts";
import { stampedRunDir } from "./repro-command.ts";
import { addRulesOption } from "./rules-option.ts";
import { addExecutorDriverOptions, type SeriesJobOptionValues, seriesJobSpec } from "./series-job-spec.ts";

interface ValidateOptionValues extends SeriesJobOptionValues {
  series: string;
  scenario?: string;
  runDir?: string;
  json?: boolean;
  changedOnly?: boolean;
  all?: boolean;
  /** false with --no-base-cache */
  baseCache: boolean;
  /** unset: at once when the machine has SIDES_AT_ONCE_CPUS */
  sidesAtOnce?: boolean;
  /** --device-rtl: both sides on the RTL queue engine (with planted bugs, by name) */
  deviceRtl?: boolean | string;
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
  addDeviceProfileOption(cmd).option(
    "--scenario <glob>",
    "scenario names or globs from fixtures/scenarios, or paths (comma-separated; default: every scenario meant for the target)",
  );
  addExecutorDriverOptions(cmd).option(rtl.option?.flags ?? "--device-rtl [bugs]", rtl.option?.help ?? "");
  addRulesOption(cmd, "judge")
    .option(
      "--run-dir <dir>",
      "where both runs go: <dir>/base, <dir>/patched, <dir>/validate.json (default: runs/validate-<timestamp>)",
    )
    .option(
      "--no-base-cache",
      "run the base side even when a run of it is cached (a fresh run with every verdict judged is kept for the next validation)",
    )
    .option(
      "--sides-at-once",
      `run the base and base+series at once, on two guests (the default on a machine with ${SIDES_AT_ONCE_CPUS} or more CPUs)`,
    )
    .option("--no-sides-at-once", "run the base, then base+series")
    .option(
      "--all",
      "list the unchanged rows too (by default only the changes are, and the unchanged counted)",
    )
    .option("--changed-only", "only the changes (the default; kept for scripts that say it)")
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
        "The base side's run is cached, keyed by what decides its verdicts (the base kernel, the guest image and",
        "QEMU, the driver, executor and device profile by content, the scenario files' content, the rule sets,",
        "hil's own code), and a later validation with the same key copies it instead of running the base: the",
        "output says so (base: N verdicts reused from <when>, key ...). A base run with an ERROR or MISS is not",
        "kept; a key whose fresh base runs disagreed is not reused again.",
        "",
        "Exit status: 0 no new FAIL; 1 a regression (a new FAIL); 3 no new FAIL but some verdict could not be",
        "judged with the series; 2 bad input (a series that does not exist, parse or apply, a scenario, a device profile).",
        "",
      ].join("\n"),
    );
  cmd.action(async (opts: ValidateOptionValues) => {
    const device = opts.deviceRtl
      ? rtl.choose(
          {
            device: true,
            deviceRtl: opts.deviceRtl,
            ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
          },
          opts.driver ? { driver: opts.driver } : {},
        )
      : undefined;
    const runDir = opts.runDir ? resolve(opts.runDir) : stampedRunDir("validate");
    const result = await runValidate({
      ...(device ? { device } : {}),
      spec: seriesJobSpec(opts, opts.scenario ?? "*"),
      series: opts.series,
      runDir,
      meantOnly: opts.scenario === undefined,
      freshBase: !opts.baseCache,
      ...(opts.sidesAtOnce !== undefined ? { sidesAtOnce: opts.sidesAtOnce } : {}),
    });
    const summary = `hil validate: ${diffSummary(result.diff)} (${result.base.kernel} vs ${result.patched.kernel}${result.series.subjects.length === 0 ? ", empty series" : ""}) in ${Math.round(result.wallMs / 1000)}s`;
    if (opts.json) {
      process.stdout.write(
        `${JSON.stringify({ series: result.series, baseCache: result.baseCache, regression: result.diff.regression, counts: result.diff.counts, deltas: result.diff.deltas, runDir, exitCode: result.exitCode }, null, 2)}\n`,
      );
      progress.info(baseCacheLine(result.baseCache));
      progress.info(summary);
    } else {
      process.stdout.write(
        `${renderDiff(result.diff, { showUnchanged: opts.all === true && !opts.changedOnly })}\nrun directory: ${runDir}\n${baseCacheLine(result.baseCache)}\n${summary}\n`,
      );
    }
    process.exitCode = result.exitCode;
  });
}

export { registerValidateCommand as register };
