import { resolve } from "node:path";
import type { Command } from "commander";
import { HilError } from "../../util/errors.ts";
import { DEFAULT_KERNEL } from "../defaults.ts";
import { type BisectResult, type PatchInfo, runBisect } from "../workflows/bisect/bisect.ts";
import { type GitRange, gitRange } from "../workflows/bisect/git.ts";
import { addDeviceProfileOption } from "./device-options.ts";
import { collect, KERNEL_HELP } from "./kernel-options.ts";
import { stampedRunDir } from "./repro-command.ts";
import { addRulesOption } from "./rules-option.ts";
import { addExecutorDriverOptions, type SeriesJobOptionValues, seriesJobSpec } from "./series-job-spec.ts";

interface BisectOptionValues extends SeriesJobOptionValues {
  series?: string;
  git?: string;
  good?: string;
  bad?: string;
  scenario: string;
  repeat?: string;
  runDir?: string;
  json?: boolean;
}

function parseRepeat(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100)
    throw new HilError(`--repeat ${value}: expected a whole number from 1 to 100`);
  return n;
}

/** --series, or the git range --git --good --bad: exactly one of them. */
async function seriesOf(opts: BisectOptionValues): Promise<string | GitRange> {
  const gitOptions = [opts.git, opts.good, opts.bad].filter((v) => v !== undefined).length;
  if (opts.series !== undefined) {
    if (gitOptions > 0) throw new HilError("--series and --git/--good/--bad: give one series, not both");
    return opts.series;
  }
  if (opts.git === undefined || opts.good === undefined || opts.bad === undefined)
    throw new HilError("give the series: --series <mbox|dir>, or --git <repo> --good <ref> --bad <ref>");
  return gitRange(opts.git, opts.good, opts.bad);
}

function culpritLine(c: PatchInfo, total: number): string {
  return c.commit
    ? `first bad commit: ${c.commit} "${c.subject}" (${c.index}/${total} of the range)`
    : `first bad patch: ${c.index}/${total} "${c.subject}" (${c.source})`;
}

export function renderBisect(r: BisectResult, runDir: string): string {
  const total = r.series.patches.length;
  const lines = [`bisect of ${total} patch(es), scenarios ${r.spec.scenarios}:`];
  for (const s of r.steps) {
    const what = s.patches === 0 ? "base" : `first ${s.patches}/${total}`;
    lines.push(`  ${what.padEnd(14)} ${s.word.padEnd(5)} ${s.counts}  ${s.runDir}`);
  }
  if (r.culprit) {
    const step = r.steps.find((s) => s.runDir === r.culprit?.runDir);
    lines.push("", culpritLine(r.culprit, total));
    for (const why of (step?.why ?? []).slice(0, 5)) lines.push(`  ${why}`);
    lines.push(
      `  its run: ${runDir}/${r.culprit.runDir} (hil report ${runDir}/${r.culprit.runDir} --format kcidb)`,
    );
  } else lines.push("", `no culprit: ${r.inconclusive}`);
  const secs = Math.round(r.wallMs / 1000);
  const words = r.culprit
    ? r.culprit.commit
      ? `commit ${r.culprit.commit.slice(0, 12)} (${r.culprit.index}/${total}) is the first bad one`
      : `patch ${r.culprit.index}/${total} is the first bad one`
    : "inconclusive";
  lines.push(
    "",
    `run directory: ${runDir}`,
    `hil bisect: ${words} (${r.searchSteps} step(s) between the ends, ${r.steps.length} run(s) in ${secs}s)`,
  );
  return `${lines.join("\n")}\n`;
}

export function registerBisectCommand(program: Command): void {
  const cmd = program
    .command("bisect")
    .description(
      "find the first patch of a series that makes a scenario FAIL: the base is the good end, the whole series the bad end, each step the base with the series' first k patches",
    )
    .option("--kernel <base>", KERNEL_HELP, DEFAULT_KERNEL)
    .option("--series <mbox|dir>", "the patch series (an mbox or a directory of *.patch files)")
    .option(
      "--git <repo>",
      "instead of --series: the commits of a git repository between --good and --bad, each a patch on --kernel",
    )
    .option("--good <ref>", "with --git: the last good commit (its tree is the --kernel base)")
    .option("--bad <ref>", "with --git: a bad commit, a descendant of --good (linear history)")
    .option("--config <fragment>", "a Kconfig fragment for every step's kernel (repeatable)", collect, [])
    .requiredOption(
      "--scenario <glob>",
      "the scenarios that tell good from bad: names or globs from fixtures/scenarios, or paths (comma-separated)",
    );
  addExecutorDriverOptions(addDeviceProfileOption(cmd));
  addRulesOption(cmd, "judge")
    .option(
      "--repeat <n>",
      "run the scenarios n times at each step: one FAIL makes the step bad (for a flaky scenario)",
    )
    .option(
      "--run-dir <dir>",
      "where the steps go: <dir>/steps/<k>-patches, <dir>/bisect.json (default: runs/bisect-<timestamp>)",
    )
    .option("--json", "print bisect.json")
    .addHelpText(
      "after",
      [
        "",
        "The whole series is run first and must FAIL a scenario (a FAIL, not an XFAIL of a known bug), then",
        "the base, which must not; then each step halves the patches between the last good and the first bad",
        "prefix: ceil(log2(n)) steps for n patches. A step's kernel is the base with the first k patches,",
        "built from the base's cached build (only what the patches change is rebuilt). A step with an ERROR or",
        "MISS and no FAIL is skipped (the nearest untested prefix is tried next), as git bisect skip does.",
        "",
        "Exit status: 0 the first bad patch was found; 3 inconclusive (the series does not FAIL, the base",
        "FAILs too, or the steps that would decide could not be judged); 2 bad input (a series that does not",
        "exist, parse or apply, a scenario, a device profile).",
        "",
      ].join("\n"),
    );
  cmd.action(async (opts: BisectOptionValues) => {
    const repeat = parseRepeat(opts.repeat);
    const series = await seriesOf(opts);
    const runDir = opts.runDir ? resolve(opts.runDir) : stampedRunDir("bisect");
    const result = await runBisect({
      spec: seriesJobSpec(opts, opts.scenario),
      series,
      runDir,
      ...(repeat ? { repeat } : {}),
    });
    process.stdout.write(
      opts.json ? `${JSON.stringify({ ...result, runDir }, null, 2)}\n` : renderBisect(result, runDir),
    );
    process.exitCode = result.exitCode;
  });
}

export { registerBisectCommand as register };
