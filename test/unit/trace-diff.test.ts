// hil diff --traces on test/fixtures/rundir (a trimmed real run: drain-sq-idle, fault-stall-sq-drain,
// partial-post-rq-overflow) and on copies of it whose traces were changed here: a completion with
// another status, a missing completion, two completions of a CQ swapped, a drain that never
// returned, a scenario only one run has. Each is said on its WR (or drain, or CQ) with both runs'
// facts; what legitimately differs between runs (timestamps, qp_num, vendor_err, byte_len) is not
// a difference; with two candidates the one with fewer differing WRs is the closest. The real CLI
// is run for the exit statuses, the bad inputs and the files --out-dir writes.
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { parseTrace } from "../../harness/protocol/trace.ts";
import { renderTraceDiffHtml } from "../../harness/report/trace-diff-html.ts";
import {
  groupItems,
  renderTraceDiffKtap,
  renderTraceDiffText,
  traceDiffJson,
} from "../../harness/report/trace-diff-report.ts";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import { scenarioFacts } from "../../harness/workflows/trace-diff/facts.ts";
import { loadTraceRuns } from "../../harness/workflows/trace-diff/runs.ts";
import {
  compareScenario,
  diffTraces,
  type ScenarioTraceDiff,
} from "../../harness/workflows/trace-diff/trace-diff.ts";
import { hil } from "../support/cli.ts";
import { parseTap } from "../support/tap-parse.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));

type Line = Record<string, unknown>;

/** A copy of the fixture run named `name` under `root`, its traces changed by `edit` (scenario -> lines). */
function copyRun(
  root: string,
  name: string,
  edit: (scenario: string, lines: Line[]) => Line[] = (_, l) => l,
) {
  const dir = join(root, name);
  cpSync(FIXTURE, dir, { recursive: true });
  for (const s of ["drain-sq-idle", "fault-stall-sq-drain", "partial-post-rq-overflow"]) {
    const file = join(dir, "traces", `${s}.jsonl`);
    const lines = readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Line);
    // seq and ns stay where they were: the trace still reads in order whatever moved
    const clocks = lines.map((l) => ({ seq: l.seq, ns: l.ns }));
    const edited = edit(s, lines).map((l, i) => ({ ...l, ...clocks[i] }));
    writeFileSync(file, `${edited.map((l) => JSON.stringify(l)).join("\n")}\n`);
  }
  return dir;
}

const isCqe = (l: Line, wrId: number, n?: number) => l.ev === "cqe" && l.wr_id === wrId && l.n === n;

async function diffOf(...dirs: string[]) {
  const runs = await loadTraceRuns(dirs);
  return { runs, d: await diffTraces(runs) };
}

function scenario(d: Awaited<ReturnType<typeof diffTraces>>, name: string, c = 0): ScenarioTraceDiff {
  const s = d.candidates[c]?.scenarios.find((x) => x.scenario === name);
  if (!s) throw new Error(`no scenario ${name}`);
  return s;
}

t.test("a run compared with itself: no difference, exit 0", async (t) => {
  const { d } = await diffOf(FIXTURE, FIXTURE);
  t.equal(d.exitCode, 0);
  t.equal(d.candidates[0]?.same, true);
  t.same(d.candidates[0]?.counts, {
    scenarios: 3,
    completionsDiffer: 0,
    wrs: 0,
    drains: 0,
    verdicts: 0,
    onlyReference: 0,
    onlyCandidate: 0,
    items: 18,
  });
  const text = renderTraceDiffText(d);
  t.match(text, /^the same: drain-sq-idle, fault-stall-sq-drain, partial-post-rq-overflow$/m);
  t.match(text, /^run 2 vs run 1: no difference \(3 scenarios, 18 WRs and drains compared\)$/m);

  const r = await hil(["diff", "--traces", FIXTURE, FIXTURE]);
  t.equal(r.exitCode, 0, r.stderr);
  t.equal(r.stdout, text);
});

