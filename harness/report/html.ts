/**
 * The HTML report: one self-contained file (inline CSS and SVG, no scripts or external assets),
 * readable without a mouse and printable. The command line that made the run, the verdict table
 * (scenario x rule set, coloured, with the reason), then per scenario: its verdicts, the command
 * line that reruns it alone (rerun.ts), the rules that did not pass with the problems each found
 * and a link that highlights their WRs and completions (rule-links.ts), the timeline picture
 * (svg.ts), the event tables with every field of every event the picture draws (event-table.ts)
 * and the evidence. A repeated run (--repeat n) has a row and a section per repetition
 * (`<scenario>#<k>`), and a stability table first: per scenario and rule set the verdict every
 * repetition agrees on, or FLAKY.
 */

import {
  loadHwTrace,
  loadVerbsTrace,
  type RunDir,
  runSetting,
  scenariosOf,
  stabilityOf,
  stageChecks,
} from "../rundir/read.ts";
import type { RunScenario } from "../rundir/schema.ts";
import { stabilityCell } from "../rundir/stability.ts";
import type { Verdict } from "../verdict.ts";
import { eventRowId, hwEventTable, hwRowId, verbsEventTable } from "./event-table.ts";
import { REPORT_CSS } from "./html-style.ts";
import { madeBy, rerunScenario } from "./rerun.ts";
import { focusBanners, highlightCss, type RuleLink, ruleLinks, ruleList } from "./rule-links.ts";
import { MARK_COLOURS, renderTimelineSvg } from "./svg.ts";
import { summaryLine } from "./table.ts";
import { buildTimeline } from "./timeline.ts";
import { xmlAttr as attr, xmlText as esc } from "./xml.ts";

const LEGEND: Array<[string, string]> = [
  ["post", "post (rc 0)"],
  ["marker", "drain marker"],
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

export function slug(name: string): string {
  return `s-${name.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
}

export function verdictCell(v: Verdict | undefined, href?: string): string {
  if (!v) return `<td class="v">-</td>`;
  const inner = href ? `<a href="${attr(href)}">${v}</a>` : v;
  return `<td class="v v-${v}">${inner}</td>`;
}

const RANK: readonly Verdict[] = ["FAIL", "ERROR", "MISS", "XPASS", "XFAIL", "PASS", "SKIP"];

/** Why a scenario's row is what it is: the reason of its worst verdict's first rule that says so. */
function rowReason(s: RunScenario): string {
  if (s.outcome) return s.outcome.reason;
  const worst = [...s.judgements].sort((a, b) => RANK.indexOf(a.verdict) - RANK.indexOf(b.verdict))[0];
  if (!worst) return "";
  const rule = worst.rules.find((r) => r.verdict === worst.verdict && r.verdict !== "PASS");
  return rule ? `rule ${rule.rule}: ${rule.reason}` : "every rule holds";
}

function verdictTable(run: RunDir): string {
  const scenarios = scenariosOf(run);
  const profiles = [...new Set(scenarios.flatMap((s) => s.judgements.map((j) => j.profile)))];
  const rows = scenarios.map((s) => {
    const cells = profiles.map((p) =>
      verdictCell(s.judgements.find((x) => x.profile === p)?.verdict, `#${slug(s.name)}`),
    );
    return `<tr><th><a href="#${attr(slug(s.name))}">${esc(s.name)}</a></th>${cells.join("")}<td class="why">${esc(rowReason(s))}</td></tr>`;
  });
  return [
    `<table class="verdicts"><thead><tr><th>scenario</th>${profiles.map((p) => `<th>${esc(p)}</th>`).join("")}<th>reason</th></tr></thead>`,
    `<tbody>${rows.join("\n")}</tbody></table>`,
  ].join("\n");
}

function stabilityTable(run: RunDir): string {
  const entries = stabilityOf(run);
  const profiles = [...new Set(entries.map((e) => e.profile))];
  const scenarios = [...new Set(entries.map((e) => e.scenario))];
  const rows = scenarios.map((name) => {
    const mine = entries.filter((x) => x.scenario === name);
    const cells = profiles.map((p) => {
      const e = mine.find((x) => x.profile === p);
      return e ? `<td class="v v-${e.worst}">${esc(stabilityCell(e))}</td>` : `<td class="v">-</td>`;
    });
    const why = mine
      .map((e) => {
        const counts = Object.entries(e.verdicts)
          .map(([v, n]) => `${v} ${n}`)
          .join(", ");
        const differs = e.differs
          ? `; repetition ${e.differs.repetition}: ${e.differs.verdict}: ${e.differs.reason}`
          : "";
        return `${e.profile}: ${counts}${differs}`;
      })
      .join(" | ");
    return `<tr><th>${esc(name)}</th>${cells.join("")}<td class="why">${esc(why)}</td></tr>`;
  });
  const n = Math.max(...entries.map((e) => e.repetitions));
  return [
    `<h2>Stability over ${n} repetitions</h2>`,
    `<table class="verdicts stability"><thead><tr><th>scenario</th>${profiles.map((p) => `<th>${esc(p)}</th>`).join("")}<th>verdicts per repetition</th></tr></thead>`,
    `<tbody>${rows.join("\n")}</tbody></table>`,
  ].join("\n");
}

