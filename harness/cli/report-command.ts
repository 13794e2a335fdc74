import { existsSync } from "node:fs";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { type Command, Option } from "commander";
import { diskFullError, writeFileAtomic } from "../../util/atomic-write.ts";
import { ENVIRONMENT_EXIT, HilError } from "../../util/errors.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { screenshotHtml, screenshotPart } from "../report/browser.ts";
import { type FoundChromium, requireChromium } from "../report/browser-find.ts";
import { renderHtml } from "../report/html.ts";
import { renderJunit } from "../report/junit.ts";
import { renderKcidb } from "../report/kcidb.ts";
import { validateKcidb } from "../report/kcidb-validate.ts";
import { renderKtap } from "../report/ktap.ts";
import {
  type JobReport,
  jobHtmlFile,
  joinJunit,
  joinKcidb,
  joinKtap,
  matrixHtmlIndex,
} from "../report/matrix-report.ts";
import { summaryLine } from "../report/table.ts";
import { loadRunDir, type RunDir } from "../rundir/read.ts";
import { VERDICTS_FILE } from "../rundir/schema.ts";
import { MATRIX_FILE, matrixSummary } from "../workflows/matrix/matrix.ts";
import { isMatrixDir, loadMatrixDir } from "../workflows/matrix/matrix-dir.ts";

export const REPORT_FORMATS = ["ktap", "junit", "kcidb", "html"] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

interface ReportOptionValues {
  format: ReportFormat;
  out?: string;
  urlBase?: string;
  screenshot?: boolean;
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
      const check = validateKcidb(doc);
      if (!check.valid)
        throw new HilError("the KCIDB report does not validate against the KCIDB v5.0 schema", {
          where: run.dir,
          detail: [
            ...check.errors.slice(0, 8),
            ...(opts.urlBase ? [`(--url-base ${opts.urlBase} is where its URLs start)`] : []),
          ].join("\n"),
        });
      return `${JSON.stringify(doc, null, 2)}\n`;
    }
    case "html":
      return renderHtml(run);
  }
}

/**
 * A temporary name beside `file`, renamed over it once whole so a reader never sees half a file;
 * `ext` keeps the type a browser reads from the name (a page it opens must end in .html).
 */
function besideTmp(file: string, ext = ""): string {
  return join(dirname(file), `.${process.pid}.${Date.now()}.tmp${ext}`);
}

/** Writes the report whole (temp + rename; a reader never sees half of one), its directory made if missing. */
export async function writeReport(file: string, text: string): Promise<void> {
  try {
    await makeDir(dirname(file));
    await writeFileAtomic(file, text);
  } catch (err) {
    const full = diskFullError(err);
    throw new HilError(
      full ? "cannot write the report: no space left on its file system" : "cannot write the report",
      {
        where: file,
        cause: err,
        detail: (err as Error).message,
        ...(full ? { exitCode: ENVIRONMENT_EXIT } : {}),
      },
    );
  }
}

function cannotWrite(file: string) {
  return (err: unknown) => {
    throw new HilError("cannot write the report", {
      where: file,
      cause: err,
      detail: (err as Error).message,
    });
  };
}

/**
 * The HTML report and its picture, both or neither: the page is written beside its place, drawn
 * by headless chromium into a PNG beside <run-dir>/report.png, and only then are both renamed into
 * place (`htmlFile` undefined: the page went to stdout, only the PNG is kept). A browser that fails
 * leaves no file behind.
 */
