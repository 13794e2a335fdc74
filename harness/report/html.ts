/**
 * The HTML report: one self-contained file (inline CSS and SVG, no scripts or external assets).
 * The verdict table (scenario x oracle profile, coloured, each cell's reason on hover), then per
 * scenario its rules that did not pass, a timeline picture (svg.ts) and the evidence. A repeated
 * run (--repeat n) has a row and a section per repetition (`<scenario>#<k>`), and a stability
 * table first: per scenario and profile the verdict every repetition agrees on, or FLAKY.
 */

import {
  describeDevice,
  deviceOf,
  loadHwTrace,
  loadVerbsTrace,
  type RunDir,
  scenariosOf,
  stabilityOf,
  stageChecks,
} from "../rundir/read.ts";
import type { RunScenario } from "../rundir/schema.ts";
import { stabilityCell } from "../suite/repeat.ts";
import type { Verdict } from "../verdict.ts";
import { MARK_COLOURS, renderTimelineSvg } from "./svg.ts";
import { summaryLine } from "./table.ts";
import { buildTimeline } from "./timeline.ts";
import { xmlAttr as attr, xmlText as esc } from "./xml.ts";

const VERDICT_COLOURS: Record<Verdict, string> = {
  PASS: "#8ae234",
  FAIL: "#ef2929",
  ERROR: "#ad7fa8",
  MISS: "#babdb6",
  SKIP: "#eeeeec",
  XFAIL: "#fcaf3e",
  XPASS: "#729fcf",
};

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
table.verdicts{border-collapse:collapse}table.verdicts td,table.verdicts th{border:1px solid #bbb;padding:3px 8px;text-align:left}
td.v{font-weight:600;text-align:center}
${Object.entries(VERDICT_COLOURS)
  .map(([v, c]) => `.v-${v}{background:${c}}`)
  .join("")}
.meta{color:#555}.summary{font-family:monospace;font-weight:600}
svg.timeline{display:block;margin:.5em 0;border:1px solid #ddd;background:#fff}
svg .lane-label{font-size:12px;fill:#333}svg .mark-label,svg .span-label{font-size:10px;fill:#222}
svg .tick{font-size:10px;fill:#555}svg .hang-label{font-size:11px;font-weight:700;fill:#cc0000}
svg g.mark:hover rect,svg g.mark:hover circle{stroke:#000;stroke-width:1.5}
.legend span{display:inline-block;margin-right:1em;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:24em;font-size:12px}
ul.rules li{margin:.2em 0}
`;

const LEGEND: Array<[string, string]> = [
  ["post", "post (rc 0)"],
  ["post-err", "post failed"],
  ["cqe-ok", "CQE success"],
  ["cqe-flush", "CQE flush"],
  ["cqe-err", "CQE error"],
  ["state", "QP state (verbs)"],
  ["hw-state", "QP state (device)"],
  ["drain", "drain returned"],
  ["hang", "hang"],
  ["hw-wqe", "WQE executed"],
  ["hw-flush", "flush"],
  ["hw-reflush", "REFLUSH"],
  ["hw-fault", "fault fired"],
  ["hw-irq", "IRQ"],
];

function slug(name: string): string {
  return `s-${name.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
}

function verdictCell(v: Verdict | undefined, title: string, href?: string): string {
  if (!v) return `<td class="v">-</td>`;
  const inner = href ? `<a href="${attr(href)}">${v}</a>` : v;
  return `<td class="v v-${v}" title="${attr(title)}">${inner}</td>`;
}

function verdictTable(run: RunDir): string {
  const scenarios = scenariosOf(run);
  const profiles = [...new Set(scenarios.flatMap((s) => s.judgements.map((j) => j.profile)))];
  const rows = scenarios.map((s) => {
    const cells = profiles.map((p) => {
      const j = s.judgements.find((x) => x.profile === p);
      const why =
        s.outcome?.reason ??
        (j
          ? (j.rules.find((r) => r.verdict === j.verdict && r.verdict !== "PASS")?.reason ??
            "every rule holds")
          : "");
      return verdictCell(j?.verdict, why, `#${slug(s.name)}`);
    });
    return `<tr><th><a href="#${attr(slug(s.name))}">${esc(s.name)}</a></th>${cells.join("")}</tr>`;
  });
  return [
    `<table class="verdicts"><thead><tr><th>scenario</th>${profiles.map((p) => `<th>${esc(p)}</th>`).join("")}</tr></thead>`,
    `<tbody>${rows.join("\n")}</tbody></table>`,
  ].join("\n");
}

function stabilityTable(run: RunDir): string {
  const entries = stabilityOf(run);
  const profiles = [...new Set(entries.map((e) => e.profile))];
  const scenarios = [...new Set(entries.map((e) => e.scenario))];
  const rows = scenarios.map((name) => {
    const cells = profiles.map((p) => {
      const e = entries.find((x) => x.scenario === name && x.profile === p);
      if (!e) return `<td class="v">-</td>`;
      const counts = Object.entries(e.verdicts)
        .map(([v, n]) => `${v} ${n}`)
        .join(", ");
      const why = e.differs
        ? `; repetition ${e.differs.repetition}: ${e.differs.verdict}: ${e.differs.reason}`
        : "";
      return `<td class="v v-${e.worst}" title="${attr(`${counts}${why}`)}">${esc(stabilityCell(e))}</td>`;
    });
    return `<tr><th>${esc(name)}</th>${cells.join("")}</tr>`;
  });
  const n = Math.max(...entries.map((e) => e.repetitions));
  return [
    `<h2>Stability over ${n} repetitions</h2>`,
    `<table class="verdicts stability"><thead><tr><th>scenario</th>${profiles.map((p) => `<th>${esc(p)}</th>`).join("")}</tr></thead>`,
    `<tbody>${rows.join("\n")}</tbody></table>`,
  ].join("\n");
}

function stageTable(run: RunDir): string {
  const checks = stageChecks(run);
  if (checks.length === 0) return "";
  const rows = checks.map(
    (c) => `<tr><th>${esc(c.id)}</th>${verdictCell(c.verdict, c.reason)}<td>${esc(c.reason)}</td></tr>`,
  );
  return `<h2>${run.record.probe ? "The device probes" : "Checks"}</h2><table class="verdicts">${rows.join("\n")}</table>`;
}

function legend(): string {
  return `<div class="legend">${LEGEND.map(([k, label]) => `<span><i style="background:${MARK_COLOURS[k] ?? "#000"}"></i>${esc(label)}</span>`).join("")}</div>`;
}

async function scenarioSection(run: RunDir, s: RunScenario): Promise<string> {
  const parts = [`<section class="scenario" id="${attr(slug(s.name))}" data-scenario="${attr(s.name)}">`];
  parts.push(`<h2>${esc(s.name)}</h2>`);
  const verdicts = s.judgements
    .map(
      (j) => `<span class="v v-${j.verdict}" style="padding:1px 6px">${esc(j.profile)}: ${j.verdict}</span>`,
    )
    .join(" ");
  parts.push(`<p>${verdicts}${s.file ? ` <span class="meta">${esc(s.file)}</span>` : ""}</p>`);
  if (s.outcome) parts.push(`<p><b>${s.outcome.verdict}</b>: ${esc(s.outcome.reason)}</p>`);
  const notPassing = s.judgements.flatMap((j) =>
    j.rules
      .filter((r) => r.verdict !== "PASS" && r.verdict !== "SKIP")
      .map((r) => ({ profile: j.profile, r })),
  );
  if (notPassing.length > 0)
    parts.push(
      `<ul class="rules">${notPassing
        .map(
          ({ profile, r }) =>
            `<li><span class="v v-${r.verdict}" style="padding:0 4px">${r.verdict}</span> [${esc(profile)}] rule ${esc(r.rule)} (${esc(r.title)}): ${esc(r.reason)}${r.knownBug ? ` <span class="meta">known bug ${esc(r.knownBug.reference)}</span>` : ""}</li>`,
        )
        .join("\n")}</ul>`,
    );
  const records = await loadVerbsTrace(run, s);
  if (records && records.length > 0) {
    const hw = await loadHwTrace(run, s);
    const tl = buildTimeline(records, hw, s.observations ?? []);
    parts.push(renderTimelineSvg(tl, `timeline-${s.name}`));
    const clock = hw
      ? tl.alignment
        ? `hardware events placed on the verbs clock by ${tl.alignment.anchors} shared event(s) (offset ${tl.alignment.offsetMs.toFixed(1)} ms)`
        : "hardware events aligned by their first event only (no shared event found): their positions are approximate"
      : "no hardware trace";
    parts.push(
      `<p class="meta">${records.length} verbs record(s); ${esc(clock)}. Hover a mark for its details.</p>`,
    );
  } else parts.push(`<p class="meta">no verbs trace: the scenario did not run</p>`);
  const evidence = [...new Set(notPassing.flatMap(({ r }) => r.evidence ?? []))];
  if (evidence.length > 0)
    parts.push(`<details><summary>evidence</summary><pre>${esc(evidence.join("\n"))}</pre></details>`);
  parts.push("</section>");
  return parts.join("\n");
}

export async function renderHtml(run: RunDir): Promise<string> {
  const r = run.record;
  const device = deviceOf(run);
  const meta = [
    `kernel ${r.kernel}${r.release ? ` (${r.release})` : ""}`,
    r.driver && `driver ${r.driver}`,
    r.executor && `executor ${r.executor}`,
    device && describeDevice(device),
    r.boots !== undefined && `${r.boots} boot(s)`,
    r.wallMs !== undefined && `${(r.wallMs / 1000).toFixed(1)} s`,
  ].filter(Boolean);
  const sections: string[] = [];
  for (const s of scenariosOf(run)) sections.push(await scenarioSection(run, s));
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${esc(`erdma-hil run: ${r.kernel}`)}</title>`,
    `<style>${CSS}</style></head><body>`,
    `<h1>erdma-hil run</h1><p class="meta">${esc(meta.join(" · "))}<br>${esc(run.dir)}</p>`,
    `<p class="summary">${esc(summaryLine(r.results))}</p>`,
    ...(stabilityOf(run).length > 0 ? [stabilityTable(run)] : []),
    scenariosOf(run).length > 0 ? verdictTable(run) : "",
    stageTable(run),
    sections.length > 0 ? legend() : "",
    ...sections,
    "</body></html>",
    "",
  ].join("\n");
}