t.test("the facts of a real trace: keys, completions, drains and the order per CQ", async (t) => {
  const traceOf = (name: string) =>
    parseTrace(readFileSync(join(FIXTURE, "traces", `${name}.jsonl`), "utf8"));
  const f = scenarioFacts(traceOf("partial-post-rq-overflow"));
  t.same(f.items.get("qp rq wr 2008"), {
    kind: "wr",
    post: { accepted: true, rc: 0 },
    completions: [
      { status: "WR_FLUSH_ERR", cq: "rcq" },
      { status: "WR_FLUSH_ERR", cq: "rcq" },
    ],
  });
  t.same(f.items.get("qp rq wr 2000"), { kind: "wr", post: { accepted: true, rc: 0 }, completions: [] });
  t.same(f.order.get("qp rq on rcq")?.slice(0, 5), [
    "qp rq wr 2008",
    "qp rq wr 2009",
    "qp rq wr 2010",
    "qp rq wr 2011",
    "qp rq wr 2004",
  ]);
  const drain = scenarioFacts(traceOf("drain-sq-idle"));
  t.same([...drain.items], [["qp drain 1 (sq)", { kind: "drain", returned: true }]]);
});

/** A drain of qp's both queues whose sq marker has `markerId` and completes unless `lost`. */
function drainTrace(markerId: number, lost: boolean) {
  const recs: Line[] = [
    { ev: "create", kind: "cq", name: "cq" },
    { ev: "create", kind: "qp", name: "qp", qp_num: 3, scq: "cq", rcq: "cq" },
    { ev: "drain", call: 7, qp: "qp", which: "qp" },
    { ev: "modify", call: 8, qp: "qp", state: "ERR", by: "drain" },
    { ev: "modify_ret", call: 8, rc: 0 },
    { ev: "drain_marker", call: 7, qp: "qp", queue: "sq", how: "kernel", wr_id: markerId, rc: 0 },
    ...(lost
      ? []
      : [
          {
            ev: "drain_marker_cqe",
            call: 7,
            cq: "cq",
            qp: "qp",
            queue: "sq",
            status: 5,
            status_name: "WR_FLUSH_ERR",
            opcode: 1,
            opcode_name: "RDMA_WRITE",
            qp_num: 3,
            vendor_err: 0,
          },
          { ev: "drain_ret", call: 7, us: 10 },
        ]),
  ];
  return parseTrace(recs.map((r, i) => `${JSON.stringify({ seq: i + 1, ns: i * 1000, ...r })}\n`).join(""));
}

t.test("a drain's marker is matched by its drain, whatever its wr_id", async (t) => {
  const a = scenarioFacts(drainTrace(0xffff0001, false));
  t.same([...a.items.keys()], ["qp drain 1 (qp)", "qp sq marker of drain 1"]);
  const sides = { reference: { name: "d", judgements: [] }, candidate: { name: "d", judgements: [] } };
  const same = compareScenario("d", sides, a, scenarioFacts(drainTrace(0xffff0042, false)));
  t.same(same.items, [], "another wr_id for the marker is no difference");
  t.equal(same.differs, false);
  const lost = compareScenario("d", sides, a, scenarioFacts(drainTrace(0xffff0001, true)));
  t.same(
    lost.items.map((i) => [i.key, i.reference, i.candidate]),
    [
      ["qp drain 1 (qp)", "returned", "no return"],
      ["qp sq marker of drain 1", "WR_FLUSH_ERR on cq", "no completion"],
    ],
  );
  t.equal(lost.wrs, 1);
  t.equal(lost.drains, 1);
  t.equal(lost.completionsDiffer, true);
});