async function writeWithScreenshot(
  run: RunDir,
  text: string,
  htmlFile: string | undefined,
  browser: FoundChromium,
): Promise<void> {
  const png = join(run.dir, "report.png");
  const scratch = htmlFile === undefined ? await mkdtemp(join(tmpdir(), "hil-report-")) : undefined;
  const source =
    htmlFile === undefined ? join(scratch as string, "report.html") : besideTmp(htmlFile, ".html");
  const pngTmp = besideTmp(png, ".png");
  const step = progress.step(`[report] drawing the report in headless chromium (${browser.binary})`);
  let parts = 0;
  try {
    if (htmlFile) await makeDir(dirname(htmlFile)).catch(cannotWrite(htmlFile));
    await writeFile(source, text).catch(cannotWrite(htmlFile ?? source));
    const shot = await screenshotHtml(source, pngTmp, { binary: browser.binary });
    parts = shot.files.length;
    step.succeed(
      `${shot.width}x${shot.height} px${parts > 1 ? ` in ${parts} parts` : ""}, ${shot.layout.timelines.length} timeline(s)`,
    );
    for (let k = 0; k < parts; k++) await rename(screenshotPart(pngTmp, k), screenshotPart(png, k));
    if (htmlFile) await rename(source, htmlFile);
  } catch (err) {
    step.fail();
    throw err;
  } finally {
    for (let k = 0; k < Math.max(parts, 1); k++) await rm(screenshotPart(pngTmp, k), { force: true });
    if (htmlFile) await rm(source, { force: true });
    if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  }
  if (htmlFile) progress.info(`[report] html report: ${htmlFile}`);
  progress.info(
    `[report] screenshot: ${png}${parts > 1 ? ` (the page in ${parts} parts: ${Array.from({ length: parts - 1 }, (_, k) => basename(screenshotPart(png, k + 1))).join(", ")} beside it)` : ""}`,
  );
}

export async function reportAction(runDir: string, opts: ReportOptionValues): Promise<void> {
  if (opts.screenshot && opts.format !== "html")
    throw new HilError(`--screenshot draws the HTML report: use it with --format html, not ${opts.format}`);
  const dir = resolve(runDir);
  if (isMatrixDir(dir)) return matrixReportAction(dir, opts);
  if (existsSync(dir) && !existsSync(join(dir, VERDICTS_FILE)))
    throw new HilError(
      `neither a run directory (no ${VERDICTS_FILE}: hil run) nor a matrix directory (no ${MATRIX_FILE}: hil matrix, hil merge)`,
      { where: dir },
    );
  const run = await loadRunDir(runDir);
  // no browser: one error saying how to get one, before anything is written
  const browser = opts.screenshot ? requireChromium("--screenshot") : undefined;
  const text = await renderReport(run, opts);
  const out = opts.out ?? (opts.format === "html" ? join(run.dir, "report.html") : undefined);
  const file = out === undefined || out === "-" ? undefined : resolve(out);
  if (file === undefined) process.stdout.write(text);
  if (browser) await writeWithScreenshot(run, text, file, browser);
  else if (file !== undefined) {
    await writeReport(file, text);
    progress.info(`[report] ${opts.format} report: ${file}`);
  }
  progress.info(summaryLine(run.record.results));
}

/**
 * A matrix directory: each job's run directory reported as a run's, joined into one document
 * (harness/report/matrix-report.ts); html writes each job's report into its run directory and
 * an index beside them.
 */
async function matrixReportAction(dir: string, opts: ReportOptionValues): Promise<void> {
  if (opts.screenshot)
    throw new HilError(
      `--screenshot draws one run's HTML report: give one job's run directory (${join(dir, "jobs", "<id>")})`,
    );
  const m = await loadMatrixDir(dir);
  const out = opts.out ?? (opts.format === "html" ? join(m.dir, "report.html") : undefined);
  const toStdout = out === undefined || out === "-";
  const step = progress.step(`[report] ${opts.format} report of ${m.jobs.length} job(s)`);
  const reports: JobReport[] = [];
  const links: Array<{ entry: JobReport["entry"]; href?: string }> = [];
  try {
    for (const [n, { entry, run }] of m.jobs.entries()) {
      step.update(n, m.jobs.length, entry.id);
      if (!run) {
        reports.push({ entry });
        links.push({ entry });
        continue;
      }
      const urlBase = opts.urlBase ? `${opts.urlBase.replace(/\/+$/, "")}/${entry.runDir}` : undefined;
      const text = await renderReport(run, { format: opts.format, ...(urlBase ? { urlBase } : {}) });
      reports.push({ entry, text });
      if (opts.format === "html") {
        const file = jobHtmlFile(m, entry);
        await writeReport(file, text);
        links.push({ entry, href: relative(toStdout ? m.dir : dirname(resolve(out)), file) });
      }
    }
    step.succeed(`${reports.filter((r) => r.text !== undefined).length} job report(s)`);
  } catch (err) {
    step.fail();
    throw err;
  }
  const text =
    opts.format === "ktap"
      ? joinKtap(m.index, reports)
      : opts.format === "junit"
        ? joinJunit(m.index, reports)
        : opts.format === "kcidb"
          ? `${JSON.stringify(joinKcidb(reports), null, 2)}\n`
          : matrixHtmlIndex(m.index, links);
  if (toStdout) process.stdout.write(text);
  else {
    const file = resolve(out);
    await writeReport(file, text);
    progress.info(`[report] ${opts.format} report of the matrix: ${file}`);
  }
  progress.info(`hil report: ${matrixSummary(m.index)}`);
}

