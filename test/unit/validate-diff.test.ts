// hil validate's comparison on synthetic verdicts: a new FAIL is a regression (exit 1), a FAIL that
// is gone is fixed, an ERROR/MISS with the series is "not judged" (exit 3), equal runs are
// unchanged (exit 0); the rules that moved are named. And what counts as an empty series.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import type { Verdict } from "../../harness/verdict.ts";
import { classify, diffSummary, diffVerdicts, renderDiff } from "../../harness/workflows/validate/diff.ts";
import { inspectSeries, validateExitCode } from "../../harness/workflows/validate/validate.ts";
import { HilError } from "../../util/errors.ts";
import { type Cell, runRecordOf } from "../support/run-records.ts";

const SERIES = fileURLToPath(new URL("../../fixtures/series/", import.meta.url));

const record = (cells: readonly Cell[], probe: Verdict = "PASS"): RunRecord =>
  runRecordOf(cells, { probe, reason: (s, p, v) => `${s} under ${p}: ${v}` });

const BASE: Cell[] = [
  ["post-send-in-error", "ib", "PASS", { 1: "PASS", 5: "PASS" }],
  ["post-send-in-error", "iwarp-rdmac", "PASS", { 1: "PASS", 5: "PASS" }],
  ["post-send-in-error", "linux", "PASS", { 1: "PASS", 5: "PASS" }],
  ["partial-post-rq-overflow", "linux", "FAIL", { 5: "FAIL" }],
  ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
];

t.test("classify", async (t) => {
  const table: Array<[Verdict | undefined, Verdict | undefined, string]> = [
    ["PASS", "PASS", "unchanged"],
    ["PASS", "FAIL", "new-fail"],
    ["XFAIL", "FAIL", "new-fail"],
    ["SKIP", "FAIL", "new-fail"],
    [undefined, "FAIL", "new-fail"],
    ["FAIL", "PASS", "fixed"],
    ["FAIL", "XFAIL", "fixed"],
    ["FAIL", "SKIP", "fixed"],
    ["FAIL", "FAIL", "unchanged"],
    ["PASS", "ERROR", "not-judged"],
    ["PASS", "MISS", "not-judged"],
    ["PASS", undefined, "not-judged"],
    ["ERROR", "ERROR", "unchanged"],
    ["ERROR", "PASS", "changed"],
    ["XFAIL", "XPASS", "changed"],
    ["SKIP", undefined, "changed"],
  ];
  for (const [a, b, want] of table) t.equal(classify(a, b), want, `${a} -> ${b}`);
});

t.test("the immediate-error series: new FAILs under ib and linux, a regression", async (t) => {
  const patched: Cell[] = [
    ["post-send-in-error", "ib", "FAIL", { 1: "FAIL", 5: "PASS" }],
    ["post-send-in-error", "iwarp-rdmac", "PASS", { 1: "PASS", 5: "PASS" }],
    ["post-send-in-error", "linux", "FAIL", { 1: "FAIL", 5: "PASS" }],
    ["partial-post-rq-overflow", "linux", "FAIL", { 5: "FAIL" }],
    ["drain-qp-idle", "linux", "FAIL", { 9: "FAIL", console: "FAIL" }],
  ];
  const diff = diffVerdicts(record(BASE), record(patched));
  t.ok(diff.regression);
  t.same(diff.counts, { "new-fail": 3, fixed: 0, "not-judged": 0, unchanged: 3, changed: 0 });
  t.same(
    diff.deltas.filter((d) => d.change === "new-fail").map((d) => d.key),
    ["post-send-in-error[ib]", "post-send-in-error[linux]", "drain-qp-idle[linux]"],
  );
  const drain = diff.deltas.find((d) => d.key === "drain-qp-idle[linux]");
  t.same(drain?.rules, [
    { rule: "9", base: "PASS", patched: "FAIL", reason: "rule 9 FAIL" },
    { rule: "console", patched: "FAIL", reason: "rule console FAIL" },
  ]);
  t.equal(validateExitCode(diff), 1);
  const text = renderDiff(diff, { showUnchanged: true });
  const lines = text.split("\n");
  t.match(lines[0], /^scenario\s+rules\s+base\s+patched\s+change\s+reason$/);
  t.match(
    lines[1],
    /^post-send-in-error\s+ib,linux\s+PASS\s+FAIL\s+NEW FAIL\s+post-send-in-error under ib: FAIL$/,
    "one row for the two rule sets where it moved the same way",
  );
  t.match(text, /rule 9: PASS -> FAIL {2}rule 9 FAIL/);
  t.match(text, /partial-post-rq-overflow\s+linux\s+FAIL\s+FAIL\s+unchanged/);
  t.notMatch(renderDiff(diff), /unchanged/, "by default the unchanged rows are only counted");
  t.equal(diffSummary(diff), "REGRESSION: 3 new FAIL, 0 fixed, 0 not judged, 3 unchanged");
  const same = diffVerdicts(record(BASE), record(BASE));
  t.equal(
    renderDiff(same, { showUnchanged: false }),
    "no verdict changed (6 compared)\n",
    "--changed-only with nothing changed says so",
  );
  const none = { kernel: "debian:6.12", results: [] } as unknown as RunRecord;
  t.equal(renderDiff(diffVerdicts(none, none)), "no verdicts to compare\n");
});