t.test("a completion with another status is said on its WR", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand", (s, lines) =>
    s === "partial-post-rq-overflow"
      ? lines.map((l) => (isCqe(l, 2010) ? { ...l, status: 4, status_name: "LOC_PROT_ERR" } : l))
      : lines,
  );
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  t.equal(d.exitCode, 1);
  const s = scenario(d, "partial-post-rq-overflow");
  t.same(s.items, [
    {
      key: "qp rq wr 2010",
      kind: "wr",
      reference: "2 completions: WR_FLUSH_ERR on rcq, WR_FLUSH_ERR on rcq",
      candidate: "2 completions: LOC_PROT_ERR on rcq, WR_FLUSH_ERR on rcq",
    },
  ]);
  t.same(s.order, [], "the order of the WRs that agree is the same");
  t.equal(s.wrs, 1);
  t.equal(scenario(d, "drain-sq-idle").differs, false);
  t.equal(scenario(d, "fault-stall-sq-drain").differs, false);
  const text = renderTraceDiffText(d);
  t.match(
    text,
    /^partial-post-rq-overflow: completions differ\n {2}qp rq wr 2010: ref: 2 completions: WR_FLUSH_ERR on rcq, WR_FLUSH_ERR on rcq \| cand: 2 completions: LOC_PROT_ERR on rcq, WR_FLUSH_ERR on rcq$/m,
  );
  t.match(text, /^the same: drain-sq-idle, fault-stall-sq-drain$/m);
  t.match(
    text,
    /^cand vs ref: 1 of 3 scenarios with different completions \(1 WR, 0 drains differ\), 0 verdicts differ$/m,
  );
});

t.test(
  "two work queues on a shared CQ: their interleaving is timing, each queue's own order is compared",
  async (t) => {
    const root = t.testdir({});
    // sends 1000-1001 posted beside the receives 2000-2003, all completing on the shared CQ "cq"
    const withSends = (placeSends: (rq: Line[], sq: Line[]) => Line[]) => (s: string, lines: Line[]) => {
      if (s !== "fault-stall-sq-drain") return lines;
      const post = lines.findIndex((l) => l.ev === "post" && l.wr_id === 2000);
      const rqCqes = lines.filter((l) => l.ev === "cqe" && l.queue === "rq");
      const template = rqCqes[0] as Line;
      const sqCqes = [1000, 1001].map((wr_id) => ({ ...template, queue: "sq", wr_id, call: 99, opcode: 0 }));
      const before = lines.slice(0, post + 3).filter((l) => !rqCqes.includes(l));
      const after = lines.slice(post + 3).filter((l) => !rqCqes.includes(l));
      const sqPost = [
        { ev: "post", call: 99, qp: "qp", queue: "sq", op: "send", wr_id: 1000, count: 2, index: 0, len: 64 },
        { ev: "post_ret", call: 99, rc: 0, bad: null },
      ];
      // the lines past the original count keep their own clock: later than every original one
      return [...before, ...sqPost, ...after, ...placeSends(rqCqes, sqCqes)].map((l, i) => ({
        ...l,
        seq: 1_000_000 + i,
        ns: 1e14 + i,
      }));
    };
    const ref = copyRun(
      root,
      "ref",
      withSends((rq, sq) => [...rq, ...sq]),
    );
    const interleaved = copyRun(
      root,
      "interleaved",
      withSends((rq, sq) => [sq[0] as Line, rq[0] as Line, rq[1] as Line, sq[1] as Line, ...rq.slice(2)]),
    );
    const { d } = await diffOf(ref, interleaved);
    const s = scenario(d, "fault-stall-sq-drain");
    t.same(s.items, [], "every WR has the same completions");
    t.same(s.order, [], "each queue completed in the same order");
    t.equal(s.completionsDiffer, false);

    const swapped = copyRun(
      root,
      "swapped",
      withSends((rq, sq) => [...rq, sq[1] as Line, sq[0] as Line]),
    );
    const moved = scenario((await diffOf(ref, swapped)).d, "fault-stall-sq-drain");
    t.same(
      moved.order.map((o) => [o.queue, o.moved]),
      [["qp sq on cq", ["qp sq wr 1000", "qp sq wr 1001"]]],
      "a queue's own order still counts",
    );
  },
);

