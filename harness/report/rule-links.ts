/**
 * Which events a rule that did not pass is about, and the links that show them. The oracle's
 * problems name WRs (with the record that posted each) and the completions they judged wrong, by
 * their index in the scenario's verbs trace. Each rule with such events gets an anchor
 * (`#<scenario>--<rule set>--rule-<rule>`, a plain URL fragment that can be shared): following it
 * makes that anchor the page's :target, and the stylesheet made here outlines exactly those
 * events in the timeline and in the event table, dims the other marks, and shows a banner saying
 * what is highlighted (the anchor sits just above the timeline, so the browser scrolls there).
 * No script: a link is keyboard-reachable (Tab, Enter) and works wherever the page is opened.
 *
 * A record written before problems named their posts and completions (no `post` on any WR) gets
 * the post records of its WRs found by qp, queue and wr_id, and all their completions, marked as
 * inferred.
 */
import { groupInOrder } from "../../util/group-by.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { RunRule, RunScenario } from "../rundir/schema.ts";
import { eventRowId } from "./event-table.ts";
import { xmlAttr as attr, xmlText as esc } from "./xml.ts";

type WrRef = NonNullable<NonNullable<RunRule["problems"]>[number]["wrs"]>[number];

export interface ProblemEvents {
  reason: string;
  wrs: WrRef[];
  /** the trace indexes of the records that posted its WRs */
  posts: number[];
  /** the trace indexes of the completions it is about */
  cqes: number[];
}

export interface RuleLink {
  /** the anchor's id: `<scenario slug>--<rule set>--rule-<rule>` */
  anchor: string;
  profile: string;
  rule: RunRule;
  problems: ProblemEvents[];
  /** every event of its problems, in trace order */
  events: number[];
  /** the record predates event references: the posts and completions were found from the WRs */
  inferred: boolean;
}

/** The verdicts whose rules get a list entry (and a link when they name events). */
const SHOWN = new Set(["FAIL", "ERROR", "MISS", "XFAIL", "XPASS"]);

export function ruleAnchor(scope: string, profile: string, rule: string): string {
  return `${scope}--${profile}--rule-${rule}`.replace(/[^a-zA-Z0-9_-]/g, "_");
}

const isPost = (r: TraceRecord | undefined, w: WrRef): boolean =>
  (r?.ev === "post" || r?.ev === "drain_marker") && r.qp === w.qp && r.queue === w.queue;

/** The records that posted WR `w`: the one the problem names, else those whose wr_id range holds it. */
function postsOf(w: WrRef, records: readonly TraceRecord[]): number[] {
  if (w.post !== undefined && isPost(records[w.post], w)) return [w.post];
  return records.flatMap((r, i) => {
    if (!isPost(r, w)) return [];
    if (r.ev === "post") return w.wrId >= r.wr_id && w.wrId < r.wr_id + r.count ? [i] : [];
    return r.ev === "drain_marker" && (r.wr_id ?? -1) === w.wrId ? [i] : [];
  });
}

/** Every completion of WR `w` posted by record `post` (an old record's inference). */
function completionsOf(w: WrRef, post: number, records: readonly TraceRecord[]): number[] {
  const p = records[post];
  if (!p || (p.ev !== "post" && p.ev !== "drain_marker")) return [];
  return records.flatMap((r, i) => {
    if (r.ev === "cqe" && p.ev === "post")
      return r.qp === w.qp && r.queue === w.queue && r.wr_id === w.wrId && r.call === p.call ? [i] : [];
    if (r.ev === "drain_marker_cqe" && p.ev === "drain_marker")
      return r.qp === w.qp && r.queue === w.queue && r.call === p.call ? [i] : [];
    return [];
  });
}

const sorted = (xs: Iterable<number>) => [...new Set(xs)].sort((a, b) => a - b);

