import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { DIFF_FILES, DIFF_FORMATS, type DiffFormat, renderDiffAs } from "../report/diff-report.ts";
import { renderTraceDiffHtml } from "../report/trace-diff-html.ts";
import {
  renderTraceDiffJunit,
  renderTraceDiffKtap,
  renderTraceDiffText,
  TRACE_DIFF_FILES,
  traceDiffJson,
  traceDiffSummary,
} from "../report/trace-diff-report.ts";
import { diffSides, diffSummary } from "../workflows/diff/diff.ts";
import { loadDiffSide } from "../workflows/diff/sides.ts";
import { loadTraceRuns } from "../workflows/trace-diff/runs.ts";
import { diffTraces } from "../workflows/trace-diff/trace-diff.ts";
import { writeReport } from "./report-command.ts";

interface DiffOptionValues {
  format: DiffFormat;
  outDir?: string;
  traces?: boolean;
}

function outDirOf(opts: DiffOptionValues, compared: readonly string[]): string | undefined {
  if (opts.outDir === undefined) return undefined;
  const dir = resolve(opts.outDir);
  if (compared.includes(dir))
    throw new HilError("--out-dir must not be one of the directories compared", { where: dir });
  return dir;
}

/** --out-dir: the diff in every format, each to its file. */
async function writeEveryFormat(
  dir: string,
  files: Record<DiffFormat, string>,
  render: (format: DiffFormat) => string | Promise<string>,
): Promise<void> {
  for (const f of DIFF_FORMATS) await writeReport(join(dir, files[f]), await render(f));
  progress.info(`[diff] written to ${dir}: ${DIFF_FORMATS.map((f) => files[f]).join(", ")}`);
}

/** `hil diff --traces <reference> <candidate>...`: the completions of each scenario, run by run. */
async function diffTracesAction(paths: readonly string[], opts: DiffOptionValues): Promise<void> {
  const runs = await loadTraceRuns(paths);
  const d = await diffTraces(runs);
  const render = async (format: DiffFormat): Promise<string> => {
    switch (format) {
      case "text":
        return renderTraceDiffText(d);
      case "json":
        return `${JSON.stringify(traceDiffJson(d), null, 2)}\n`;
      case "ktap":
        return renderTraceDiffKtap(d);
      case "junit":
        return renderTraceDiffJunit(d);
      case "html":
        return renderTraceDiffHtml(d, runs);
    }
  };
  const compared = runs.map((r) => r.run.dir);
  const dir = outDirOf(opts, compared);
  if (dir !== undefined) await writeEveryFormat(dir, TRACE_DIFF_FILES, render);
  process.stdout.write(await render(opts.format));
  if (opts.format !== "text") progress.info(traceDiffSummary(d));
  process.exitCode = d.exitCode;
}