t.test("a missing completion: no completion on that side, the others' order unchanged", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand", (s, lines) =>
    s === "fault-stall-sq-drain" ? lines.filter((l) => !isCqe(l, 2003)) : lines,
  );
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  const s = scenario(d, "fault-stall-sq-drain");
  t.same(
    s.items.map((i) => [i.key, i.reference, i.candidate]),
    [["qp rq wr 2003", "WR_FLUSH_ERR on cq", "no completion"]],
  );
  t.same(s.order, []);
  t.equal(d.candidates[0]?.counts.wrs, 1);
});

t.test("two completions of a CQ swapped: the order on that CQ, and which WRs moved", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand", (s, lines) => {
    if (s !== "fault-stall-sq-drain") return lines;
    const a = lines.findIndex((l) => isCqe(l, 2000));
    const b = lines.findIndex((l) => isCqe(l, 2001));
    const out = [...lines];
    [out[a], out[b]] = [lines[b] as Line, lines[a] as Line];
    return out;
  });
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  const s = scenario(d, "fault-stall-sq-drain");
  t.same(s.items, [], "every WR has the same completions");
  t.same(s.order, [
    {
      queue: "qp rq on cq",
      reference: ["qp rq wr 2000", "qp rq wr 2001", "qp rq wr 2002", "qp rq wr 2003"],
      candidate: ["qp rq wr 2001", "qp rq wr 2000", "qp rq wr 2002", "qp rq wr 2003"],
      moved: ["qp rq wr 2000", "qp rq wr 2001"],
    },
  ]);
  t.equal(s.wrs, 2);
  t.match(
    renderTraceDiffText(d),
    /^ {2}order of qp rq on cq: ref: qp rq wr 2000, qp rq wr 2001, qp rq wr 2002, qp rq wr 2003 \| cand: qp rq wr 2001, qp rq wr 2000, qp rq wr 2002, qp rq wr 2003$/m,
  );
});

t.test("a drain that never returned, and WRs never completed, grouped by wr_id", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand", (s, lines) => {
    if (s === "drain-sq-idle") return lines.filter((l) => l.ev !== "drain_ret");
    if (s === "fault-stall-sq-drain") return lines.filter((l) => l.ev !== "cqe");
    return lines;
  });
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  t.same(scenario(d, "drain-sq-idle").items, [
    { key: "qp drain 1 (sq)", kind: "drain", reference: "returned", candidate: "no return" },
  ]);
  t.equal(scenario(d, "drain-sq-idle").drains, 1);
  t.equal(scenario(d, "fault-stall-sq-drain").wrs, 4);
  const text = renderTraceDiffText(d);
  t.match(text, /^ {2}qp drain 1 \(sq\): ref: returned \| cand: no return$/m);
  t.match(text, /^ {2}qp rq wr 2000-2003: ref: WR_FLUSH_ERR on cq \| cand: no completion$/m);
  t.same(
    groupItems([
      { key: "qp sq wr 1", kind: "wr", reference: "a", candidate: "b" },
      { key: "qp sq wr 2", kind: "wr", reference: "a", candidate: "b" },
      { key: "qp sq wr 3", kind: "wr", reference: "a", candidate: "c" },
      { key: "qp rq wr 4", kind: "wr", reference: "a", candidate: "c" },
    ]).map((g) => g.what),
    ["qp sq wr 1-2", "qp sq wr 3", "qp rq wr 4"],
    "only consecutive wr_ids of one queue that differ the same way",
  );
});

