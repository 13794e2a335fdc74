// hil repro's judgement of a case against a run's verdicts (synthetic records): a bug case
// REPRODUCES only when every expected verdict, rule and evidence line is there; a fix case PASSES;
// an expected verdict that could not be judged is exit 3, one that differs exit 1. The scenarios'
// known-bug records are left out of a repro run.
import t from "tap";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import { selectScenarios } from "../../harness/scenario/select.ts";
import type { Verdict } from "../../harness/verdict.ts";
import type { Expectation } from "../../harness/workflows/repro/case.ts";
import { caseKind, evaluateCase, withoutBugRecords } from "../../harness/workflows/repro/repro.ts";

type Row = {
  scenario: string;
  profile: string;
  verdict: Verdict;
  rules?: Record<string, Verdict>;
  evidence?: string[];
};

function record(rows: readonly Row[], extra: RunRecord["results"] = []): RunRecord {
  const names = [...new Set(rows.map((r) => r.scenario))];
  return {
    kernel: "debian:6.1",
    scenarios: names.map((name) => ({
      name,
      file: `${name}.yaml`,
      durationMs: 1,
      judgements: rows
        .filter((r) => r.scenario === name)
        .map((r) => ({
          profile: r.profile as "ib" | "iwarp-rdmac" | "linux",
          verdict: r.verdict,
          rules: Object.entries(r.rules ?? {}).map(([rule, verdict]) => ({
            rule: rule as "9",
            title: `rule ${rule}`,
            citation: "-",
            verdict,
            reason: `rule ${rule} says ${verdict}`,
            ...(verdict === "FAIL" && r.evidence ? { evidence: r.evidence } : {}),
          })),
        })),
    })),
    results: [
      ...extra,
      ...rows.map((r) => ({
        id: `${r.scenario}[${r.profile}]`,
        title: r.scenario,
        verdict: r.verdict,
        reason: "-",
      })),
    ],
  };
}

const HANG: Expectation[] = [
  {
    scenario: "drain-qp-idle",
    profiles: ["linux"],
    verdict: "FAIL",
    rules: { 9: "FAIL", hang: "FAIL" },
    evidence: "__ib_drain_sq",
  },
];
const CASE = { name: "hang", bug: "it hangs", reference: "x.c:f", expect: HANG };
const STACK = ["- did not return", "  stack: [<0>] __ib_drain_sq+0xfe/0x124 [ib_core]"];
/** A record of the case's scenario judged under linux alone. */
const onLinux = (row: Omit<Row, "scenario" | "profile">) =>
  record([{ scenario: "drain-qp-idle", profile: "linux", ...row }]);

t.test("a bug case reproduces: verdict, rules and the evidence line", async (t) => {
  const o = evaluateCase(
    CASE,
    onLinux({ verdict: "FAIL", rules: { 9: "FAIL", hang: "FAIL", 5: "PASS" }, evidence: STACK }),
  );
  t.equal(o.kind, "bug");
  t.equal(o.word, "REPRODUCES");
  t.equal(o.exitCode, 0);
  t.equal(o.checks[0]?.evidence?.matched, STACK[1]);
  t.same(
    o.checks[0]?.quotes.map((q) => q.rule),
    ["9", "hang"],
    "the quoted rules are the ones the case names",
  );
});

t.test("not reproduced: a rule holds, or the evidence is not there", async (t) => {
  const ruleHolds = evaluateCase(
    CASE,
    onLinux({ verdict: "FAIL", rules: { 9: "FAIL", hang: "PASS" }, evidence: STACK }),
  );
  t.equal(ruleHolds.word, "NOT REPRODUCED");
  t.equal(ruleHolds.exitCode, 1);
  t.same(
    ruleHolds.checks[0]?.rules.find((r) => r.rule === "hang"),
    {
      rule: "hang",
      want: "FAIL",
      got: "PASS",
      reason: "rule hang says PASS",
    },
  );
  const noStack = evaluateCase(
    CASE,
    onLinux({ verdict: "FAIL", rules: { 9: "FAIL", hang: "FAIL" }, evidence: ["- WARN"] }),
  );
  t.equal(noStack.word, "NOT REPRODUCED", "the evidence must be there too");
  t.equal(noStack.checks[0]?.evidence?.matched, undefined);
  const passes = evaluateCase(CASE, onLinux({ verdict: "PASS", rules: { 9: "PASS", hang: "PASS" } }));
  t.equal(passes.exitCode, 1);
});