function stageTable(run: RunDir): string {
  const checks = stageChecks(run);
  if (checks.length === 0) return "";
  const rows = checks.map(
    (c) => `<tr><th>${esc(c.id)}</th>${verdictCell(c.verdict)}<td class="why">${esc(c.reason)}</td></tr>`,
  );
  return `<h2>${run.record.probe ? "The device probes" : "Checks"}</h2><table class="verdicts">${rows.join("\n")}</table>`;
}

function legend(): string {
  return `<div class="legend">${LEGEND.map(([k, label]) => `<span><i style="background:${MARK_COLOURS[k] ?? "#000"}"></i>${esc(label)}</span>`).join("")}</div>`;
}

function rerunBlock(run: RunDir, s: RunScenario): string {
  const r = rerunScenario(run, s);
  const notes = r.notes.map((n) => `<br><span class="meta">${esc(n)}</span>`).join("");
  return `<div class="rerun">rerun this scenario alone:<pre><code class="cmd">${esc(r.line)}</code></pre>${notes}</div>`;
}

interface Section {
  html: string;
  links: RuleLink[];
}

async function scenarioSection(run: RunDir, s: RunScenario): Promise<Section> {
  const scope = slug(s.name);
  const parts = [`<section class="scenario" id="${attr(scope)}" data-scenario="${attr(s.name)}">`];
  parts.push(`<h2>${esc(s.name)}</h2>`);
  const verdicts = s.judgements
    .map((j) => `<span class="v v-${j.verdict} badge">${esc(j.profile)}: ${j.verdict}</span>`)
    .join(" ");
  parts.push(`<p>${verdicts}${s.file ? ` <span class="meta">${esc(s.file)}</span>` : ""}</p>`);
  if (s.outcome) parts.push(`<p><b>${s.outcome.verdict}</b>: ${esc(s.outcome.reason)}</p>`);
  parts.push(rerunBlock(run, s));
  const records = (await loadVerbsTrace(run, s)) ?? [];
  const links = ruleLinks(scope, s, records);
  parts.push(ruleList(scope, links, records));
  const linked = links.some((l) => l.events.length > 0);
  if (records.length > 0) {
    const hw = await loadHwTrace(run, s);
    const tl = buildTimeline(records, hw, s.observations ?? []);
    parts.push(focusBanners(scope, links, records));
    const rowOf = (m: { ev?: number; hw?: number }) =>
      m.ev !== undefined ? eventRowId(scope, m.ev) : m.hw !== undefined ? hwRowId(scope, m.hw) : undefined;
    parts.push(renderTimelineSvg(tl, `timeline-${s.name}`, rowOf));
    const clock = hw
      ? tl.alignment
        ? `hardware events placed on the verbs clock by ${tl.alignment.anchors} shared event(s) (offset ${tl.alignment.offsetMs.toFixed(1)} ms)`
        : "hardware events aligned by their first event only (no shared event found): their positions are approximate"
      : "no hardware trace";
    parts.push(
      `<p class="meta">${records.length} verbs record(s); ${esc(clock)}. A mark links to its row in the tables below.</p>`,
    );
    parts.push(verbsEventTable(scope, records, linked));
    const shown = tl.marks.flatMap((m) => (m.hw !== undefined ? [m.hw] : []));
    if (hw)
      parts.push(
        hwEventTable(
          scope,
          hw,
          [...new Set(shown)].sort((a, b) => a - b),
          false,
        ),
      );
  } else parts.push(`<p class="meta">no verbs trace: the scenario did not run</p>`);
  const evidence = [...new Set(links.flatMap((l) => l.rule.evidence ?? []))];
  if (evidence.length > 0)
    parts.push(`<details><summary>evidence</summary><pre>${esc(evidence.join("\n"))}</pre></details>`);
  parts.push("</section>");
  return { html: parts.join("\n"), links };
}

export async function renderHtml(run: RunDir): Promise<string> {
  const r = run.record;
  const meta = [
    ...runSetting(run),
    r.boots !== undefined && `${r.boots} boot(s)`,
    r.wallMs !== undefined && `${(r.wallMs / 1000).toFixed(1)} s`,
  ].filter(Boolean);
  const sections: Section[] = [];
  for (const s of scenariosOf(run)) sections.push(await scenarioSection(run, s));
  const made = madeBy(run);
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${esc(`erdma-hil run: ${r.kernel}`)}</title>`,
    `<style>${REPORT_CSS}\n${highlightCss(sections.flatMap((x) => x.links))}</style></head><body>`,
    `<h1>erdma-hil run</h1><p class="meta">${esc(meta.join(" · "))}<br>${esc(run.dir)}</p>`,
    made
      ? `<div class="rerun">made by, in ${esc(made.cwd)}:<pre><code class="cmd">${esc(made.line)}</code></pre></div>`
      : "",
    `<p class="summary">${esc(summaryLine(r.results))}</p>`,
    ...(stabilityOf(run).length > 0 ? [stabilityTable(run)] : []),
    scenariosOf(run).length > 0 ? verdictTable(run) : "",
    stageTable(run),
    sections.length > 0 ? legend() : "",
    ...sections.map((x) => x.html),
    "</body></html>",
    "",
  ].join("\n");
}
