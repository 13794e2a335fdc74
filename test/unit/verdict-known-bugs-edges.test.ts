// Edges of harness/oracle/known-bugs.ts that verdict-known-bugs.test.ts does not reach: kernel
// entries by base or by version (exact or a dotted prefix, any of several), device profiles, a
// FAIL whose problems list is empty, an injected fault's WRs matched on QP, queue and wr_id alike,
// several records of one rule (which one a problem matches, how the reason counts them), implied
// records, MISS rows a record hides, and records limited to some oracle profiles.
import t from "tap";
import type { ProfileJudgement, RuleVerdict } from "../../harness/oracle/judge.ts";
import { applyExpectedFailures, applyKnownBugs, knownBugsFor } from "../../harness/oracle/known-bugs.ts";
import type { KnownBug } from "../../harness/scenario/schema.ts";

const BUG: KnownBug = {
  driver: "erdma",
  rules: [5],
  failure: "flushed twice",
  reference: "erdma_cq.c:1",
  note: "n",
};
const TARGET = { driver: "erdma", executor: "kernel" } as const;

function row(verdict: RuleVerdict["verdict"], more: Partial<RuleVerdict> = {}): RuleVerdict {
  return {
    rule: "5",
    title: "t",
    citation: "c",
    verdict,
    reason: `rule 5 ${verdict}`,
    judged: 1,
    applies: true,
    ...more,
  };
}
const one = (r: RuleVerdict, profile: ProfileJudgement["profile"] = "linux"): ProfileJudgement[] => [
  { profile, verdict: r.verdict, rules: [r] },
];
const after = (js: ProfileJudgement[]) => js[0]?.rules[0];

t.test("kernels: by base, by exact version, by a dotted prefix, any of several", (t) => {
  const k = { base: "debian:6.12", version: "6.12.95" };
  const applies = (kernels: string[], kernel: { base: string; version?: string } | undefined = k) =>
    knownBugsFor([{ ...BUG, kernels }], { ...TARGET, ...(kernel ? { kernel } : {}) }).length === 1;
  t.ok(applies(["debian:6.12"]), "its base");
  t.ok(applies(["6.12.95"]), "its exact version");
  t.ok(applies(["6.12"]), "a prefix");
  t.notOk(applies(["6.12.9"]), "6.12.9 is no prefix of 6.12.95 (dotted)");
  t.ok(applies(["debian:6.1", "6.12"]), "the second of two entries");
  t.ok(applies(["6.12", "debian:6.1"]), "the first of two");
  t.notOk(applies(["debian:6.1", "6.1"]), "none of two");
  t.notOk(applies(["6.12"], { base: "debian:6.12" }), "no version known: only the base can match");
  t.ok(applies(["debian:6.12"], { base: "debian:6.12" }));
  t.ok(knownBugsFor([BUG], { ...TARGET }).length === 1, "a record for every kernel applies without one");
  t.end();
});

t.test("device profiles: a record naming profiles applies only on one of them", (t) => {
  const bug = { ...BUG, device_profiles: ["erdma-reflush", "erdma-bare"] };
  t.equal(knownBugsFor([bug], { ...TARGET, deviceProfile: "erdma-bare" }).length, 1);
  t.equal(knownBugsFor([bug], { ...TARGET, deviceProfile: "erdma-other" }).length, 0);
  t.equal(knownBugsFor([bug], TARGET).length, 0, "no profile known");
  t.equal(knownBugsFor([BUG], { ...TARGET, deviceProfile: "x" }).length, 1, "a record for every profile");
  t.end();
});

t.test("an injected fault's WRs: a problem naming one of them (QP, queue and wr_id) makes the XFAIL", (t) => {
  const expected = { rules: [5], why: "drop a CQE" } as never;
  const hit = { qp: "qp", queue: "sq" as const, wrId: 7 };
  const fail = (wrs: { qp: string; queue: "sq" | "rq"; wrId: number }[]) =>
    row("FAIL", {
      problems: [{ reason: "x", evidence: [], wrs: [{ qp: "peer", queue: "rq", wrId: 1 }, ...wrs] }],
    });
  t.equal(after(applyExpectedFailures(one(fail([hit])), expected, [hit]))?.verdict, "XFAIL", "its second WR");
  for (const other of [
    { ...hit, qp: "peer" },
    { ...hit, queue: "rq" as const },
    { ...hit, wrId: 8 },
  ]) {
    const r = after(applyExpectedFailures(one(fail([other])), expected, [hit]));
    t.equal(r?.verdict, "FAIL", `not ${JSON.stringify(other)}`);
    t.equal(r?.reason, "the rule broke, but on no WR the injected fault hit (qp sq WR 7): rule 5 FAIL");
  }
  const two = [hit, { qp: "qp", queue: "rq" as const, wrId: 9 }];
  t.match(after(applyExpectedFailures(one(fail([])), expected, two))?.reason, /\(qp sq WR 7, qp rq WR 9\)/);
  const noWrs = row("FAIL", { problems: [{ reason: "x", evidence: [] }] });
  t.equal(
    after(applyExpectedFailures(one(noWrs), expected, [hit]))?.verdict,
    "FAIL",
    "a problem naming no WR",
  );
  t.equal(
    after(applyExpectedFailures(one(row("ERROR")), expected, [hit]))?.verdict,
    "ERROR",
    "an ERROR stays",
  );
  t.equal(after(applyExpectedFailures(one(row("SKIP")), expected))?.verdict, "SKIP");
  t.end();
});