t.test("a fix: fixed FAILs, no regression", async (t) => {
  const patched = BASE.map(
    (c): Cell => (c[0] === "partial-post-rq-overflow" ? [c[0], c[1], "PASS", { 5: "PASS" }] : c),
  );
  const diff = diffVerdicts(record(BASE), record(patched));
  t.notOk(diff.regression);
  t.equal(diff.counts.fixed, 1);
  t.equal(validateExitCode(diff), 0);
  t.equal(diffSummary(diff), "no regression: 0 new FAIL, 1 fixed, 0 not judged, 5 unchanged");
});

t.test("the same verdicts (an empty series): no change, exit 0", async (t) => {
  const diff = diffVerdicts(record(BASE), record(BASE));
  t.same(diff.counts, { "new-fail": 0, fixed: 0, "not-judged": 0, unchanged: 6, changed: 0 });
  t.equal(validateExitCode(diff), 0);
  t.ok(diff.deltas.every((d) => d.rules.length === 0));
});

t.test("the patched kernel does not probe: not judged, exit 3; a FAIL still wins", async (t) => {
  const broken = BASE.map((c): Cell => [c[0], c[1], "MISS"]);
  const diff = diffVerdicts(record(BASE), record(broken, "FAIL"));
  t.equal(diff.deltas.find((d) => d.key === "erdma-probe")?.change, "new-fail");
  t.equal(diff.counts["not-judged"], 5, "every scenario judged before is a MISS now");
  t.equal(validateExitCode(diff), 1, "the probe FAIL is the regression");
  const onlyMiss = diffVerdicts(record(BASE), record(broken));
  t.equal(validateExitCode(onlyMiss), 3);
  t.match(diffSummary(onlyMiss), /^NOT JUDGED: 0 new FAIL/);
});

t.test("scenarios only one side ran", async (t) => {
  const diff = diffVerdicts(
    record(BASE.slice(0, 1)),
    record([...BASE.slice(0, 1), ["new-one", "linux", "FAIL"]]),
  );
  t.same(
    diff.deltas.map((d) => [d.key, d.change]),
    [
      ["erdma-probe", "unchanged"],
      ["post-send-in-error[ib]", "unchanged"],
      ["new-one[linux]", "new-fail"],
    ],
  );
});

t.test("empty series: an empty mbox, a cover letter only, a directory without patches", async (t) => {
  const dir = t.testdir({ empty: {}, "notes-only": { "README.txt": "no patches here" } });
  writeFileSync(join(dir, "empty.mbox"), "");
  writeFileSync(
    join(dir, "cover.mbox"),
    "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 0/0] nothing\n\nno patches\n",
  );
  for (const p of ["empty.mbox", "cover.mbox", "empty", "notes-only"])
    t.same(inspectSeries(join(dir, p)).subjects, [], `${p}: empty`);
  const real = inspectSeries(join(SERIES, "erdma-fail-post-in-error.mbox"));
  t.same(real.subjects, ["[PATCH] RDMA/erdma: fail posts immediately once the QP is in ERROR"]);
  mkdirSync(join(dir, "junk"));
  writeFileSync(join(dir, "junk.mbox"), "just some text\n");
  t.throws(
    () => inspectSeries(join(dir, "junk.mbox")),
    HilError,
    "a file with no patch and no cover letter is an error",
  );
  t.throws(() => inspectSeries(join(dir, "missing.mbox")), /series .*missing\.mbox does not exist/);
});

t.test(
  "a moved rule's evidence is printed under it: all the oracle quotes, then a count of the rest",
  async (t) => {
    const base = record([["destroy-during-flush", "linux", "PASS", { console: "PASS" }]]);
    const patched = record([["destroy-during-flush", "linux", "FAIL", { console: "FAIL" }]]);
    const rule = patched.scenarios?.[0]?.judgements[0]?.rules[0];
    if (!rule) throw new Error("the record has no console rule");
    const quoted = Array.from({ length: 12 }, (_, i) => `  quoted line ${i}`);
    rule.evidence = [...quoted, "hw flush {}", "hw state {}"];
    const lines = renderDiff(diffVerdicts(base, patched)).split("\n");
    const at = lines.findIndex((l) => /^\s+rule console: PASS -> FAIL/.test(l));
    t.ok(at > 0, "the rule that moved");
    t.same(
      lines.slice(at + 1, at + 14).map((l) => l.trim()),
      [...quoted.map((l) => l.trim()), "... 2 more line(s)"],
      "the evidence, each line indented under the rule",
    );
    t.notMatch(
      renderDiff(diffVerdicts(base, patched), { evidenceLines: 0 }),
      /quoted line/,
      "or none when asked",
    );
  },
);