t.test("could not be judged: exit 3", async (t) => {
  const miss = evaluateCase(CASE, onLinux({ verdict: "MISS" }));
  t.equal(miss.word, "NOT REPRODUCED");
  t.ok(miss.unjudged);
  t.equal(miss.exitCode, 3);
  const absent = evaluateCase(CASE, record([{ scenario: "other", profile: "linux", verdict: "PASS" }]));
  t.equal(absent.checks[0]?.got, undefined);
  t.equal(absent.exitCode, 3, "the scenario did not run at all");
  const probe = evaluateCase(
    CASE,
    record(
      [{ scenario: "drain-qp-idle", profile: "linux", verdict: "MISS" }],
      [{ id: "erdma-probe", title: "probe", verdict: "FAIL", reason: "no device" }],
    ),
  );
  t.equal(probe.exitCode, 3);
});

t.test("a fix case PASSES; every profile when the case names none", async (t) => {
  const fix = { ...CASE, expect: [{ scenario: "drain-qp-idle", verdict: "PASS" as const }] };
  t.equal(caseKind(fix.expect), "fix");
  const all = evaluateCase(
    fix,
    record(
      ["ib", "iwarp-rdmac", "linux"].map((profile) => ({
        scenario: "drain-qp-idle",
        profile,
        verdict: "PASS" as const,
      })),
    ),
  );
  t.equal(all.word, "PASSES");
  t.equal(all.checks.length, 3, "one check per judged profile");
  const one = evaluateCase(
    fix,
    record([
      { scenario: "drain-qp-idle", profile: "ib", verdict: "PASS" },
      { scenario: "drain-qp-idle", profile: "linux", verdict: "FAIL" },
    ]),
  );
  t.equal(one.word, "DOES NOT PASS");
  t.equal(one.exitCode, 1);
});

t.test("repro runs the scenarios without their known-bug and expect_fail records", async (t) => {
  const scenarios = await selectScenarios("partial-post-rq-overflow,fault-drop-flush-cqe");
  t.ok(scenarios.some((s) => s.known_bugs) && scenarios.some((s) => s.expect_fail), "the fixtures have them");
  const bare = withoutBugRecords(scenarios);
  t.ok(bare.every((s) => s.known_bugs === undefined && s.expect_fail === undefined));
  t.same(
    bare.map((s) => s.steps),
    scenarios.map((s) => s.steps),
    "the rest is the same",
  );
});

t.test("repro.json is written while the run holds its directory, before verdicts.json", async (t) => {
  const { existsSync, readFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { claimRunDir, LOCK_FILE } = await import("../../harness/rundir/claim.ts");
  const dir = join(t.testdir({}), "run");
  const seen: string[] = [];
  const runRecord = record([{ scenario: "s", profile: "linux", verdict: "PASS" }]);
  // runJob as it stands: claims the directory, lets the caller write, then verdicts.json, then releases
  const { runRepro } = await t.mockImport<typeof import("../../harness/workflows/repro/repro.ts")>(
    "../../harness/workflows/repro/repro.ts",
    {
      "../../harness/workflows/job/job.ts": {
        describeJob: () => "job",
        runJob: async (
          _spec: unknown,
          opts: { runDir: string; alsoWrite?: (r: unknown) => Promise<void> },
        ) => {
          const claim = await claimRunDir(opts.runDir);
          await opts.alsoWrite?.(runRecord);
          seen.push(`lock held: ${existsSync(join(opts.runDir, LOCK_FILE))}`);
          seen.push(`verdicts.json there: ${existsSync(join(opts.runDir, "verdicts.json"))}`);
          await claim.release();
          return runRecord;
        },
      },
    },
  );
  const run = await runRepro(
    {
      name: "c",
      bug: "b",
      reference: "r",
      expect: [{ scenario: "s", verdict: "PASS" }],
      job: {} as never,
      baseDir: dir,
    } as never,
    { runDir: dir },
  );
  t.same(seen, ["lock held: true", "verdicts.json there: false"]);
  const written = JSON.parse(readFileSync(join(dir, "repro.json"), "utf8"));
  t.equal(written.word, "PASSES");
  t.equal(written.runDir, dir);
  t.equal(written.wallMs, run.wallMs, "the file and the run say the same");
  t.notOk(existsSync(join(dir, LOCK_FILE)), "released afterwards");
});
