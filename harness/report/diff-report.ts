/**
 * `hil diff` in the report formats, written with the run reports' own writers (harness/report):
 * - KTAP (ktap.ts): a top-level test per compared cell, the changed ones first. A new FAIL is `not
 *   ok` (it fails the diff, exit 1); a cell not judged on the new side (ERROR, MISS, gone) is
 *   `ok ... # SKIP not judged`; fixed, changed, unchanged and flaky cells are `ok`, with what moved
 *   (the rules, their reasons, the events they quote) as diagnostic lines before the result.
 * - JUnit (junit.ts): one testsuite, a testcase per cell (classname the cell, name its rule set): a
 *   new FAIL is a <failure> whose text has the rules that moved and their evidence; not judged is
 *   <skipped>; the other moves and flaky cells pass with a <system-out> saying what moved.
 * - HTML (html.ts's stylesheet and verdict cells): the table of what moved, then per moved cell its
 *   rules with their reasons and evidence, then the flaky cells.
 */

import {
  cellName,
  diffJson,
  diffSummary,
  type FlakyCell,
  flakyText,
  onlyOn,
  type RunDiff,
  renderDiffText,
} from "../workflows/diff/diff.ts";
import { CHANGES, changeWord, type VerdictDelta } from "../workflows/diff/verdict-diff.ts";
import { verdictCell } from "./html.ts";
import { REPORT_CSS } from "./html-style.ts";
import { type JCase, type Outcome, renderJunitSuites } from "./junit.ts";
import { type KtapCase, renderKtapCases } from "./ktap.ts";
import { xmlAttr as attr, xmlText as esc } from "./xml.ts";

export const DIFF_FORMATS = ["text", "json", "ktap", "junit", "html"] as const;
export type DiffFormat = (typeof DIFF_FORMATS)[number];

/** The file `--out-dir` writes each format to, named after the diff (`hil diff`'s "diff", `--traces`' "trace-diff"). */
export function diffFiles(stem: string): Record<DiffFormat, string> {
  return {
    text: `${stem}.txt`,
    json: `${stem}.json`,
    ktap: `${stem}.ktap`,
    junit: `${stem}.junit.xml`,
    html: `${stem}.html`,
  };
}

export const DIFF_FILES = diffFiles("diff");

/** Every cell, the moved ones first (in the order of CHANGES), as the table lists them. */
function ordered(d: RunDiff): VerdictDelta[] {
  return CHANGES.flatMap((c) => d.comparison.deltas.filter((x) => x.change === c));
}

function cellTitle(x: Pick<VerdictDelta, "key" | "profile">): string {
  return `${cellName(x)}${x.profile ? ` [${x.profile}]` : ""}`;
}

/** What moved in a cell, line by line: the verdicts, where only one side has it, each rule with its reason and evidence. */
function movedLines(d: RunDiff, x: VerdictDelta, flaky: FlakyCell | undefined): string[] {
  const lines: string[] = [];
  if (x.change !== "unchanged")
    lines.push(`${changeWord(x.change)}: ${x.base ?? "-"} -> ${x.patched ?? "-"}: ${x.reason}`);
  const side = onlyOn(x);
  if (side) lines.push(`only in ${side} (${side === "old" ? d.old.dir : d.new.dir})`);
  if (x.change !== "unchanged") {
    if (x.rules.length === 0) lines.push(...(x.evidence ?? []).map((e) => `  ${e}`));
    for (const r of x.rules) {
      lines.push(`rule ${r.rule}: ${r.base ?? "-"} -> ${r.patched ?? "-"}: ${r.reason}`);
      lines.push(...(r.evidence ?? []).map((e) => `  ${e}`));
    }
  }
  if (flaky) lines.push(`flaky: old ${flakyText(flaky.old)}; new ${flakyText(flaky.new)}`);
  return lines;
}

function flakyByKey(d: RunDiff): Map<string, FlakyCell> {
  return new Map(d.flaky.map((f) => [f.key, f]));
}

export function renderDiffKtap(d: RunDiff): string {
  const flaky = flakyByKey(d);
  const cases = ordered(d).map((x): KtapCase => {
    const notes = movedLines(d, x, flaky.get(x.key));
    const name = cellTitle(x);
    if (x.change === "new-fail") return { name, verdict: "FAIL", reason: `new FAIL: ${x.reason}`, notes };
    if (x.change === "not-judged")
      return { name, verdict: "SKIP", reason: `not judged on the new side: ${x.patched ?? "gone"}`, notes };
    return { name, verdict: "PASS", reason: "", notes };
  });
  return renderKtapCases(
    [`erdma-hil diff: old ${d.old.dir} (${d.old.label})`, `new ${d.new.dir} (${d.new.label})`],
    cases,
    [diffSummary(d)],
  );
}

