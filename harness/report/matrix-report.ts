/**
 * `hil report` on a matrix directory (`hil matrix --out`, `hil merge --out`): each job's run
 * directory is reported as `hil report` reports a run, and the job reports are joined into one
 * document of the format, so a CI system reads the whole matrix from one file:
 * - KTAP: a top-level test per job (`ok`/`not ok` by the job's exit status), the job's own KTAP
 *   nested under it as a subtest, as KTAP nests any test;
 * - JUnit: one <testsuites> holding every job's <testsuite> elements, each named
 *   `<job id>/<suite>`, with the counts and time summed;
 * - KCIDB: one document with every job's objects; a checkout or build that several jobs share
 *   (the same kernel) once;
 * - HTML: an index page (every job, its axes, its exit status and verdicts) linking each job's
 *   own report, which is written into the job's run directory.
 * A job no shard ran (a MISS of `hil merge`) is a MISS test in KTAP and JUnit; KCIDB has no build
 * for it to hang a test on, so it is left out there.
 */
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { countsText } from "../rundir/verdict-list.ts";
import type { MatrixIndex, MatrixJobEntry } from "../workflows/matrix/matrix.ts";
import type { MatrixDir } from "../workflows/matrix/matrix-dir.ts";
import { JOB_AXES, jobAxes } from "../workflows/matrix/plan.ts";
import { xmlAttr, xmlText } from "./xml.ts";

/** One job's report in the format, with the job it is of. */
export interface JobReport {
  entry: MatrixJobEntry;
  /** the job's own report; absent for a job no shard ran */
  text?: string;
}

function matrixTitle(index: MatrixIndex): string {
  const from = index.mergedFrom ? `, merged from ${index.mergedFrom.length} matrix dir(s)` : "";
  const shard = index.shard ? `, shard ${index.shard.index}/${index.shard.count}` : "";
  return `plan ${index.plan.name}${shard}${from}: ${index.jobs.length} job(s)`;
}

function missingReason(e: MatrixJobEntry): string {
  return (e.missing ?? "").replace(/[\r\n#]+/g, " ");
}

/** KTAP: a test per job; its own KTAP document nested as its subtest. */
export function joinKtap(index: MatrixIndex, reports: readonly JobReport[]): string {
  const out = ["KTAP version 1", `# erdma-hil matrix: ${matrixTitle(index)}`, `1..${reports.length}`];
  reports.forEach(({ entry, text }, i) => {
    const n = i + 1;
    if (text === undefined) {
      out.push(`not ok ${n} ${entry.id} # ERROR MISS: ${missingReason(entry)}`);
      return;
    }
    const [version, ...rest] = text.replace(/\n$/, "").split("\n");
    out.push(`    ${version}`, `    # Subtest: ${entry.id}`);
    for (const line of rest) out.push(line === "" ? "" : `    ${line}`);
    out.push(`${entry.exitCode === 0 ? "ok" : "not ok"} ${n} ${entry.id}`);
  });
  return `${out.join("\n")}\n`;
}

const COUNTS = ["tests", "failures", "errors", "skipped"] as const;

/** The root <testsuites ...> of a JUnit document, its attributes, and what is inside it. */
function junitRoot(text: string, id: string): { attrs: Map<string, string>; body: string } {
  const m = /<testsuites\b([^>]*)>([\s\S]*)<\/testsuites>/.exec(text);
  if (!m) throw new HilError(`job ${id}: its JUnit report has no <testsuites> element`);
  const attrs = new Map(
    [...(m[1] ?? "").matchAll(/([\w:-]+)="([^"]*)"/g)].map((a) => [a[1] ?? "", a[2] ?? ""]),
  );
  return { attrs, body: m[2] ?? "" };
}

/** JUnit: every job's <testsuite> elements in one <testsuites>, named `<job id>/<suite>`. */
export function joinJunit(index: MatrixIndex, reports: readonly JobReport[]): string {
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0, time: 0 };
  const suites: string[] = [];
  let suiteId = 0;
  for (const { entry, text } of reports) {
    if (text === undefined) {
      const why = `MISS: ${entry.missing}`;
      suites.push(
        `  <testsuite name="${xmlAttr(entry.id)}" id="${suiteId++}" tests="1" failures="0" errors="1" skipped="0" time="0.000">`,
        `    <testcase classname="${xmlAttr(entry.id)}" name="job" time="0">`,
        `      <error message="${xmlAttr(why)}" type="MISS">${xmlText(why)}</error>`,
        "    </testcase>",
        "  </testsuite>",
      );
      totals.tests++;
      totals.errors++;
      continue;
    }
    const { attrs, body } = junitRoot(text, entry.id);
    for (const k of COUNTS) totals[k] += Number(attrs.get(k) ?? 0);
    totals.time += Number(attrs.get("time") ?? 0);
    suites.push(
      body
        .replace(/^\n+|\s+$/g, "")
        .replace(/<testsuite\b([^>]*?)\bname="([^"]*)"/g, (_all, before: string, name: string) => {
          return `<testsuite${before}name="${xmlAttr(entry.id)}/${name}"`;
        })
        .replace(
          /<testsuite\b([^>]*?)\bid="\d+"/g,
          (_all, before: string) => `<testsuite${before}id="${suiteId++}"`,
        ),
    );
  }
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlAttr(`erdma-hil matrix ${index.plan.name}`)}" ${COUNTS.map((k) => `${k}="${totals[k]}"`).join(" ")} time="${totals.time.toFixed(3)}">`,
    ...suites,
    "</testsuites>",
    "",
  ].join("\n");
}

