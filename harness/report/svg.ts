/**
 * Draws a Timeline as inline SVG: one row a lane, time on x, every mark with a <title> (a tooltip;
 * the event tables beside the picture have every field) and, when the page has one, a link to its
 * row in an event table. A mark carries the index of the event it draws (data-ev: the verbs trace
 * record, data-hw: the hardware event), which the report's rule links highlight. Long quiet stretches (a drain waiting seconds for a marker that never comes) are cut to a
 * fixed width with a break mark saying how long they were, so the busy parts stay readable; the
 * hang point is a red line across every lane.
 */
import { LANES, type Mark, type Timeline } from "./timeline.ts";
import { xmlAttr, xmlText } from "./xml.ts";

const LEFT = 120;
const WIDTH = 1000;
const LANE_H = 26;
const TOP = 30;
const BREAK_PX = 28;

export const MARK_COLOURS: Record<string, string> = {
  post: "#3465a4",
  marker: "#204a87",
  "post-err": "#cc0000",
  "cqe-ok": "#4e9a06",
  "cqe-flush": "#f5a623",
  "cqe-err": "#cc0000",
  state: "#75507b",
  "state-err": "#cc0000",
  cm: "#888a85",
  drain: "#5c9fd6",
  hang: "#cc0000",
  "hw-wqe": "#73a7d9",
  "hw-cqe": "#8ae234",
  "hw-flush": "#f5a623",
  "hw-reflush": "#c17d11",
  "hw-error": "#cc0000",
  "hw-state": "#ad7fa8",
  "hw-db": "#babdb6",
  "hw-irq": "#555753",
  "hw-fault": "#ef2929",
  "hw-fault-armed": "#fcaf3e",
};

/** A piecewise-linear map from ms to px that squeezes gaps longer than `maxGap` to BREAK_PX. */
export interface Axis {
  x(t: number): number;
  breaks: Array<{ x: number; ms: number }>;
  ticks: Array<{ x: number; t: number }>;
}

export function makeAxis(times: readonly number[], end: number): Axis {
  const pts = [...new Set([0, ...times.filter((t) => t >= 0 && t <= end), end])].sort((a, b) => a - b);
  const span = Math.max(end, 1e-6);
  const maxGap = span / 8;
  // compressed units: a long gap counts as `cut` units, whatever its length
  const cut = maxGap / 2;
  const knots: Array<{ t: number; u: number }> = [{ t: pts[0] ?? 0, u: 0 }];
  const breaks: Array<{ u: number; ms: number }> = [];
  for (let i = 1; i < pts.length; i++) {
    const prev = knots.at(-1) as { t: number; u: number };
    const gap = (pts[i] as number) - prev.t;
    if (gap > maxGap && pts.length > 2) {
      breaks.push({ u: prev.u + cut / 2, ms: gap });
      knots.push({ t: pts[i] as number, u: prev.u + cut });
    } else knots.push({ t: pts[i] as number, u: prev.u + gap });
  }
  const total = Math.max((knots.at(-1) as { u: number }).u, 1e-6);
  const scale = (WIDTH - BREAK_PX) / total;
  const toU = (t: number): number => {
    if (t <= (knots[0] as { t: number }).t) return 0;
    for (let i = 1; i < knots.length; i++) {
      const a = knots[i - 1] as { t: number; u: number };
      const b = knots[i] as { t: number; u: number };
      if (t <= b.t) return b.t === a.t ? b.u : a.u + ((t - a.t) / (b.t - a.t)) * (b.u - a.u);
    }
    return total;
  };
  const x = (t: number) => LEFT + toU(t) * scale;
  const ticks: Array<{ x: number; t: number }> = [];
  // a tick at the start of each stretch between breaks, and at the end
  let lastX = -1e9;
  for (const k of knots) {
    const kx = LEFT + k.u * scale;
    if (kx - lastX >= 90) {
      ticks.push({ x: kx, t: k.t });
      lastX = kx;
    }
  }
  return { x, breaks: breaks.map((b) => ({ x: LEFT + b.u * scale, ms: b.ms })), ticks };
}