t.test("a scenario only one run has is listed as such", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand");
  const file = join(cand, "verdicts.json");
  const record = JSON.parse(readFileSync(file, "utf8")) as RunRecord;
  record.scenarios = record.scenarios?.filter((s) => s.name !== "drain-sq-idle");
  writeFileSync(file, JSON.stringify(record));
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  t.equal(d.exitCode, 1);
  t.equal(scenario(d, "drain-sq-idle").only, "reference");
  t.equal(d.candidates[0]?.counts.scenarios, 2);
  t.equal(d.candidates[0]?.counts.onlyReference, 1);
  t.match(renderTraceDiffText(d), /^drain-sq-idle: only one run has it\n {2}only in ref$/m);

  const back = await diffOf(cand, join(root, "ref"));
  t.equal(scenario(back.d, "drain-sq-idle").only, "candidate");
  t.match(renderTraceDiffText(back.d), /^ {2}only in ref$/m, "named by the run that has it");
});

t.test("what differs between any two runs is no difference", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand", (_, lines) =>
    lines.map((l) =>
      l.ev === "cqe" || l.ev === "create"
        ? {
            ...l,
            ...(l.qp_num !== undefined ? { qp_num: Number(l.qp_num) + 40 } : {}),
            ...(l.ev === "cqe" ? { vendor_err: 3, byte_len: 7 } : {}),
          }
        : l,
    ),
  );
  const trace = readFileSync(join(cand, "traces", "fault-stall-sq-drain.jsonl"), "utf8");
  t.match(trace, /"qp_num":68,"vendor_err":3,"byte_len":7/, "the copy's completions do differ there");
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  t.equal(d.exitCode, 0, renderTraceDiffText(d));
});

t.test("a verdict that differs is said per rule set", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand");
  const file = join(cand, "verdicts.json");
  const record = JSON.parse(readFileSync(file, "utf8")) as RunRecord;
  const j = record.scenarios
    ?.find((s) => s.name === "drain-sq-idle")
    ?.judgements.find((x) => x.profile === "linux");
  if (j) j.verdict = "FAIL";
  writeFileSync(file, JSON.stringify(record));
  const { d } = await diffOf(copyRun(root, "ref"), cand);
  const s = scenario(d, "drain-sq-idle");
  t.same(s.verdicts, [{ profile: "linux", reference: "PASS", candidate: "FAIL" }]);
  t.equal(s.completionsDiffer, false);
  t.match(
    renderTraceDiffText(d),
    /^drain-sq-idle: verdicts differ \(the same completions\)\n {2}verdict linux: ref: PASS \| cand: FAIL$/m,
  );
  t.equal(d.exitCode, 1);
});

t.test("two candidates: the one with fewer differing WRs is the closest", async (t) => {
  const root = t.testdir({});
  const far = copyRun(root, "far", (s, lines) =>
    s === "fault-stall-sq-drain" ? lines.filter((l) => l.ev !== "cqe") : lines,
  );
  const near = copyRun(root, "near", (s, lines) =>
    s === "partial-post-rq-overflow" ? lines.filter((l) => !isCqe(l, 2011, 2)) : lines,
  );
  const { d } = await diffOf(FIXTURE, far, near);
  t.equal(d.candidates.length, 2);
  t.equal(d.candidates[0]?.counts.wrs, 4);
  t.equal(d.candidates[1]?.counts.wrs, 1);
  t.equal(d.closest, 1);
  const text = renderTraceDiffText(d);
  t.match(text, /^reference: rundir: /m, "named by directory: the profiles are all the same");
  t.match(text, /^closest: near \(erdma-reflush\)$/m);
  t.match(
    text,
    /^ {2}qp rq wr 2011: rundir: 2 completions: WR_FLUSH_ERR on rcq, WR_FLUSH_ERR on rcq \| near: WR_FLUSH_ERR on rcq$/m,
  );
  const json = traceDiffJson(d) as { closest: string; candidates: Array<{ same: boolean }> };
  t.equal(json.closest, "near");
  t.same(
    json.candidates.map((c) => c.same),
    [false, false],
  );
  const ktap = await parseTap(renderTraceDiffKtap(d));
  t.same(
    ktap.all.filter((x) => !x.ok).map((x) => x.name),
    ["fault-stall-sq-drain", "far vs rundir", "partial-post-rq-overflow", "near vs rundir"],
    "each candidate a test, its differing scenarios its subtests",
  );
});