/** The events a rule's problems are about, resolved against the scenario's trace. */
export function ruleEvents(
  rule: RunRule,
  records: readonly TraceRecord[],
): { problems: ProblemEvents[]; events: number[]; inferred: boolean } {
  const problems = rule.problems ?? [];
  const inferred = !problems.some((p) => p.cqes !== undefined || p.wrs?.some((w) => w.post !== undefined));
  const inTrace = (i: number) => Number.isInteger(i) && i >= 0 && i < records.length;
  const resolved = problems.map((p): ProblemEvents => {
    const wrs = p.wrs ?? [];
    const posts = wrs.map((w) => postsOf(w, records));
    const cqes = inferred
      ? wrs.flatMap((w, k) => (posts[k] ?? []).flatMap((post) => completionsOf(w, post, records)))
      : (p.cqes ?? []).filter(inTrace);
    return { reason: p.reason, wrs, posts: sorted(posts.flat()), cqes: sorted(cqes) };
  });
  return {
    problems: resolved,
    events: sorted(resolved.flatMap((p) => [...p.posts, ...p.cqes])),
    inferred,
  };
}

/** The rules of a scenario that did not pass (or are a known bug's), with the events they name. */
export function ruleLinks(scope: string, s: RunScenario, records: readonly TraceRecord[]): RuleLink[] {
  return s.judgements.flatMap((j) =>
    j.rules
      .filter((r) => SHOWN.has(r.verdict))
      .map((rule) => ({
        anchor: ruleAnchor(scope, j.profile, rule.rule),
        profile: j.profile,
        rule,
        ...ruleEvents(rule, records),
      })),
  );
}

const count = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** "1 WR, 2 CQEs" */
function eventWords(l: RuleLink, records: readonly TraceRecord[]): string {
  const posts = sorted(l.problems.flatMap((p) => p.posts));
  const wrs = new Set(
    l.problems.flatMap((p) => p.wrs.map((w) => `${w.qp}/${w.queue}/${w.wrId}/${w.post ?? ""}`)),
  );
  const cqes = l.events.filter((e) => records[e]?.ev === "cqe" || records[e]?.ev === "drain_marker_cqe");
  return [
    wrs.size > 0 ? `${count(wrs.size, "WR")} (${count(posts.length, "post")})` : "",
    cqes.length > 0 ? count(cqes.length, "CQE") : "",
  ]
    .filter(Boolean)
    .join(", ");
}

function eventLink(scope: string, ev: number): string {
  return `<a href="#${attr(eventRowId(scope, ev))}">#${ev}</a>`;
}

function wrText(w: WrRef): string {
  return `${w.qp} ${w.queue} ${w.wrId === -1 ? "drain marker" : `WR ${w.wrId}`}`;
}

const MAX_PROBLEMS = 25;

/** A problem's reason with its numbers blanked: near-identical problems (a WR each) share one. */
function shapeOf(reason: string): string {
  return reason.replace(/\d+/g, "#");
}

function problemRefs(scope: string, p: ProblemEvents): string[] {
  return [
    p.wrs.length > 0 ? esc(p.wrs.map(wrText).join(", ")) : "",
    p.posts.length > 0 ? `posted by ${p.posts.map((e) => eventLink(scope, e)).join(" ")}` : "",
    p.cqes.length > 0 ? `completions ${p.cqes.map((e) => eventLink(scope, e)).join(" ")}` : "",
  ].filter(Boolean);
}

/** The problems, those alike (the same reason but for their numbers) folded under the first. */
function problemItems(scope: string, l: RuleLink): string {
  const groups = groupInOrder(l.problems, (p) => shapeOf(p.reason));
  const items = groups.slice(0, MAX_PROBLEMS).map((g) => {
    const [first, ...alike] = g as [ProblemEvents, ...ProblemEvents[]];
    const refs = problemRefs(scope, first);
    const more =
      alike.length > 0
        ? ` <span class="refs">and ${alike.length} more like it: ${alike
            .map((p) => (p.wrs.length > 0 ? esc(p.wrs.map(wrText).join(", ")) : esc(p.reason)))
            .join(", ")}</span>`
        : "";
    return `<li>${esc(first.reason)}${refs.length > 0 ? ` <span class="refs">(${refs.join("; ")})</span>` : ""}${more}</li>`;
  });
  const rest =
    groups.length > MAX_PROBLEMS
      ? [`<li>and ${groups.length - MAX_PROBLEMS} more kinds: their events are highlighted too</li>`]
      : [];
  return items.length > 0 ? `<ul class="problems">${[...items, ...rest].join("")}</ul>` : "";
}

