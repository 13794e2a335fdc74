import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { diffSides, diffSummary } from "../workflows/diff.ts";
import { DIFF_FILES, DIFF_FORMATS, type DiffFormat, renderDiffAs } from "../workflows/diff-report.ts";
import { loadDiffSide } from "../workflows/diff-sides.ts";
import { writeReport } from "./report-command.ts";

interface DiffOptionValues {
  format: DiffFormat;
  outDir?: string;
}

export function registerDiffCommand(program: Command): void {
  program
    .command("diff")
    .description(
      "compare two runs (or two matrices): new FAILs, fixed, not judged, other flips and flaky cells, with their evidence",
    )
    .argument(
      "<old>",
      "the earlier run directory (hil run --run-dir) or matrix directory (hil matrix, hil merge)",
    )
    .argument("<new>", "the later one, of the same kind")
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
      ].join("\n"),
    )
    .action(async (oldDir: string, newDir: string, opts: DiffOptionValues) => {
      const d = diffSides(await loadDiffSide(oldDir), await loadDiffSide(newDir));
      if (opts.outDir !== undefined) {
        const dir = resolve(opts.outDir);
        if (dir === d.old.dir || dir === d.new.dir)
          throw new HilError("--out-dir must not be one of the directories compared", { where: dir });
        for (const f of DIFF_FORMATS) await writeReport(join(dir, DIFF_FILES[f]), renderDiffAs(d, f));
        progress.info(`[diff] written to ${dir}: ${DIFF_FORMATS.map((f) => DIFF_FILES[f]).join(", ")}`);
      }
      process.stdout.write(renderDiffAs(d, opts.format));
      if (opts.format !== "text") progress.info(diffSummary(d));
      process.exitCode = d.exitCode;
    });
}

export { registerDiffCommand as register };