function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms >= 10 ? 0 : 1)} ms`;
}

/** Where a mark's details are: the id of its row in an event table, if the page has one. */
export type RowOf = (m: Mark) => string | undefined;

/** The mark, linked to its row (kept out of the tab order: the tables are reachable on their own). */
function linked(svg: string, m: Mark, rowOf: RowOf | undefined): string {
  const row = rowOf?.(m);
  return row ? `<a href="#${xmlAttr(row)}" tabindex="-1">${svg}</a>` : svg;
}

function markSvg(m: Mark, axis: Axis, y: number, showLabel: boolean): string {
  const colour = MARK_COLOURS[m.kind] ?? "#000";
  const title = `<title>${xmlText(m.title)}</title>`;
  const x = axis.x(m.t);
  const ref = m.ev !== undefined ? ` data-ev="${m.ev}"` : m.hw !== undefined ? ` data-hw="${m.hw}"` : "";
  const attrs = `class="mark ${m.kind}" data-kind="${m.kind}"${ref}`;
  if (m.t2 !== undefined) {
    const w = Math.max(2, axis.x(m.t2) - x);
    const label =
      m.label && showLabel
        ? `<text x="${(x + 4).toFixed(1)}" y="${y + 4}" class="span-label">${xmlText(m.label)}</text>`
        : "";
    return `<g ${attrs}><rect x="${x.toFixed(1)}" y="${y - 8}" width="${w.toFixed(1)}" height="16" rx="3" fill="${colour}" fill-opacity="${m.kind === "hang" ? 0.35 : 0.5}" stroke="${colour}"/>${label}${title}</g>`;
  }
  const big =
    m.kind.startsWith("post") ||
    m.kind === "marker" ||
    m.kind.startsWith("state") ||
    m.kind === "hw-fault" ||
    m.kind === "hw-reflush";
  const shape = m.kind.startsWith("cqe")
    ? `<circle cx="${x.toFixed(1)}" cy="${y}" r="4" fill="${colour}"/>`
    : big
      ? `<rect x="${(x - 3).toFixed(1)}" y="${y - 8}" width="6" height="16" fill="${colour}"/>`
      : `<rect x="${(x - 1).toFixed(1)}" y="${y - 6}" width="2" height="12" fill="${colour}"/>`;
  const label =
    m.label && showLabel
      ? `<text x="${(x + 5).toFixed(1)}" y="${y - 9}" class="mark-label">${xmlText(m.label)}</text>`
      : "";
  return `<g ${attrs}>${shape}${label}${title}</g>`;
}

/** A lane's marks in time order; a label that would run into the one before it is left to the hover text. */
function laneMarks(
  marks: readonly Mark[],
  lane: string,
  axis: Axis,
  y: number,
  rowOf: RowOf | undefined,
): string[] {
  let labelEnd = Number.NEGATIVE_INFINITY;
  return marks
    .filter((m) => m.lane === lane)
    .sort((a, b) => a.t - b.t)
    .map((m) => {
      const x = axis.x(m.t);
      const show = m.label !== undefined && (m.t2 !== undefined || x >= labelEnd);
      if (show && m.t2 === undefined) labelEnd = x + 5 + (m.label?.length ?? 0) * 6.2;
      return linked(markSvg(m, axis, y, show), m, rowOf);
    });
}

export function renderTimelineSvg(tl: Timeline, id: string, rowOf?: RowOf): string {
  const lanes = LANES.filter((l) => l.id === "drain" || tl.marks.some((m) => m.lane === l.id));
  const height = TOP + lanes.length * LANE_H + (tl.hangs.length > 0 ? 44 : 30);
  const axis = makeAxis(
    tl.marks.flatMap((m) => (m.t2 === undefined ? [m.t] : [m.t, m.t2])),
    tl.end,
  );
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" id="${xmlAttr(id)}" width="${LEFT + WIDTH + 20}" height="${height}" viewBox="0 0 ${LEFT + WIDTH + 20} ${height}" role="img">`,
    `<title>${xmlText(`timeline of ${id}`)}</title>`,
  ];
  lanes.forEach((l, i) => {
    const y = TOP + i * LANE_H + LANE_H / 2;
    out.push(
      `<g class="lane" data-lane="${l.id}">`,
      `<rect x="${LEFT}" y="${y - LANE_H / 2}" width="${WIDTH}" height="${LANE_H}" fill="${i % 2 ? "#f6f6f6" : "#ffffff"}"/>`,
      `<text x="${LEFT - 8}" y="${y + 4}" text-anchor="end" class="lane-label">${xmlText(l.label)}</text>`,
      ...laneMarks(tl.marks, l.id, axis, y, rowOf),
      "</g>",
    );
  });
  const bottom = TOP + lanes.length * LANE_H;
  for (const b of axis.breaks)
    out.push(
      `<g class="axis-break"><path d="M${(b.x - 4).toFixed(1)} ${TOP} l8 0 M${(b.x - 4).toFixed(1)} ${bottom} l8 0" stroke="#888"/><line x1="${b.x.toFixed(1)}" y1="${TOP}" x2="${b.x.toFixed(1)}" y2="${bottom}" stroke="#888" stroke-dasharray="2 3"/><text x="${b.x.toFixed(1)}" y="${TOP - 6}" text-anchor="middle" class="tick">≈${xmlText(fmtMs(b.ms))}</text><title>${xmlText(`${fmtMs(b.ms)} with nothing happening, drawn short`)}</title></g>`,
    );
  for (const t of axis.ticks)
    out.push(
      `<g class="tick"><line x1="${t.x.toFixed(1)}" y1="${bottom}" x2="${t.x.toFixed(1)}" y2="${bottom + 5}" stroke="#555"/><text x="${t.x.toFixed(1)}" y="${bottom + 17}" text-anchor="middle" class="tick">${xmlText(fmtMs(t.t))}</text></g>`,
    );
  for (const h of tl.hangs) {
    const x = axis.x(h.noticed);
    out.push(
      `<g class="hang-marker" data-op="${xmlAttr(h.op)}"><line x1="${x.toFixed(1)}" y1="${TOP - 4}" x2="${x.toFixed(1)}" y2="${bottom}" stroke="#cc0000" stroke-width="2" stroke-dasharray="5 3"/><text x="${(x - 4).toFixed(1)}" y="${bottom + 34}" text-anchor="end" class="hang-label">HANG: ${xmlText(h.text)}</text><title>${xmlText(`${h.text}\n${h.stack}`)}</title></g>`,
    );
  }
  out.push("</svg>");
  return out.join("\n");
}
