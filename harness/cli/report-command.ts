import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { renderHtml } from "../report/html.ts";
import { renderJunit } from "../report/junit.ts";
import { renderKcidb } from "../report/kcidb.ts";
import { renderKtap } from "../report/ktap.ts";
import { loadRunDir, type RunDir } from "../report/run-dir.ts";
import { summaryLine } from "../report/table.ts";
import { HilError } from "../util/errors.ts";
import { progress } from "../util/progress.ts";

export const REPORT_FORMATS = ["ktap", "junit", "kcidb", "html"] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

interface ReportOptionValues {
  format: ReportFormat;
  out?: string;
  urlBase?: string;
}

export async function renderReport(
  run: RunDir,
  opts: { format: ReportFormat; urlBase?: string },
): Promise<string> {
  switch (opts.format) {
    case "ktap":
      return renderKtap(run);
    case "junit":
      return renderJunit(run);
    case "kcidb": {
      const doc = await renderKcidb(run, opts.urlBase ? { urlBase: opts.urlBase } : {});
      return `${JSON.stringify(doc, null, 2)}\n`;
    }
    case "html":
      return renderHtml(run);
  }
}

/** Writes beside the target and renames, so a reader never sees half a report. */
async function writeAtomically(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.${process.pid}.${Date.now()}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, file);
}

export async function reportAction(runDir: string, opts: ReportOptionValues): Promise<void> {
  const run = await loadRunDir(runDir);
  const text = await renderReport(run, opts);
  const out = opts.out ?? (opts.format === "html" ? join(run.dir, "report.html") : undefined);
  if (out === undefined || out === "-") process.stdout.write(text);
  else {
    const file = resolve(out);
    await writeAtomically(file, text).catch((err: unknown) => {
      throw new HilError("cannot write the report", {
        where: file,
        cause: err,
        detail: (err as Error).message,
      });
    });
    progress.info(`[report] ${opts.format} report: ${file}`);
  }
  progress.info(summaryLine(run.record.results));
}

export function registerReportCommand(program: Command): void {
  program
    .command("report")
    .description(
      "turn a run directory (hil run --run-dir) into a report: KTAP, JUnit XML, KCIDB JSON or HTML",
    )
    .argument("<run-dir>", "a run directory written by hil run (verdicts.json, traces/)")
    .addOption(
      new Option("--format <format>", "the report format").choices(REPORT_FORMATS).makeOptionMandatory(),
    )
    .option(
      "--out <file>",
      "write the report here (default: stdout; html: <run-dir>/report.html; - for stdout)",
    )
    .option(
      "--url-base <url>",
      "kcidb: the URL the run directory is published at; log_url, output_files and patchset_files point below it (default: file:// URLs)",
    )
    .addHelpText(
      "after",
      [
        "",
        "ktap: KTAP version 1 (kselftest style): a subtest per scenario, per oracle profile inside it, a test case per",
        "  rule; XFAIL is `not ok ... # TODO known bug`, SKIP `# SKIP`, ERROR and MISS `# ERROR`.",
        "junit: a testsuite per scenario, a testcase per profile and rule, properties kernel/driver/profile.",
        "kcidb: KCIDB I/O v5.0 (checkout with patchset_hash, build, tests); XFAIL is FAIL with waived=true.",
        "html: one self-contained file: the verdict table and a timeline picture per scenario.",
        "",
        "Exit status: 0 the report was written; 2 the run directory is missing or corrupt (the file is named).",
        "",
      ].join("\n"),
    )
    .action((runDir: string, opts: ReportOptionValues) => reportAction(runDir, opts));
}

/** The name main.ts calls on each command module. */
export const register = registerReportCommand;