type KcidbDoc = { version: unknown } & Record<string, unknown>;

/**
 * KCIDB: one document with the objects of every job's. KCIDB identifies an object by its id (an
 * issue by id and version), so one two jobs share (their kernel's checkout and build, a known
 * bug's issue) is given once; the first job's copy is kept.
 */
export function joinKcidb(reports: readonly JobReport[]): KcidbDoc {
  const docs = reports.flatMap((r) => (r.text === undefined ? [] : [JSON.parse(r.text) as KcidbDoc]));
  const [first] = docs;
  if (!first) throw new HilError("no job of the matrix ran: there is nothing to report in KCIDB");
  const out: KcidbDoc = { version: first.version };
  const seen = new Map<string, Set<string>>();
  for (const doc of docs)
    for (const [key, value] of Object.entries(doc)) {
      if (key === "version" || !Array.isArray(value)) continue;
      if (!Array.isArray(out[key])) out[key] = [];
      const list = out[key] as unknown[];
      const ids = seen.get(key) ?? new Set<string>();
      seen.set(key, ids);
      for (const obj of value) {
        const o = obj as { id?: unknown; version?: unknown };
        const id = JSON.stringify([o.id, o.version]);
        if (o.id !== undefined && ids.has(id)) continue;
        ids.add(id);
        list.push(obj);
      }
    }
  return out;
}

/** HTML: the index page, each job a row with its axes and a link to its own report. */
export function matrixHtmlIndex(
  index: MatrixIndex,
  jobs: ReadonlyArray<{ entry: MatrixJobEntry; href?: string }>,
): string {
  const rows = jobs.map(({ entry, href }) => {
    const id = href ? `<a href="${xmlAttr(href)}">${xmlText(entry.id)}</a>` : xmlText(entry.id);
    const verdicts = entry.missing ? `MISS: ${entry.missing}` : countsText(entry.counts);
    const cls = entry.exitCode === 0 ? "pass" : entry.exitCode === 1 ? "fail" : "error";
    return `<tr class="${cls}"><td>${id}</td>${jobAxes(entry.spec)
      .map(([, v]) => `<td>${xmlText(v)}</td>`)
      .join("")}<td>${entry.exitCode}</td><td>${xmlText(verdicts)}</td></tr>`;
  });
  const css =
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:90%}tr.fail td{background:#fdd}tr.error td{background:#fec}tr.pass td{background:#efe}";
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${xmlText(`erdma-hil matrix ${index.plan.name}`)}</title>`,
    `<style>${css}</style></head><body>`,
    `<h1>erdma-hil matrix ${xmlText(index.plan.name)}</h1>`,
    `<p>${xmlText(matrixTitle(index))}; exit status ${index.exitCode}</p>`,
    "<table>",
    `<tr><th>job</th>${JOB_AXES.map((a) => `<th>${xmlText(a)}</th>`).join("")}<th>exit</th><th>verdicts</th></tr>`,
    ...rows,
    "</table>",
    "</body></html>",
    "",
  ].join("\n");
}

/** Where a job's HTML report goes: its run directory's report.html, as `hil report <run-dir>` writes it. */
export function jobHtmlFile(m: MatrixDir, entry: MatrixJobEntry): string {
  return join(m.dir, entry.runDir, "report.html");
}
