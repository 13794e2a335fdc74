// The HTML report: self-contained, the verdict table, one timeline SVG per scenario with the
// lanes its trace has, the hang marker on the stuck drain only; and the clock alignment it rests on.
// On a real run with failed rules (test/fixtures/rundir-fail): each rule that did not pass links to
// exactly the events its problems name (checked against the trace itself), every mark's details
// are in a table row, each scenario has the exact rerun line, and the print stylesheet opens
// every <details>.
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { renderHtml, slug } from "../../harness/report/html.ts";
import { makeAxis } from "../../harness/report/svg.ts";
import { alignClocks, buildTimeline } from "../../harness/report/timeline.ts";
import { loadHwTrace, loadRunDir, loadVerbsTrace } from "../../harness/rundir/read.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));
const FAIL_RUN = fileURLToPath(new URL("../fixtures/rundir-fail", import.meta.url));

function svgOf(html: string, scenario: string): string {
  const m = new RegExp(`<svg[^>]*id="timeline-${scenario}"[\\s\\S]*?</svg>`).exec(html);
  return m?.[0] ?? "";
}

t.test("self-contained, a table and a timeline per scenario", async (t) => {
  const html = await renderHtml(await loadRunDir(FIXTURE));
  t.match(html, /^<!DOCTYPE html>/);
  t.notMatch(html, /<script|<link|<img|src=|url\(|href="http/i, "no external assets, no scripts");
  t.equal((html.match(/<svg /g) ?? []).length, 3, "one SVG per scenario");
  t.notMatch(html, / title="/, "no information in hover-only title attributes");
  t.match(
    html,
    /<td class="v v-XFAIL"><a [^>]*>XFAIL<\/a><\/td><td class="why">[^<]*did not return/,
    "the table says why in a column",
  );
  t.match(html, /hil: 9 passed, 0 failed, 6 xfail/);
  const stall = svgOf(html, "fault-stall-sq-drain");
  for (const lane of ["state", "rq", "rq-cqe", "drain", "hw-queue", "hw-event"])
    t.match(stall, `data-lane="${lane}"`, `lane ${lane}`);
  t.match(stall, /<g class="hang-marker" data-op="drain">/, "the hang point");
  t.match(stall, /HANG: drain \(step 3\) did not return within 8242 ms/);
  t.match(stall, /data-kind="cqe-flush"/, "flush CQEs");
  t.match(stall, /data-kind="hw-fault"/, "the fault firing");
  t.match(stall, /data-kind="hw-reflush"/, "REFLUSH");
  t.match(stall, /<title>CQE on cq: qp rq wr_id 2000 WR_FLUSH_ERR/, "a tooltip too");
  t.match(stall, /class="axis-break"/, "the 8 s wait is drawn short");
  const idle = svgOf(html, "drain-sq-idle");
  t.notMatch(idle, /hang-marker/, "a drain that returned has no hang marker");
  t.match(idle, /data-kind="drain"/);
  t.match(svgOf(html, "partial-post-rq-overflow"), /data-kind="post"/);
});

t.test("the hardware clock is put on the verbs clock", async (t) => {
  const run = await loadRunDir(FIXTURE);
  const s = run.record.scenarios?.find((x) => x.name === "fault-stall-sq-drain");
  if (!s) throw new Error("fixture scenario missing");
  const records = (await loadVerbsTrace(run, s)) ?? [];
  const hw = (await loadHwTrace(run, s)) ?? [];
  const a = alignClocks(records, hw);
  t.ok(a && a.anchors >= 3, "QP creation, first post and ERR are shared events");
  const tl = buildTimeline(records, hw, s.observations ?? []);
  const errMs = tl.marks.find((m) => m.kind === "hw-state" && /ERROR/.test(m.label ?? ""))?.t ?? Number.NaN;
  const drainMs = tl.marks.find((m) => m.kind === "hang")?.t ?? Number.NaN;
  t.ok(Math.abs(errMs - drainMs) < 5, `the device's ERROR (${errMs}) lands at the drain (${drainMs})`);
  t.equal(tl.hangs.length, 1);
  t.ok((tl.hangs[0]?.noticed ?? 0) - (tl.hangs[0]?.t ?? 0) === 8242);
});

t.test("the axis squeezes long gaps and keeps order", async (t) => {
  const axis = makeAxis([0, 1, 2, 3, 1000], 1000);
  t.equal(axis.breaks.length, 1);
  // linearly the first 3 ms would get 0.3% of the width
  t.ok((axis.x(3) - axis.x(0)) / (axis.x(1000) - axis.x(0)) > 0.03, "the busy start keeps its room");
  t.ok(axis.x(0) < axis.x(1) && axis.x(3) < axis.x(1000));
});

/** The part of the page between a section's start and the next one's. */
function sectionOf(html: string, scenario: string): string {
  const start = html.indexOf(`<section class="scenario" id="${slug(scenario)}"`);
  return start < 0 ? "" : html.slice(start, html.indexOf("</section>", start));
}

/** The events the stylesheet highlights while `anchor` is the page's target. */
function highlighted(html: string, anchor: string): number[] {
  const m = new RegExp(`#${anchor}:target~\\* :is\\(([^)]*)\\)\\{--hl:1\\}`).exec(html);
  return [...(m?.[1] ?? "").matchAll(/data-ev="(\d+)"/g)].map((x) => Number(x[1]));
}

function trace(scenario: string): Array<Record<string, unknown>> {
  return readFileSync(join(FAIL_RUN, "traces", `${scenario}.jsonl`), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The records of `trace` that post WR `wrId` of qp's `queue`, and the completions of that WR. */
function wrEvents(records: Array<Record<string, unknown>>, queue: string, wrId: number) {
  const posts = records.flatMap((r, i) =>
    r.ev === "post" &&
    r.qp === "qp" &&
    r.queue === queue &&
    wrId >= (r.wr_id as number) &&
    wrId < (r.wr_id as number) + (r.count as number)
      ? [i]
      : [],
  );
  const cqes = records.flatMap((r, i) =>
    r.ev === "cqe" && r.qp === "qp" && r.queue === queue && r.wr_id === wrId ? [i] : [],
  );
  return { posts, cqes };
}

t.test("a failed rule links to exactly the WRs and completions it judged", async (t) => {
  const html = await renderHtml(await loadRunDir(FAIL_RUN));
  t.notMatch(html, /<script|<link|<img|src=|url\(|href="http/i, "still no scripts and no external assets");

  // WR 2003's completion written twice: its post and both completions
  const dup = trace("fault-duplicate-cqe");
  const w2003 = wrEvents(dup, "rq", 2003);
  t.equal(w2003.cqes.length, 2, "the trace has WR 2003 completed twice");
  const dupAnchor = "s-fault-duplicate-cqe--ib--rule-5";
  t.same(
    highlighted(html, dupAnchor),
    [...w2003.posts, ...w2003.cqes],
    "rule 5: WR 2003's post and its two CQEs",
  );
  const dupSection = sectionOf(html, "fault-duplicate-cqe");
  t.match(
    dupSection,
    `<a class="show" href="#${dupAnchor}">show its 1 WR (1 post), 2 CQEs on the timeline</a>`,
  );
  t.match(dupSection, `<div class="focus" id="${dupAnchor}">`, "the anchor the link targets");
  for (const ev of [...w2003.posts, ...w2003.cqes]) {
    t.match(dupSection, `<tr id="s-fault-duplicate-cqe-ev${ev}" data-ev="${ev}">`, `#${ev} has its row`);
    t.match(
      dupSection,
      new RegExp(`<g class="mark [^"]*" data-kind="[^"]*" data-ev="${ev}">`),
      `#${ev} its mark`,
    );
    t.match(
      dupSection,
      `<a href="#s-fault-duplicate-cqe-ev${ev}">#${ev}</a>`,
      `the problem links #${ev}'s row`,
    );
  }

  // the reorder: WR 2003 completed after WR 2004: both CQEs, the one post of both WRs
  const reo = trace("fault-reorder-cqe");
  const r3 = wrEvents(reo, "rq", 2003);
  const r4 = wrEvents(reo, "rq", 2004);
  t.same(
    highlighted(html, "s-fault-reorder-cqe--linux--rule-4"),
    [...new Set([...r3.posts, ...r4.posts, ...r3.cqes, ...r4.cqes])].sort((a, b) => a - b),
    "rule 4: the post and the two CQEs out of order",
  );

  // WR 1000 never completed: its post, no completion (there is none)
  const lost = trace("sq-flush-drops-oldest");
  const w1000 = wrEvents(lost, "sq", 1000);
  t.same(w1000.cqes, [], "the trace has no completion of WR 1000");
  for (const anchor of ["s-sq-flush-drops-oldest--ib--rule-5", "s-sq-flush-drops-oldest--linux--rule-9"])
    t.same(highlighted(html, anchor), w1000.posts, `${anchor}: WR 1000's post`);
  t.same(highlighted(html, "s-sq-flush-drops-oldest--ib--rule-9"), [], "rule 9 is not judged under ib");
  t.match(
    sectionOf(html, "sq-flush-drops-oldest"),
    /<span class="v v-FAIL badge">FAIL<\/span> \[linux\] rule 9 /,
  );

  // the highlight outlines rows and marks and dims the other marks
  t.match(html, `#${dupAnchor}:target~* tr:is(`);
  t.match(html, `#${dupAnchor}:target~* g.mark:not(:is(`);
});

t.test("every mark's details are in a table row of its section", async (t) => {
  const html = await renderHtml(await loadRunDir(FAIL_RUN));
  for (const name of ["fault-duplicate-cqe", "fault-reorder-cqe", "sq-flush-drops-oldest"]) {
    const section = sectionOf(html, name);
    const svg = svgOf(section, name);
    const evs = [...svg.matchAll(/<g class="mark [^>]*data-ev="(\d+)"/g)].map((m) => m[1]);
    const hws = [...svg.matchAll(/<g class="mark [^>]*data-hw="(\d+)"/g)].map((m) => m[1]);
    const marks = (svg.match(/<g class="mark /g) ?? []).length;
    t.ok(evs.length > 10 && hws.length > 10, `${name}: ${evs.length} verbs and ${hws.length} hardware marks`);
    t.equal(evs.length + hws.length, marks, `${name}: every mark draws an event of a table`);
    for (const ev of evs) t.match(section, `<tr id="${slug(name)}-ev${ev}" data-ev="${ev}">`);
    for (const k of hws) t.match(section, `<tr id="${slug(name)}-hw${k}" data-hw="${k}">`);
    const rows = (section.match(/<tr id="[^"]*-ev\d+" data-ev=/g) ?? []).length;
    t.equal(rows, trace(name).length, `${name}: a row for every record of the verbs trace`);
  }
});

t.test("each scenario has the exact command line that reruns it alone", async (t) => {
  const html = await renderHtml(await loadRunDir(FAIL_RUN));
  const line = (s: string) =>
    /<div class="rerun">rerun this scenario alone:<pre><code class="cmd">([^<]*)<\/code><\/pre>/.exec(
      sectionOf(html, s),
    )?.[1];
  const head = "hil run --kernel debian:6.12 --driver erdma --executor kernel --device-profile erdma-reflush";
  t.equal(line("fault-duplicate-cqe"), `${head} --scenario fault-duplicate-cqe`);
  t.equal(line("fault-reorder-cqe"), `${head} --scenario fault-reorder-cqe`);
  t.equal(
    line("sq-flush-drops-oldest"),
    `${head} --scenario /work/wt/html-report/fixtures/cases/scenarios/sq-flush-drops-oldest.yaml`,
  );
  t.match(
    html,
    'made by, in /work/wt/html-report:<pre><code class="cmd">hil run --scenario fault-duplicate-cqe,fault-reorder-cqe,/work/wt/html-report/fixtures/cases/scenarios/sq-flush-drops-oldest.yaml --run-dir runs/report-fail</code></pre>',
  );
});

t.test("printing opens every <details>, keeps the colours, hides the banners not targeted", async (t) => {
  const html = await renderHtml(await loadRunDir(FAIL_RUN));
  const print = /@media print\{([\s\S]*?)\n\}/.exec(html)?.[1] ?? "";
  t.match(print, "details::details-content{content-visibility:visible;display:block}");
  t.match(print, "print-color-adjust:exact");
  t.match(print, ".focus:not(:target){display:none}");
  t.match(print, "pre{max-height:none;overflow:visible;white-space:pre-wrap;overflow-wrap:anywhere}");
  t.match(print, "svg.timeline{width:100%;height:auto}");
  t.match(html, /<details class="events verbs" open>/, "a table with highlighted rows is open on screen");
});

t.test(
  "an older record's problems name WRs only: their posts and completions are found from the trace",
  async (t) => {
    // the real run as a hil before event references wrote it: no post on the WRs, no cqes
    const dir = t.testdir({});
    cpSync(FAIL_RUN, dir, { recursive: true });
    const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"), (k, v) =>
      k === "post" || k === "cqes" ? undefined : v,
    );
    writeFileSync(join(dir, "verdicts.json"), JSON.stringify(record));
    const html = await renderHtml(await loadRunDir(dir));
    const anchor = "s-fault-duplicate-cqe--ib--rule-5";
    const w2003 = wrEvents(trace("fault-duplicate-cqe"), "rq", 2003);
    t.same(highlighted(html, anchor), [...w2003.posts, ...w2003.cqes], "WR 2003's post and both completions");
    t.match(
      sectionOf(html, "fault-duplicate-cqe"),
      `<a class="show" href="#${anchor}">show its 1 WR (1 post), 2 CQEs on the timeline</a> <span class="meta">(found from the WRs`,
    );
    const w1000 = wrEvents(trace("sq-flush-drops-oldest"), "sq", 1000);
    t.same(highlighted(html, "s-sq-flush-drops-oldest--ib--rule-5"), w1000.posts);
    const old = await renderHtml(await loadRunDir(FIXTURE));
    t.notMatch(old, /class="show"/, "a record whose rules name no problems has nothing to link");
  },
);

t.test("an XFAIL says its cause in the rule list: an injected fault or a known bug", async (t) => {
  const { ruleList } = await import("../../harness/report/rule-links.ts");
  const link = (extra: object) => ({
    anchor: "s--linux--rule-5",
    profile: "linux",
    rule: { rule: "5", title: "t", verdict: "XFAIL" as const, reason: "r", ...extra },
    problems: [],
    events: [],
    inferred: false,
  });
  t.match(
    ruleList("s", [link({ injectedFault: true })], []),
    /injected fault: the scenario broke it on purpose/,
  );
  const known = ruleList("s", [link({ knownBug: { reference: "erdma_qp.c:x", note: "" } })], []);
  t.match(known, /known bug erdma_qp\.c:x/);
  t.notMatch(known, /injected fault/);
});

t.test("a rule broken the same way under several rule sets is one item; alike problems fold", async (t) => {
  const { ruleList } = await import("../../harness/report/rule-links.ts");
  const problem = (wrId: number) => ({
    reason: `qp rq WR ${wrId} (posted in RTS) never completed though qp ended in ERR`,
    wrs: [{ qp: "qp", queue: "rq" as const, wrId }],
    posts: [],
    cqes: [],
    events: [],
  });
  const link = (profile: string) => ({
    anchor: `s--${profile}--rule-5`,
    profile,
    rule: {
      rule: "5",
      title: "t",
      verdict: "FAIL" as const,
      reason: "qp rq WR 2000 never completed (and 24 more)",
    },
    problems: Array.from({ length: 25 }, (_, i) => problem(2000 + i)),
    events: [],
    inferred: false,
  });
  const html = ruleList("s", ["ib", "iwarp-rdmac", "linux"].map(link), []);
  t.equal(html.match(/<li class="rule"/g)?.length, 1, "one item for the three rule sets");
  t.match(html, /\[ib, iwarp-rdmac, linux\] rule 5/);
  t.equal(html.match(/never completed though/g)?.length, 1, "the 25 alike problems: the first written out");
  t.match(html, /and 24 more like it: qp rq WR 2001, qp rq WR 2002/);
  const other = { ...link("linux"), rule: { ...link("linux").rule, reason: "another reason" } };
  t.equal(
    ruleList("s", [link("ib"), other], []).match(/<li class="rule"/g)?.length,
    2,
    "different reasons stay apart",
  );
});
