import { resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_PROFILE } from "../../qemu/erdma/profile-file.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { DEFAULT_KERNEL } from "../defaults.ts";
import {
  DRIVERS,
  type DriverName,
  EXECUTORS,
  type ExecutorKind,
  ORACLE_PROFILES,
  type OracleProfile,
} from "../scenario/schema.ts";
import { runValidate } from "../workflows/validate.ts";
import { diffSummary, renderDiff } from "../workflows/validate-diff.ts";
import { stampedRunDir } from "./repro-command.ts";

interface ValidateOptionValues {
  base: string;
  series: string;
  config: string[];
  profile?: string;
  scenario?: string;
  executor?: ExecutorKind;
  driver?: DriverName;
  oracle?: OracleProfile[];
  runDir?: string;
  json?: boolean;
  changedOnly?: boolean;
}

export function oracleList(value: string): OracleProfile[] {
  const list = value.split(",").map((v) => v.trim());
  for (const v of list)
    if (!(ORACLE_PROFILES as readonly string[]).includes(v))
      throw new InvalidArgumentError(`"${v}" is not an oracle profile (${ORACLE_PROFILES.join(", ")})`);
  return list as OracleProfile[];
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function registerValidateCommand(program: Command): void {
  program
    .command("validate")
    .description(
      "validate a patch series: run the drain suite on the base kernel and on base+series, and print what the series changed (new FAILs, fixed FAILs, unchanged)",
    )
    .option(
      "--base <base>",
      "the base kernel: debian:6.1 | debian:6.12 | debian:7.2 | a source dir | a tarball",
      DEFAULT_KERNEL,
    )
    .requiredOption(
      "--series <mbox|dir>",
      "the patch series (an mbox or a directory of *.patch files; may be empty)",
    )
    .option("--config <fragment>", "a Kconfig fragment for both kernels (repeatable)", collect, [])
    .option("--profile <name|file>", `the emulated erdma device's profile (default ${DEFAULT_PROFILE})`)
    .option(
      "--scenario <glob>",
      "scenario names or globs from fixtures/scenarios, or paths (comma-separated; default: every scenario meant for the target)",
    )
    .addOption(new Option("--executor <kind>", "the in-guest executor (default: kernel)").choices(EXECUTORS))
    .addOption(new Option("--driver <name>", "the RDMA driver under test (default: erdma)").choices(DRIVERS))
    .option(
      "--oracle <profiles>",
      `judge under these oracle profiles only (${ORACLE_PROFILES.join(", ")})`,
      oracleList,
    )
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
        "oracle profile (and per probe check): NEW FAIL (FAIL with the series only), FIXED (FAIL without it only),",
        "NOT JUDGED (ERROR or MISS with the series only), changed, unchanged; the rules that moved are listed.",
        "",
        "Exit status: 0 no new FAIL; 1 a regression (a new FAIL); 3 no new FAIL but some verdict could not be",
        "judged with the series; 2 bad input (a series that does not exist, parse or apply, a scenario, a profile).",
        "",
      ].join("\n"),
    )
    .action(async (opts: ValidateOptionValues) => {
      const driver = opts.driver ?? "erdma";
      if (driver === "siw" && opts.profile)
        throw new HilError(
          "--profile sets the emulated erdma device's behaviour; --driver siw attaches none",
        );
      const runDir = opts.runDir ? resolve(opts.runDir) : stampedRunDir("validate");
      const result = await runValidate({
        spec: {
          kernel: opts.base,
          configs: opts.config,
          driver,
          executor: opts.executor ?? "kernel",
          ...(driver === "erdma" ? { deviceProfile: opts.profile ?? DEFAULT_PROFILE } : {}),
          scenarios: opts.scenario ?? "*",
          ...(opts.oracle ? { oracle: opts.oracle } : {}),
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
