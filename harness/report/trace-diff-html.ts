/**
 * `hil diff --traces` as one HTML page: per candidate, the table of scenarios (the same, or what
 * differs), then per differing scenario the lines that say how, and the two runs' timelines side by
 * side (the run report's timeline, report/timeline.ts and svg.ts, with each run's hardware trace).
 */

import { loadHwTrace, loadVerbsTrace } from "../rundir/read.ts";
import type { TraceRun } from "../workflows/trace-diff/runs.ts";
import type { CandidateDiff, ScenarioTraceDiff, TraceDiff } from "../workflows/trace-diff/trace-diff.ts";
import { REPORT_CSS } from "./html-style.ts";
import { MARK_COLOURS, renderTimelineSvg } from "./svg.ts";
import { buildTimeline } from "./timeline.ts";
import { candidateSummary, closestLine, scenarioLines } from "./trace-diff-report.ts";
import { xmlAttr as attr, xmlText as esc } from "./xml.ts";

const CSS =
  ".sides{display:grid;grid-template-columns:1fr 1fr;gap:1em}.sides h4{margin:.3em 0}ul.differs{font:12px/1.4 monospace}";

const LEGEND: Array<[string, string]> = [
  ["post", "post"],
  ["marker", "drain marker"],
  ["post-err", "post failed"],
  ["cqe-ok", "CQE success"],
  ["cqe-flush", "CQE flush"],
  ["cqe-err", "CQE error"],
  ["drain", "drain returned"],
  ["hang", "hang"],
  ["hw-flush", "device flush"],
  ["hw-reflush", "REFLUSH"],
];

async function timelineOf(t: TraceRun, scenario: string, id: string): Promise<string> {
  const s = t.scenarios.get(scenario);
  const records = s ? await loadVerbsTrace(t.run, s) : undefined;
  if (!s || !records || records.length === 0) return `<p class="meta">no verbs trace</p>`;
  const tl = buildTimeline(records, await loadHwTrace(t.run, s), s.observations ?? []);
  return renderTimelineSvg(tl, id);
}

function slug(candidate: number, scenario: string): string {
  return `c${candidate}-${scenario.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
}

function state(s: ScenarioTraceDiff): string {
  if (s.only) return `only in the ${s.only}`;
  if (s.completionsDiffer) return `completions differ: ${s.wrs} WRs, ${s.drains} drains`;
  if (s.verdicts.length > 0) return "verdicts differ";
  return "the same";
}

async function candidateSection(d: TraceDiff, c: CandidateDiff, i: number, runs: readonly TraceRun[]) {
  const ref = d.reference.name;
  const cand = c.candidate.name;
  const rows = c.scenarios.map((s) => {
    const name = s.differs
      ? `<a href="#${attr(slug(i, s.scenario))}">${esc(s.scenario)}</a>`
      : esc(s.scenario);
    return `<tr><th>${name}</th><td class="why">${esc(state(s))}</td></tr>`;
  });
  const parts = [
    `<h2>${esc(cand)} vs ${esc(ref)}</h2>`,
    `<p class="summary">${esc(candidateSummary(d, c))}</p>`,
    `<table class="verdicts"><thead><tr><th>scenario</th><th>${esc(cand)} vs ${esc(ref)}</th></tr></thead><tbody>${rows.join("\n")}</tbody></table>`,
  ];
  const reference = runs[0] as TraceRun;
  const candidate = runs[i + 1] as TraceRun;
  for (const s of c.scenarios.filter((x) => x.differs)) {
    const id = slug(i, s.scenario);
    const lines = scenarioLines(s, ref, cand).map((l) => `<li>${esc(l)}</li>`);
    parts.push(
      `<section class="scenario" id="${attr(id)}"><h3>${esc(s.scenario)}</h3>`,
      `<ul class="differs">${lines.join("")}</ul>`,
      '<div class="sides">',
      `<div><h4>${esc(ref)}</h4>${await timelineOf(reference, s.scenario, `${id}-reference`)}</div>`,
      `<div><h4>${esc(cand)}</h4>${await timelineOf(candidate, s.scenario, `${id}-candidate`)}</div>`,
      "</div></section>",
    );
  }
  return parts.join("\n");
}

/** The page; `runs` are the runs the diff compared (reference first), whose traces it draws. */
export async function renderTraceDiffHtml(d: TraceDiff, runs: readonly TraceRun[]): Promise<string> {
  const sections: string[] = [];
  for (const [i, c] of d.candidates.entries()) sections.push(await candidateSection(d, c, i, runs));
  const runLine = (what: string, r: TraceDiff["reference"]) =>
    `${what} ${esc(r.name)}: ${esc(r.dir)} (${esc(r.label)})`;
  const closest = closestLine(d);
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${esc(`erdma-hil diff --traces: ${[d.reference, ...d.candidates.map((c) => c.candidate)].map((r) => r.name).join(" vs ")}`)}</title>`,
    `<style>${REPORT_CSS}\n${CSS}</style></head><body>`,
    "<h1>erdma-hil diff --traces</h1>",
    `<p class="meta">${[runLine("reference", d.reference), ...d.candidates.map((c) => runLine("candidate", c.candidate))].join("<br>")}</p>`,
    ...(closest ? [`<p class="summary">${esc(closest)}</p>`] : []),
    `<div class="legend">${LEGEND.map(([k, label]) => `<span><i style="background:${MARK_COLOURS[k] ?? "#000"}"></i>${esc(label)}</span>`).join("")}</div>`,
    ...sections,
    "</body></html>",
    "",
  ].join("\n");
}