export function registerDiffCommand(program: Command): void {
  program
    .command("diff")
    .description(
      "compare two runs (or two matrices): new FAILs, fixed, not judged, other flips and flaky cells, with their evidence; with --traces, the completions each WR got in runs of the same scenarios (model vs hardware, device profiles)",
    )
    .argument(
      "<old>",
      "the earlier run directory (hil run --run-dir) or matrix directory (hil matrix, hil merge)",
    )
    .argument("<new>", "the later one, of the same kind")
    .argument("[more...]", "with --traces: more candidate run directories")
    .option(
      "--traces",
      "compare the completions each WR got, scenario by scenario: <old> is the reference run (hardware, say), <new> and the ones after it candidates (device profiles)",
    )
    .addOption(
      new Option("--format <format>", "what to print on stdout").choices(DIFF_FORMATS).default("text"),
    )
    .option(
      "--out-dir <dir>",
      `also write the diff in every format into <dir>: ${DIFF_FORMATS.map((f) => DIFF_FILES[f]).join(", ")}`,
    )
    .addHelpText(
      "after",
      [
        "",
        "Cells are compared as hil validate compares its two sides: a run's cells are its probe checks and its",
        "scenarios under each rule set; a matrix's are each job's, keyed by the job's kernel (with series and config",
        "fragments), driver and device profile, executor and rule sets, and the scenario, so plans that group",
        "scenarios into jobs differently still compare. A cell only one side has is listed as such. The repetitions",
        "of a run with --repeat are one cell (the worst verdict of any repetition); a cell whose repetitions disagree",
        "on either side is listed as flaky, with the first repetition that differs.",
        "",
        "NEW FAIL: FAIL in <new>, not in <old>. FIXED: FAIL in <old> only. NOT JUDGED: ERROR or MISS in <new> (or the",
        "cell gone) where <old> was judged. changed: any other flip (PASS -> SKIP, XFAIL -> XPASS, ...). Each is listed",
        "with the rules that moved, their reasons and the events and console lines they quote (the text shows the",
        `first lines of each; json, ktap, junit and html all of them). Two runs with the same verdicts: "no change".`,
        "",
        "ktap: a test per cell, the new FAILs not ok, a cell not judged on the new side ok # SKIP, what moved as",
        "  diagnostic lines. junit: a testcase per cell, a new FAIL a <failure>, not judged <skipped>. html: the",
        "  table of what moved, each moved cell's rules with their evidence, the flaky cells.",
        "",
        "Exit status: 1 a new FAIL; 0 otherwise (fixed, not judged, changed, flaky or no change); 2 bad input (a path",
        "  that is not a run or matrix directory, a verdicts.json or matrix.json hil did not write, a run compared",
        "  with a matrix); 3 no space left on --out-dir's file system.",
        "",
        "--traces: hil diff --traces <reference> <candidate>... compares run directories of the same scenarios",
        "  (the model and a real device, two device profiles) per scenario: the verdicts per rule set and per WR",
        "  (keyed by QP, queue and wr_id; a drain's marker by the drain's order on its QP) whether its post was",
        "  accepted, its completions (how many, each one's status and CQ), whether each drain returned, and the",
        "  order each work queue's WRs completed in (not how two queues interleave on a shared CQ: that is",
        "  timing). Left out, as runs differ there without the device behaving otherwise: seq and ns, qp_num,",
        "  vendor_err, opcode, byte_len and the payload (imm, inv, sum). A repeated run's first repetition of",
        "  each scenario is compared. Each difference is one line,",
        "  `qp sq wr 1000-1003: erdma-2022: no completion | erdma-reflush: WR_FLUSH_ERR on cq`; then a summary",
        "  per candidate and, with two candidates or more, the closest one (fewest differing WRs, then scenarios).",
        "  The html page shows both runs' timelines side by side. --out-dir writes trace-diff.txt, .json, .ktap,",
        "  .junit.xml and .html. Exit status: 0 no difference; 1 the runs differ (completions, verdicts, or a",
        "  scenario only one run has); 2 bad input (a path that is not a run directory, a matrix directory, a",
        "  trace hil did not write); 3 no space left on --out-dir's file system.",
        "",
      ].join("\n"),
    )
    .action(async (oldDir: string, newDir: string, more: string[], opts: DiffOptionValues) => {
      if (opts.traces) return diffTracesAction([oldDir, newDir, ...more], opts);
      if (more.length > 0)
        throw new HilError(
          `hil diff compares two directories (${more.length + 2} given): more than two only with --traces`,
        );
      const d = diffSides(await loadDiffSide(oldDir), await loadDiffSide(newDir));
      const dir = outDirOf(opts, [d.old.dir, d.new.dir]);
      if (dir !== undefined) await writeEveryFormat(dir, DIFF_FILES, (f) => renderDiffAs(d, f));
      process.stdout.write(renderDiffAs(d, opts.format));
      if (opts.format !== "text") progress.info(diffSummary(d));
      process.exitCode = d.exitCode;
    });
}

export { registerDiffCommand as register };
