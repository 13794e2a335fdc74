// The mutation campaign's judgement from two sets of verdicts: a verdict the base passed (PASS,
// XFAIL, XPASS, SKIP) that FAILs with the series is a catch naming the rules that moved, an ERROR,
// MISS or missing verdict is a catch that could not be judged, a kernel that was not built makes
// the series invalid; then the outcome per kind and the campaign's figures.
import t from "tap";
import {
  type Catch,
  compareRuns,
  outcomeOf,
  type RunComparison,
  summarize,
} from "../../harness/bench/mutants/classify.ts";
import { catchesByDriver, renderSeries, renderSummary } from "../../harness/bench/mutants/report.ts";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import type { CheckResult } from "../../harness/verdict.ts";
import { type Cell, runRecordOf } from "../support/run-records.ts";

const record = (cells: readonly Cell[], extra: CheckResult[] = []): RunRecord =>
  runRecordOf(cells, { extra });

const BASE: Cell[] = [
  ["post-send-in-error", "ib", "PASS", { 1: "PASS", 5: "PASS" }],
  ["post-send-in-error", "linux", "PASS", { 1: "PASS", 5: "PASS" }],
  ["partial-post-rq-overflow", "linux", "FAIL", { 5: "FAIL" }],
  ["drain-rq-full", "linux", "XFAIL", { 9: "XFAIL" }],
  ["fault-stall-sq-drain", "linux", "SKIP"],
  ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
];

function patchedWith(changes: Record<string, Cell>): RunRecord {
  return record(BASE.map((c) => changes[`${c[0]}[${c[1]}]`] ?? c));
}

t.test(
  "a verdict the base passed that FAILs with the series is a catch with the rules that moved",
  async (t) => {
    const r = compareRuns(
      record(BASE),
      patchedWith({
        "post-send-in-error[ib]": ["post-send-in-error", "ib", "FAIL", { 1: "FAIL", 5: "FAIL" }],
        "drain-rq-full[linux]": ["drain-rq-full", "linux", "FAIL", { 9: "XFAIL", 5: "FAIL" }],
        "fault-stall-sq-drain[linux]": ["fault-stall-sq-drain", "linux", "FAIL", { hang: "FAIL" }],
        "partial-post-rq-overflow[linux]": [
          "partial-post-rq-overflow",
          "linux",
          "FAIL",
          { 5: "FAIL", 3: "FAIL" },
        ],
      }),
      "kernel",
    );
    t.equal(r.invalid, undefined);
    t.same(
      r.catches.map((c) => [c.key, c.base, c.patched, c.how, c.rules]),
      [
        ["post-send-in-error[ib]", "PASS", "FAIL", "fail", ["1", "5"]],
        ["drain-rq-full[linux]", "XFAIL", "FAIL", "fail", ["5"]],
        ["fault-stall-sq-drain[linux]", "SKIP", "FAIL", "fail", ["hang"]],
      ],
      "PASS, XFAIL and SKIP can be caught; a scenario that FAILed on the base cannot",
    );
    t.equal(r.catches[0]?.executor, "kernel");
    t.equal(r.catches[0]?.scenario, "post-send-in-error");
    t.equal(r.catches[0]?.profile, "ib");
  },
);

t.test("an ERROR or MISS, or no verdict at all, is a catch that could not be judged", async (t) => {
  const r = compareRuns(
    record(BASE),
    patchedWith({
      "post-send-in-error[linux]": ["post-send-in-error", "linux", "ERROR"],
      "drain-qp-idle[linux]": ["drain-qp-idle", "linux", "MISS"],
    }),
    "user",
  );
  t.same(
    r.catches.map((c) => [c.key, c.patched, c.how]),
    [
      ["post-send-in-error[linux]", "ERROR", "not-judged"],
      ["drain-qp-idle[linux]", "MISS", "not-judged"],
    ],
  );
  const broken = record(
    [],
    [{ id: "suite", title: "the drain suite runs", verdict: "ERROR", reason: "guest died" }],
  );
  const all = compareRuns(record(BASE), broken, "kernel");
  t.equal(all.catches.filter((c) => c.how === "not-judged").length, 5, "every verdict the base passed");
  t.ok(
    all.catches.every((c) => c.patched === undefined || c.key === "erdma-probe"),
    "missing on the patched side",
  );
  t.equal(
    all.catches.find((c) => c.key === "drain-qp-idle[linux]")?.reason,
    "guest died",
    "the suite's reason",
  );
});

t.test("unchanged or still passing verdicts are no catch; a kernel not built is invalid", async (t) => {
  t.same(compareRuns(record(BASE), record(BASE), "kernel"), { catches: [] });
  const xpass = patchedWith({ "drain-rq-full[linux]": ["drain-rq-full", "linux", "XPASS", { 9: "XPASS" }] });
  t.same(compareRuns(record(BASE), xpass, "kernel").catches, [], "XFAIL -> XPASS is not a catch");
  const notBuilt = record(
    [],
    [{ id: "kernel", title: "the kernel builds", verdict: "ERROR", reason: "hunk #1 FAILED" }],
  );
  t.same(compareRuns(record(BASE), notBuilt, "kernel"), { catches: [], invalid: "hunk #1 FAILED" });
  // a predicted scenario the job leaves out (a ULP workload on a kernel without --config ulp)
  t.same(
    compareRuns(record(BASE), { ...record([]), results: [] }, "kernel", new Set(["ulp-nvme-rdma-io"])),
    { catches: [], invalid: "the run judged nothing: its selection left every scenario out" },
    "a run that judged nothing is no catch, though every verdict of the base is missing from it",
  );
});

