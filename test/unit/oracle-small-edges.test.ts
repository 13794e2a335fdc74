// Small edges of the oracle's shared parts that the rules' tests do not pin: a rule result's
// helpers (pass, fail, summarise: applies, the evidence cap, a FAIL without problems), verdict
// precedence and coverage (a covered rule that judged something stays as it is), a trace the oracle
// cannot judge, objects counted on one side only, and which console frames are KASAN's or KFENCE's
// own (left out of a memory report's evidence) and which are not.
import t from "tap";
import {
  combineVerdicts,
  judgeTrace,
  RULES,
  type RuleVerdict,
  requireCoverage,
} from "../../harness/oracle/judge.ts";
import { TraceModel } from "../../harness/oracle/model.ts";
import { fail, MAX_EVIDENCE, pass, summarise } from "../../harness/oracle/rule.ts";
import { consoleRule } from "../../harness/oracle/rules/console-clean.ts";
import { leftBehind } from "../../harness/protocol/observations.ts";

t.test("pass and fail apply; a FAIL's evidence is capped; a FAIL without problems says so", (t) => {
  t.same(pass("ok", 3), { verdict: "PASS", reason: "ok", judged: 3, applies: true });
  const problems = Array.from({ length: 5 }, (_, i) => ({ reason: `p${i}`, evidence: ["a", "b"] }));
  const f = fail(problems, 5);
  t.equal(f.applies, true);
  t.equal(f.reason, "p0 (and 4 more)");
  t.equal(f.evidence?.length, MAX_EVIDENCE);
  t.same(f.evidence?.slice(0, 4), ["- p0", "  a", "  b", "- p1"]);
  t.not(f.problems, problems, "a copy of the problems");
  t.same(summarise([]), { reason: "rule broken", evidence: [] });
  t.same(summarise([{ reason: "only", evidence: [] }]), { reason: "only", evidence: ["- only"] });
  t.end();
});

t.test("verdict precedence; a covered rule that judged something keeps its verdict", (t) => {
  t.equal(combineVerdicts([]), "SKIP");
  t.equal(combineVerdicts(["SKIP", "PASS"]), "PASS");
  t.equal(combineVerdicts(["PASS", "XPASS", "SKIP"]), "XPASS");
  t.equal(combineVerdicts(["XPASS", "XFAIL"]), "XFAIL");
  t.equal(combineVerdicts(["XFAIL", "MISS"]), "MISS");
  t.equal(combineVerdicts(["MISS", "ERROR"]), "ERROR");
  t.equal(combineVerdicts(["ERROR", "FAIL", "SKIP"]), "FAIL");
  const row = (verdict: RuleVerdict["verdict"], judged: number, applies = true): RuleVerdict => ({
    rule: "5",
    title: "",
    citation: "",
    verdict,
    reason: "r",
    judged,
    applies,
  });
  t.same(
    requireCoverage(
      [row("PASS", 3), row("PASS", 0), row("SKIP", 0), row("FAIL", 0), row("SKIP", 0, false)],
      [5],
    ).map((r) => r.verdict),
    ["PASS", "MISS", "MISS", "FAIL", "SKIP"],
  );
  t.equal(requireCoverage([row("PASS", 0)], [5])[0]?.reason, "rule 5 not exercised: r");
  t.same(requireCoverage([row("PASS", 0)], [4])[0]?.verdict, "PASS", "a rule not covered");
  t.end();
});

t.test("a trace the oracle cannot judge: every rule an ERROR that applies, naming why", (t) => {
  const [j] = judgeTrace(
    { records: [{ seq: 0, ns: 0, ev: "overflow", lost: 3 } as never], observations: [] },
    ["linux"],
    {
      covers: [5],
    },
  );
  t.equal(j?.verdict, "ERROR");
  t.equal(j?.rules.length, RULES.length);
  t.same(
    [...new Set(j?.rules.map((r) => [r.verdict, r.applies, r.judged, r.reason].join("|")))],
    ["ERROR|true|0|the executor's trace lost records (1 overflow/truncated)"],
    "not a MISS though rule 5 is covered",
  );
  t.end();
});

t.test("objects left behind need both counts", (t) => {
  t.same(leftBehind(undefined, { qp: 2 }), []);
  t.same(leftBehind({ qp: 2 }, undefined), []);
  t.same(leftBehind({ qp: 1 }, { qp: 2, cq: 9, mr: 1 }), [
    { kind: "qp", before: 1, after: 2 },
    { kind: "mr", before: 0, after: 1 },
  ]);
  t.end();
});

t.test("a memory report's evidence leaves out KASAN's and KFENCE's own frames, and only those", (t) => {
  const trace = [
    "print_report+0x1/0x2",
    "kasan_report+0x1/0x2",
    "__kasan_check_read+0x1/0x2",
    "kfence_report_error+0x1/0x2",
    "__kfence_free+0x1/0x2",
    "? stale_word+0x1/0x2",
    "erdma_print_report+0x10/0x20 [erdma]",
    "erdma_destroy_qp+0x30/0x40 [erdma]",
    "ib_destroy_qp_user+0x1/0x2",
    "extra+0x1/0x2",
  ];
  const r = consoleRule.judge({
    model: new TraceModel([]),
    profile: "linux",
    observations: [
      {
        ev: "console",
        kind: "kasan",
        text: "KASAN: slab-use-after-free in erdma_destroy_qp",
        trace,
        memoryStacks: [
          { title: "Freed by task 1:", trace: ["kfence_guarded_free+0x1/0x2", "kfree+0x1/0x2"] },
        ],
      },
    ],
  });
  t.same(r.problems?.[0]?.evidence, [
    "erdma_print_report+0x10/0x20 [erdma]",
    "erdma_destroy_qp+0x30/0x40 [erdma]",
    "ib_destroy_qp_user+0x1/0x2",
    "Freed by task 1:",
    "kfree+0x1/0x2",
  ]);
  t.end();
});