export function renderDiffJunit(d: RunDiff, when = new Date()): string {
  const flaky = flakyByKey(d);
  const cases = ordered(d).map((x): JCase => {
    const lines = movedLines(d, x, flaky.get(x.key));
    const text = lines.join("\n");
    const message = `${changeWord(x.change)}: ${x.base ?? "-"} -> ${x.patched ?? "-"}: ${x.reason}`;
    const outcome: Outcome =
      x.change === "new-fail"
        ? { kind: "failure", type: "NEW FAIL", message, text }
        : x.change === "not-judged"
          ? { kind: "skipped", message }
          : lines.length > 0
            ? { kind: "pass", out: text }
            : { kind: "pass" };
    return { classname: cellName(x), name: x.profile ?? "check", outcome };
  });
  return renderJunitSuites(
    "erdma-hil diff",
    [
      {
        name: "diff",
        timeSec: 0,
        properties: [...sideProperties("old", d.old), ...sideProperties("new", d.new)],
        cases,
        out: diffSummary(d),
      },
    ],
    when,
  );
}

const DIFF_CSS = "td.change{font-weight:600}pre.evidence{font-size:12px;margin:.2em 0 .6em 1.5em}";

function movedSection(d: RunDiff, x: VerdictDelta): string {
  const parts = [`<h3>${esc(cellTitle(x))}: ${esc(changeWord(x.change))}</h3>`];
  parts.push(`<p>${esc(x.base ?? "-")} → ${esc(x.patched ?? "-")}: ${esc(x.reason)}</p>`);
  const side = onlyOn(x);
  if (side)
    parts.push(`<p class="meta">only in ${side} (${esc(side === "old" ? d.old.dir : d.new.dir)})</p>`);
  if (x.rules.length === 0 && x.evidence?.length)
    parts.push(`<pre class="evidence">${esc(x.evidence.join("\n"))}</pre>`);
  for (const r of x.rules) {
    parts.push(
      `<p>rule ${esc(r.rule)}: ${esc(r.base ?? "-")} → ${esc(r.patched ?? "-")}: ${esc(r.reason)}</p>`,
    );
    if (r.evidence?.length) parts.push(`<pre class="evidence">${esc(r.evidence.join("\n"))}</pre>`);
  }
  return parts.join("\n");
}

export function renderDiffHtml(d: RunDiff): string {
  const moved = ordered(d).filter((x) => x.change !== "unchanged");
  const slugOf = (x: VerdictDelta) => `d-${x.key.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
  const rows = moved.map(
    (x) =>
      `<tr><th><a href="#${attr(slugOf(x))}">${esc(cellName(x))}</a></th><td>${esc(x.profile ?? "")}</td>${verdictCell(x.base)}${verdictCell(x.patched)}<td class="change">${esc(changeWord(x.change))}</td><td class="why">${esc(x.reason)}</td></tr>`,
  );
  const flakyRows = d.flaky.map(
    (f) =>
      `<tr><th>${esc(f.name)}</th><td>${esc(f.profile ?? "")}</td><td class="why">${esc(flakyText(f.old))}</td><td class="why">${esc(flakyText(f.new))}</td></tr>`,
  );
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${esc(`erdma-hil diff: ${d.old.label} vs ${d.new.label}`)}</title>`,
    `<style>${REPORT_CSS}\n${DIFF_CSS}</style></head><body>`,
    "<h1>erdma-hil diff</h1>",
    `<p class="meta">old: ${esc(d.old.dir)} (${esc(d.old.label)})<br>new: ${esc(d.new.dir)} (${esc(d.new.label)})</p>`,
    `<p class="summary">${esc(diffSummary(d))}</p>`,
    moved.length === 0
      ? `<p>no change: the same ${d.comparison.deltas.length} verdicts on both sides</p>`
      : [
          '<table class="verdicts"><thead><tr><th>cell</th><th>rule set</th><th>old</th><th>new</th><th>change</th><th>reason</th></tr></thead>',
          `<tbody>${rows.join("\n")}</tbody></table>`,
          ...moved.map((x) => `<section id="${attr(slugOf(x))}">${movedSection(d, x)}</section>`),
        ].join("\n"),
    ...(d.flaky.length > 0
      ? [
          "<h2>Flaky (the repetitions' verdicts differ)</h2>",
          '<table class="verdicts"><thead><tr><th>cell</th><th>rule set</th><th>old</th><th>new</th></tr></thead>',
          `<tbody>${flakyRows.join("\n")}</tbody></table>`,
        ]
      : []),
    "</body></html>",
    "",
  ].join("\n");
}

/** A compared run or matrix as JUnit properties: its directory under `name`, its label under `name`.label. */
export function sideProperties(name: string, side: { dir: string; label: string }): Array<[string, string]> {
  return [
    [name, side.dir],
    [`${name}.label`, side.label],
  ];
}

/** The diff in one format. */
export function renderDiffAs(d: RunDiff, format: DiffFormat): string {
  switch (format) {
    case "text":
      return renderDiffText(d);
    case "json":
      return `${JSON.stringify(diffJson(d), null, 2)}\n`;
    case "ktap":
      return renderDiffKtap(d);
    case "junit":
      return renderDiffJunit(d);
    case "html":
      return renderDiffHtml(d);
  }
}