t.test("a run of some scenarios is compared on those only", async (t) => {
  const only = new Set(["drain-qp-idle"]);
  const subset = record(BASE.filter((e) => e[0] === "drain-qp-idle"));
  t.same(
    compareRuns(record(BASE), subset, "kernel", only),
    { catches: [] },
    "the others did not run: no catch",
  );
  t.ok(
    compareRuns(record(BASE), subset, "kernel").catches.length > 0,
    "without the scope the missing scenarios count as not judged",
  );
  const failing = record([["drain-qp-idle", "linux", "FAIL", { 9: "FAIL" }]]);
  t.same(
    compareRuns(record(BASE), failing, "kernel", only).catches.map((c) => c.key),
    ["drain-qp-idle[linux]"],
    "a FAIL inside the scope is caught",
  );
});

const fail = (key: string): Catch => ({
  key,
  executor: "kernel",
  base: "PASS",
  patched: "FAIL",
  how: "fail",
  rules: ["5"],
  reason: "-",
});
const error = (key: string): Catch => ({ ...fail(key), patched: "ERROR", how: "not-judged", rules: [] });
const runs = (...cs: Catch[]): RunComparison[] => [{ catches: cs }];

t.test("the outcome of a series per kind", async (t) => {
  t.equal(outcomeOf("mutant", runs(fail("a[ib]"))), "caught");
  t.equal(outcomeOf("mutant", runs(error("a[ib]"))), "caught", "an ERROR the series caused counts");
  t.equal(outcomeOf("mutant", [{ catches: [] }, { catches: [] }]), "survived");
  t.equal(outcomeOf("mutant", [{ catches: [] }, { catches: [], invalid: "no kernel" }]), "invalid");
  t.equal(outcomeOf("benign", runs(fail("a[ib]"), error("b[ib]"))), "false-fail");
  t.equal(outcomeOf("benign", runs(error("b[ib]"))), "not-judged");
  t.equal(outcomeOf("benign", runs()), "clean");
});

t.test(
  "the campaign's figures: catch rate over the mutants written, false FAILs of benign series",
  async (t) => {
    const s = summarize([
      { kind: "mutant", outcome: "caught", catches: [fail("a[ib]")] },
      { kind: "mutant", outcome: "caught", catches: [error("a[ib]")] },
      { kind: "mutant", outcome: "survived", catches: [] },
      { kind: "mutant", outcome: "invalid", catches: [] },
      { kind: "benign", outcome: "false-fail", catches: [fail("a[ib]")] },
      { kind: "benign", outcome: "clean", catches: [] },
      { kind: "benign", outcome: "not-judged", catches: [error("a[ib]")] },
    ]);
    t.same(s, {
      mutants: 4,
      caught: 2,
      caughtByRule: 1,
      survived: 1,
      invalid: 1,
      catchRate: 0.5,
      benign: 3,
      falseFails: 1,
      benignNotJudged: 1,
    });
    t.equal(summarize([]).catchRate, undefined, "no mutants, no rate");
  },
);

t.test("a series line names the scenarios and rules, and a prediction that did not hold", async (t) => {
  const line = renderSeries({
    name: "no-reflush-after-post",
    kind: "mutant",
    driver: "erdma",
    class: "-",
    outcome: "survived",
    predict: "caught",
    catches: [],
    scope: "suite",
    wallMs: 754_000,
  });
  t.match(line, /^survived\s+no-reflush-after-post on erdma {2}\(12m34s\) \[predicted: caught\]\n$/);
  const caught = renderSeries({
    name: "x",
    kind: "mutant",
    driver: "siw",
    class: "-",
    outcome: "caught",
    predict: "caught",
    catches: [
      { ...fail("post-send-in-error[ib]"), scenario: "post-send-in-error", profile: "ib", rules: ["1"] },
      {
        ...fail("post-send-in-error[linux]"),
        scenario: "post-send-in-error",
        profile: "linux",
        rules: ["1", "9"],
      },
    ],
    scope: "predicted",
    wallMs: 5_000,
  });
  t.match(caught, /\n {4}post-send-in-error\[ib,linux\] FAIL rules 1,9\n$/);
  t.match(
    caught,
    /^caught\s+x on siw {2}\(5s\) \[by its predicted scenarios\]\n/,
    "caught before the whole suite ran",
  );
  t.notMatch(caught, /predicted: /);
});

t.test("the summary counts catches per driver when the campaign ran more than one", async (t) => {
  const reports = [
    { kind: "mutant" as const, driver: "erdma" as const, outcome: "caught" as const },
    { kind: "mutant" as const, driver: "siw" as const, outcome: "survived" as const },
    { kind: "mutant" as const, driver: "siw" as const, outcome: "caught" as const },
    { kind: "benign" as const, driver: "siw" as const, outcome: "clean" as const },
    { kind: "mutant" as const, driver: "rxe" as const, outcome: "invalid" as const },
  ];
  const byDriver = catchesByDriver(reports);
  t.same(byDriver, [
    { driver: "erdma", mutants: 1, caught: 1 },
    { driver: "siw", mutants: 2, caught: 1 },
    { driver: "rxe", mutants: 1, caught: 0 },
  ]);
  const summary = summarize(reports.map((r) => ({ ...r, catches: [] })));
  t.match(renderSummary(summary, byDriver), /^per driver: erdma 1 of 1, siw 1 of 2, rxe 0 of 1$/m);
  t.notMatch(renderSummary(summary, byDriver.slice(0, 1)), /per driver/, "one driver: no breakdown");
});
