// The HTML report: self-contained, the verdict table, one timeline SVG per scenario with the
// lanes its trace has, the hang marker on the stuck drain only; and the clock alignment it rests on.
import { fileURLToPath } from "node:url";
import t from "tap";
import { renderHtml } from "../../harness/report/html.ts";
import { makeAxis } from "../../harness/report/svg.ts";
import { alignClocks, buildTimeline } from "../../harness/report/timeline.ts";
import { loadHwTrace, loadRunDir, loadVerbsTrace } from "../../harness/rundir/read.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));

function svgOf(html: string, scenario: string): string {
  const m = new RegExp(`<svg[^>]*id="timeline-${scenario}"[\\s\\S]*?</svg>`).exec(html);
  return m?.[0] ?? "";
}

t.test("self-contained, a table and a timeline per scenario", async (t) => {
  const html = await renderHtml(await loadRunDir(FIXTURE));
  t.match(html, /^<!DOCTYPE html>/);
  t.notMatch(html, /<script|<link|<img|src=|url\(|href="http/i, "no external assets, no scripts");
  t.equal((html.match(/<svg /g) ?? []).length, 3, "one SVG per scenario");
  t.match(html, /<td class="v v-XFAIL" title="[^"]*did not return/, "the table cell says why on hover");
  t.match(html, /hil: 9 passed, 0 failed, 6 xfail/);
  const stall = svgOf(html, "fault-stall-sq-drain");
  for (const lane of ["state", "rq", "rq-cqe", "drain", "hw-queue", "hw-event"])
    t.match(stall, `data-lane="${lane}"`, `lane ${lane}`);
  t.match(stall, /<g class="hang-marker" data-op="drain">/, "the hang point");
  t.match(stall, /HANG: drain \(step 3\) did not return within 8242 ms/);
  t.match(stall, /data-kind="cqe-flush"/, "flush CQEs");
  t.match(stall, /data-kind="hw-fault"/, "the fault firing");
  t.match(stall, /data-kind="hw-reflush"/, "REFLUSH");
  t.match(stall, /<title>CQE on cq: qp rq wr_id 2000 WR_FLUSH_ERR/, "hover details");
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