export function registerReportCommand(program: Command): void {
  program
    .command("report")
    .description(
      "turn a run directory (hil run --run-dir) into a report: KTAP, JUnit XML, KCIDB JSON or HTML",
    )
    .argument(
      "<run-dir>",
      "a run directory written by hil run (verdicts.json, traces/), or a matrix directory (hil matrix, hil merge: matrix.json, jobs/)",
    )
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
    .option(
      "--screenshot",
      "html: also draw the report in headless chromium and keep it as <run-dir>/report.png (a chromium already here: $HIL_CHROMIUM, Debian's, Playwright's; hil setup --browser installs Debian's)",
    )
    .addHelpText(
      "after",
      [
        "",
        "ktap: KTAP version 1 (kselftest style): a subtest per scenario, per rule set inside it, a test case per",
        "  rule; XFAIL is `ok ... # XFAIL` and XPASS `ok ... # XPASS` as kselftest writes them (not ok under",
        "  --strict), SKIP `ok ... # SKIP`, ERROR `not ok ... # ERROR` and MISS `not ok ... # ERROR MISS:`.",
        "junit: a testsuite per scenario: an execution testcase with the scenario's time, a testcase per profile",
        "  and rule that judged something (a failure names the rule and its WRs); skipped only where a rule does",
        "  not apply; XFAIL and XPASS pass with a system-out; properties kernel/driver/profile.",
        "kcidb: KCIDB I/O v5.0, checked against its schema before it is written: a checkout (patchset_hash; git",
        "  URL, commit and branch for a git base), a build, a test per probe check, per scenario and profile, and per",
        "  rule that did not hold; XFAIL is FAIL with waived=true.",
        "html: one self-contained file, no scripts: the verdict table; per scenario the hil run line that reruns it",
        "  alone, the rules that did not pass with a link that highlights their WRs and CQEs in the timeline and the",
        "  event tables (every field of every event drawn), the timeline picture; printable (every table opened).",
        "  With --screenshot, a PNG of the whole page as headless chromium draws it (1400 px wide), beside it as",
        "  <run-dir>/report.png.",
        "",
        "A matrix directory (hil matrix --out, hil merge --out) is one report of all its jobs: in KTAP a test per job",
        "with the job's report as its subtest; in JUnit every job's testsuites, named <job id>/<suite>; in KCIDB every",
        "job's objects, a kernel's checkout and build once; in html an index (<dir>/report.html) linking each job's",
        "report, written into its run directory. A job no shard ran is a MISS (left out of KCIDB).",
        "",
        "Exit status: 0 the report was written; 2 the run directory is missing or corrupt (the file is named), or",
        "  --out cannot be written there; 3 no space is left on --out's file system.",
        "",
      ].join("\n"),
    )
    .action((runDir: string, opts: ReportOptionValues) => reportAction(runDir, opts));
}

/** The name main.ts calls on each command module. */
export const register = registerReportCommand;