t.test("a FAIL with an empty problem list is judged by its reason", (t) => {
  const bug = { ...BUG, failure: "^rule 5 FAIL$" };
  t.equal(after(applyKnownBugs(one(row("FAIL", { problems: [] })), [bug]))?.verdict, "XFAIL");
  t.equal(after(applyKnownBugs(one(row("FAIL", { problems: [], reason: "other" })), [bug]))?.verdict, "FAIL");
  t.end();
});

t.test(
  "several records of one rule: every problem described by some record; the first problem's names the XFAIL",
  (t) => {
    const a = { ...BUG, failure: "twice", reference: "A" };
    const b = { ...BUG, failure: "never", reference: "B" };
    const both = row("FAIL", {
      problems: [
        { reason: "WR 1 never flushed", evidence: [] },
        { reason: "WR 2 flushed twice", evidence: [] },
      ],
    });
    const r = after(applyKnownBugs(one(both), [a, b]));
    t.equal(r?.verdict, "XFAIL");
    t.equal(r?.reason, "known bug (B): rule 5 FAIL", "the record describing the first problem");
    t.same(r?.knownBug, { reference: "B", note: "n" });
    const unknown = row("FAIL", { problems: [{ reason: "WR 3 late", evidence: [] }] });
    t.equal(
      after(applyKnownBugs(one(unknown), [a, b]))?.reason,
      "WR 3 late (a failure the known-bug records of rule 5 do not describe)",
    );
    t.equal(
      after(applyKnownBugs(one(unknown), [a]))?.reason,
      "WR 3 late (a failure the known-bug record of rule 5 does not describe)",
    );
    t.end();
  },
);

t.test("a PASS: an XPASS naming the first record, unless every record of the rule is implied", (t) => {
  const implied: KnownBug = { ...BUG, implied: true, reference: "I" };
  t.equal(after(applyKnownBugs(one(row("PASS")), [implied]))?.verdict, "PASS");
  const r = after(applyKnownBugs(one(row("PASS")), [{ ...BUG, reference: "R", id: "erdma-x" }, implied]));
  t.equal(r?.verdict, "XPASS");
  t.equal(r?.reason, "holds though a known bug is recorded (R): rule 5 PASS");
  t.same(r?.knownBug, { reference: "R", note: "n", id: "erdma-x" });
  t.end();
});

t.test("the commands rule's ERROR may be a recorded bug's; another ERROR or a SKIP stays", (t) => {
  const bug = { ...BUG, rules: ["commands"], failure: "returned -22" } as unknown as KnownBug;
  const error = row("ERROR", { rule: "commands", reason: 'step 1: "modify" returned -22' });
  t.equal(after(applyKnownBugs(one(error), [bug]))?.verdict, "XFAIL");
  const other = { ...BUG, failure: "." };
  t.equal(after(applyKnownBugs(one(row("ERROR")), [other]))?.verdict, "ERROR", "rule 5's ERROR");
  t.equal(after(applyKnownBugs(one(row("SKIP")), [other]))?.verdict, "SKIP");
  t.equal(
    after(applyKnownBugs(one(row("FAIL")), [{ ...BUG, rules: [4] }]))?.verdict,
    "FAIL",
    "another rule's record",
  );
  t.end();
});

t.test("a MISS a record hides is a SKIP naming it (whatever the profile); other MISSes stay", (t) => {
  const hides = { ...BUG, rules: [4], hides: [6, 5], reference: "H", oracle_profiles: ["ib"] } as KnownBug;
  const r = after(applyKnownBugs(one(row("MISS", { reason: "rule 5 not exercised" })), [hides]));
  t.equal(r?.verdict, "SKIP");
  t.equal(r?.reason, "rule 5 not exercised: a known bug keeps it from being exercised here (H)");
  t.same(r?.knownBug, { reference: "H", note: "n" });
  t.equal(after(applyKnownBugs(one(row("MISS")), [{ ...hides, hides: [6] }]))?.verdict, "MISS");
  t.equal(after(applyKnownBugs(one(row("MISS")), [{ ...BUG }]))?.verdict, "MISS", "a record hiding nothing");
  t.equal(
    after(applyKnownBugs(one(row("FAIL", { reason: "x" })), [hides]))?.verdict,
    "FAIL",
    "only a MISS is hidden",
  );
  t.end();
});

t.test("a record limited to some oracle profiles marks only those; the verdict is recombined", (t) => {
  const ib = { ...BUG, failure: ".", oracle_profiles: ["ib"] } as KnownBug;
  const js = applyKnownBugs(
    [
      { profile: "ib", verdict: "FAIL", rules: [row("FAIL")] },
      { profile: "linux", verdict: "FAIL", rules: [row("FAIL")] },
    ],
    [ib],
  );
  t.same(
    js.map((j) => [j.profile, j.verdict, j.rules[0]?.verdict]),
    [
      ["ib", "XFAIL", "XFAIL"],
      ["linux", "FAIL", "FAIL"],
    ],
  );
  const none = [{ profile: "linux" as const, verdict: "FAIL" as const, rules: [row("FAIL")] }];
  t.not(applyKnownBugs(none, []), none, "no records: a copy");
  t.same(applyKnownBugs(none, []), none);
  t.not(applyExpectedFailures(none, undefined), none);
  t.same(applyExpectedFailures(none, undefined), none);
  t.end();
});