/** What makes a rule's verdict the same under several rule sets: the rule, verdict, reason and problems. */
function sameness(l: RuleLink): string {
  const r = l.rule;
  return JSON.stringify([r.rule, r.verdict, r.reason, l.problems.map((p) => p.reason)]);
}

/**
 * The list of a scenario's rules that did not pass: each reason, its problems and events, its link;
 * a rule that broke the same way under several rule sets is one item naming them.
 */
export function ruleList(scope: string, links: readonly RuleLink[], records: readonly TraceRecord[]): string {
  if (links.length === 0) return "";
  const groups = groupInOrder(links, sameness);
  const items = groups.map((g) => {
    const l = g[0] as RuleLink;
    const r = l.rule;
    const known = r.knownBug
      ? ` <span class="meta">known bug ${esc(r.knownBug.reference)}</span>`
      : r.injectedFault
        ? ' <span class="meta">injected fault: the scenario broke it on purpose</span>'
        : "";
    const show =
      l.events.length > 0
        ? ` <a class="show" href="#${attr(l.anchor)}">show its ${esc(eventWords(l, records))} on the timeline</a>${l.inferred ? ' <span class="meta">(found from the WRs: this record predates event references)</span>' : ""}`
        : "";
    const profiles = g.map((x) => x.profile).join(", ");
    return `<li class="rule" data-anchor="${attr(l.anchor)}"><span class="v v-${r.verdict} badge">${r.verdict}</span> [${esc(profiles)}] rule ${esc(r.rule)} (${esc(r.title)}): ${esc(r.reason)}${known}${show}${problemItems(scope, l)}</li>`;
  });
  return `<ul class="rules" id="${attr(`${scope}--rules`)}">\n${items.join("\n")}\n</ul>`;
}

/**
 * The anchors the links point at, each a banner shown only while it is the page's target. They
 * go right before the timeline: the highlight rules reach the picture and the tables after them.
 */
export function focusBanners(
  scope: string,
  links: readonly RuleLink[],
  records: readonly TraceRecord[],
): string {
  return links
    .filter((l) => l.events.length > 0)
    .map(
      (l) =>
        `<div class="focus" id="${attr(l.anchor)}"><b>Highlighted:</b> rule ${esc(l.rule.rule)} under ${esc(l.profile)} (${l.rule.verdict}): ${esc(l.rule.reason)}. Its ${esc(eventWords(l, records))} are outlined in the timeline and the verbs trace below. <a href="#${attr(`${scope}--rules`)}">Back to the rules</a></div>`,
    )
    .join("\n");
}

/** The stylesheet that highlights each link's events while its anchor is the target. */
export function highlightCss(links: readonly RuleLink[]): string {
  return links
    .filter((l) => l.events.length > 0)
    .map((l) => {
      const on = `#${l.anchor}:target~*`;
      const evs = l.events.map((e) => `[data-ev="${e}"]`).join(",");
      return [
        `${on} :is(${evs}){--hl:1}`,
        `${on} tr:is(${evs})>td{background:#ffe14d}`,
        `${on} tr:is(${evs})>td:first-child{box-shadow:inset 5px 0 #000}`,
        `${on} g.mark:not(:is(${evs})){opacity:.2}`,
        `${on} g.mark:is(${evs})>:is(rect,circle){stroke:#000;stroke-width:3px}`,
      ].join("\n");
    })
    .join("\n");
}