t.test("the html page: each differing scenario's two timelines side by side", async (t) => {
  const root = t.testdir({});
  const cand = copyRun(root, "cand", (s, lines) =>
    s === "fault-stall-sq-drain" ? lines.filter((l) => !isCqe(l, 2003)) : lines,
  );
  const { d, runs } = await diffOf(copyRun(root, "ref"), cand);
  const html = await renderTraceDiffHtml(d, runs);
  const section =
    /<section class="scenario" id="c0-fault-stall-sq-drain">[\s\S]*?<\/section>/.exec(html)?.[0] ?? "";
  t.match(section, /<li>qp rq wr 2003: ref: WR_FLUSH_ERR on cq \| cand: no completion<\/li>/);
  const svgs = [...section.matchAll(/<svg [^>]*id="([^"]+)"/g)].map((m) => m[1]);
  t.same(svgs, ["c0-fault-stall-sq-drain-reference", "c0-fault-stall-sq-drain-candidate"]);
  t.equal(
    (section.match(/class="mark cqe-flush"/g) ?? []).length,
    7,
    "the reference's 4 completions and the candidate's 3",
  );
  t.notMatch(html, /id="c0-drain-sq-idle"/, "a scenario with the same completions has no section");
});

t.test("the CLI: exit 1 when the runs differ, the files of --out-dir, bad input exit 2", async (t) => {
  const root = t.testdir({});
  const ref = copyRun(root, "ref");
  const cand = copyRun(root, "cand", (s, lines) =>
    s === "fault-stall-sq-drain" ? lines.filter((l) => !isCqe(l, 2003)) : lines,
  );
  const out = join(root, "out");
  const r = await hil(["diff", "--traces", ref, cand, "--format", "json", "--out-dir", out]);
  t.equal(r.exitCode, 1, r.stderr);
  t.equal(JSON.parse(r.stdout).candidates[0].counts.wrs, 1);
  t.match(r.stderr, /^hil diff --traces: cand vs ref: 1 of 3 scenarios with different completions/m);
  t.match(
    readFileSync(join(out, "trace-diff.txt"), "utf8"),
    /qp rq wr 2003: ref: WR_FLUSH_ERR on cq \| cand: no completion/,
  );
  for (const f of ["trace-diff.json", "trace-diff.ktap", "trace-diff.junit.xml", "trace-diff.html"])
    t.ok(readFileSync(join(out, f), "utf8").length > 0, f);

  const matrix = join(root, "matrix");
  mkdirSync(matrix);
  writeFileSync(join(matrix, "matrix.json"), "{}");
  const m = await hil(["diff", "--traces", ref, matrix]);
  t.equal(m.exitCode, 2);
  t.equal(
    m.stderr,
    `hil: error: ${matrix}: is a matrix directory: hil diff --traces compares run directories (hil run --run-dir)\n`,
  );
  const none = await hil(["diff", "--traces", ref, join(root, "nope")]);
  t.equal(none.exitCode, 2);
  t.match(none.stderr, /^hil: error: .*\/nope: does not exist/);
  const empty = await hil(["diff", "--traces", ref, root]);
  t.equal(empty.exitCode, 2);
  t.match(empty.stderr, /is not a run directory \(no verdicts\.json: hil run --run-dir\)/);
  const one = await hil(["diff", "--traces", ref]);
  t.equal(one.exitCode, 2);
  t.match(one.stderr, /missing required argument 'new'/);
  const three = await hil(["diff", ref, cand, ref]);
  t.equal(three.exitCode, 2);
  t.match(three.stderr, /more than two only with --traces/);
  const outIsRun = await hil(["diff", "--traces", ref, cand, "--out-dir", cand]);
  t.equal(outIsRun.exitCode, 2);
  t.match(outIsRun.stderr, /--out-dir must not be one of the directories compared/);
});