t.test(
  "a scenario that moved the same way under several rule sets is one row, its evidence once",
  async (t) => {
    const cells = (v: Verdict): Cell[] => [
      ["destroy-during-flush", "ib", v, { console: v }],
      ["destroy-during-flush", "linux", v, { console: v }],
    ];
    const patched = record(cells("FAIL"));
    for (const j of patched.scenarios?.[0]?.judgements ?? [])
      for (const r of j.rules)
        r.evidence = ["- kasan: BUG: KASAN: slab-use-after-free in f+0x1/0x2", "  f+0x1/0x2"];
    const text = renderDiff(diffVerdicts(record(cells("PASS")), patched));
    t.equal(text.match(/^\s+- kasan: BUG: KASAN/gm)?.length, 1, "the evidence once");
    t.match(
      text,
      /^destroy-during-flush\s+ib,linux\s+PASS\s+FAIL\s+NEW FAIL/m,
      "one row naming both rule sets",
    );
    t.equal(text.match(/rule console: PASS -> FAIL/g)?.length, 1, "the moved rule once");
  },
);

t.test("27 new FAILs in 9 scenarios: under 150 lines, every scenario and its evidence", async (t) => {
  const names = Array.from({ length: 9 }, (_, i) => `scenario-${i}`);
  const profiles = ["ib", "iwarp-rdmac", "linux"];
  const cells = (v: Verdict): Cell[] =>
    names.flatMap((n) => profiles.map((p): Cell => [n, p, v, { 4: v, 5: v, 9: v }]));
  const same = Array.from({ length: 47 }, (_, i): Cell => [`same-${i}`, "ib", "PASS"]);
  const patched = record([...cells("FAIL"), ...same]);
  for (const s of (patched.scenarios ?? []).filter((x) => !x.name.startsWith("same-")))
    for (const j of s.judgements)
      for (const r of j.rules) {
        r.reason = `rule ${r.rule} broken in ${s.name}`;
        r.evidence = Array.from(
          { length: 12 },
          (_, i) => `#${i} ${JSON.stringify({ ev: "cqe", wr_id: 2000 + i, pad: "x".repeat(240) })}`,
        );
      }
  const diff = diffVerdicts(
    record([...cells("PASS"), ...Array.from({ length: 47 }, (_, i): Cell => [`same-${i}`, "ib", "PASS"])]),
    patched,
  );
  t.equal(diff.counts["new-fail"], 27);
  const text = renderDiff(diff);
  const lines = text.trimEnd().split("\n");
  t.ok(lines.length < 150, `${lines.length} lines`);
  t.ok(
    Math.max(...lines.map((l) => l.length)) <= 200,
    "no line runs on (evidence cut; verdicts.json has it whole)",
  );
  for (const n of names)
    t.match(text, new RegExp(`^${n}\\s+ib,iwarp-rdmac,linux\\s+PASS\\s+FAIL\\s+NEW FAIL`, "m"));
  t.notMatch(text, /same-\d/, "the unchanged are counted, not listed");
});

t.test("FAIL on both sides with a problem only the patched side has: a new FAIL", async (t) => {
  const withConsole = (problems: string[]): RunRecord => {
    const r = record([["destroy-during-flush", "linux", "FAIL", { console: "FAIL", 5: "PASS" }]]);
    const rule = r.scenarios?.[0]?.judgements[0]?.rules.find((x) => x.rule === "console");
    if (!rule) throw new Error("no console rule");
    rule.reason = problems[0] ?? "";
    rule.evidence = problems.map((p) => `- ${p}`);
    rule.problems = problems.map((reason) => ({ reason, evidence: [] }));
    return r;
  };
  const flaky = "kasan: BUG: KASAN: slab-use-after-free in erdma_poll_cq+0x1a/0x2b [erdma]";
  const series = "kasan: BUG: KASAN: slab-use-after-free in erdma_destroy_qp+0x1cf/0x23e [erdma]";

  const hidden = diffVerdicts(withConsole([flaky]), withConsole([flaky, series]));
  t.ok(hidden.regression, "the series' report is a regression though the base FAILed the same rule");
  t.same(
    hidden.counts,
    { "new-fail": 1, fixed: 0, "not-judged": 0, unchanged: 1, changed: 0 },
    "the probe unchanged",
  );
  const delta = hidden.deltas.find((d) => d.key === "destroy-during-flush[linux]");
  t.equal(delta?.reason, `rule console: a new problem: ${series}`);
  t.same(
    delta?.rules.map((r) => [r.rule, r.base, r.patched]),
    [["console", "FAIL", "FAIL"]],
  );
  t.match(
    renderDiff(hidden),
    /rule console: FAIL -> FAIL\s+a new problem: kasan: BUG: KASAN: slab-use-after-free in erdma_destroy_qp/,
  );

  const moved = diffVerdicts(withConsole([flaky]), withConsole([flaky.replace("0x1a/0x2b", "0x3c/0x4d")]));
  t.notOk(moved.regression, "the same report at other offsets is the same problem");
  t.equal(moved.counts.unchanged, 2, "the probe and the scenario");
  const fewer = diffVerdicts(withConsole([flaky, series]), withConsole([series]));
  t.notOk(fewer.regression, "a problem gone from the patched side is no new FAIL");
});
