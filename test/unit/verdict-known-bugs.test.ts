// Known driver bugs recorded in scenarios: which runs they apply to, how a recorded rule's FAIL
// becomes XFAIL and its PASS an XPASS while an unrecorded FAIL stays a FAIL, the exit codes, the
// summary line and the table; and the schema's errors for a bad known_bugs entry.
import t from "tap";
import type { ProfileJudgement, RuleVerdict } from "../../harness/oracle/judge.ts";
import { applyExpectedFailures, applyKnownBugs, knownBugsFor } from "../../harness/oracle/known-bugs.ts";
import { renderScenarioTable } from "../../harness/report/scenario-table.ts";
import { summaryLine } from "../../harness/report/table.ts";
import { knownBugSchema } from "../../harness/scenario/known-bug.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import type { KnownBug } from "../../harness/scenario/schema.ts";
import {
  type CheckResult,
  EXIT_ALL_PASS,
  EXIT_FAILED,
  EXIT_NOT_JUDGED,
  exitCodeFor,
} from "../../harness/verdict.ts";

const BUG: KnownBug = {
  driver: "erdma",
  rules: [4, 5],
  failure: "says FAIL",
  reference: "drivers/infiniband/hw/erdma/erdma_qp.c:erdma_post_recv",
  note: "no queue-full check",
};

function rule(id: RuleVerdict["rule"], verdict: RuleVerdict["verdict"]): RuleVerdict {
  return {
    rule: id,
    title: "",
    citation: "",
    verdict,
    reason: `rule ${id} says ${verdict}`,
    evidence: ["e"],
    judged: 1,
    applies: true,
  };
}

function judgement(rules: RuleVerdict[]): ProfileJudgement {
  return { profile: "linux", verdict: "FAIL", rules };
}

t.test("which known bugs apply to a run", async (t) => {
  const target = { driver: "erdma", executor: "kernel", deviceProfile: "erdma-reflush" } as const;
  const k612 = { ...target, kernel: { base: "debian:6.12", version: "6.12.95" } };
  t.same(knownBugsFor([BUG], k612), [BUG], "driver erdma, all kernels");
  t.same(knownBugsFor([BUG], { ...k612, driver: "siw" }), [], "not on siw");
  t.same(knownBugsFor(undefined, k612), []);
  const only61 = { ...BUG, kernels: ["debian:6.1"] };
  t.same(knownBugsFor([only61], k612), [], "a 6.1-only bug is not a 6.12 bug");
  t.same(knownBugsFor([{ ...BUG, kernels: ["6.12"] }], k612).length, 1, "a version prefix matches 6.12.95");
  t.same(knownBugsFor([{ ...BUG, kernels: ["6.1"] }], k612), [], "6.1 is not a prefix of 6.12.95");
  t.same(
    knownBugsFor([{ ...BUG, kernels: ["6.1"] }], { ...target }),
    [],
    "no kernel known: a kernel-bound bug does not apply",
  );
  t.same(knownBugsFor([{ ...BUG, executors: ["user"] }], k612), [], "user-executor only");
  t.same(knownBugsFor([{ ...BUG, device_profiles: ["erdma-2022"] }], k612), [], "another device profile");
  t.same(knownBugsFor([{ ...BUG, device_profiles: ["erdma-reflush"] }], k612).length, 1);
});

t.test("a bug under some oracle profiles only: the others judge as they are", async (t) => {
  const bug = { ...BUG, oracle_profiles: ["ib", "linux"] as ("ib" | "linux")[] };
  const rdmac: ProfileJudgement = { profile: "iwarp-rdmac", verdict: "PASS", rules: [rule("5", "PASS")] };
  const [linux, iwarp] = applyKnownBugs([judgement([rule("5", "FAIL")]), rdmac], [bug]);
  t.equal(linux?.verdict, "XFAIL", "a bug under linux");
  t.equal(iwarp?.verdict, "PASS", "no XPASS under iwarp-rdmac: the record does not speak for it");
  t.same(iwarp?.rules[0]?.knownBug, undefined);
});

t.test("XFAIL, XPASS and an unexpected FAIL", async (t) => {
  const [xfail] = applyKnownBugs(
    [judgement([rule("4", "PASS"), rule("5", "FAIL"), rule("9", "SKIP")])],
    [BUG],
  );
  t.equal(xfail?.verdict, "XFAIL", "the recorded rule failed: XFAIL, though rule 4 (also recorded) held");
  t.same(
    xfail?.rules.map((r) => r.verdict),
    ["XPASS", "XFAIL", "SKIP"],
  );
  t.match(
    xfail?.rules[1]?.reason,
    /^known bug \(drivers\/infiniband\/hw\/erdma\/erdma_qp\.c:erdma_post_recv\): rule 5 says FAIL$/,
  );
  t.same(xfail?.rules[1]?.knownBug, { reference: BUG.reference, note: BUG.note });
  t.same(xfail?.rules[1]?.evidence, ["e"], "the evidence is kept");

  const [unexpected] = applyKnownBugs([judgement([rule("5", "FAIL"), rule("9", "FAIL")])], [BUG]);
  t.equal(unexpected?.verdict, "FAIL", "a FAIL of a rule the bug does not name stays a FAIL");

  const [xpass] = applyKnownBugs(
    [judgement([rule("4", "PASS"), rule("5", "PASS"), rule("9", "PASS")])],
    [BUG],
  );
  t.equal(xpass?.verdict, "XPASS", "the bug did not show");
  t.match(xpass?.rules[1]?.reason, /^holds though a known bug is recorded/);

  const [skipOnly] = applyKnownBugs(
    [judgement([rule("4", "SKIP"), rule("5", "SKIP"), rule("9", "PASS")])],
    [BUG],
  );
  t.equal(skipOnly?.verdict, "PASS", "recorded rules that were not judged make no XPASS");

  const [errored] = applyKnownBugs([judgement([rule("5", "FAIL"), rule("hang", "ERROR")])], [BUG]);
  t.equal(errored?.verdict, "ERROR", "a broken run stays an ERROR");
  const none = applyKnownBugs([judgement([rule("5", "FAIL")])], []);
  t.equal(none[0]?.verdict, "FAIL", "no bugs, no change");
});

t.test("exit codes and the summary line", async (t) => {
  const r = (id: string, verdict: CheckResult["verdict"]): CheckResult => ({
    id,
    title: id,
    verdict,
    reason: "x",
  });
  t.equal(
    exitCodeFor([r("a[linux]", "PASS"), r("b[linux]", "XFAIL"), r("c[linux]", "XPASS")]),
    EXIT_ALL_PASS,
  );
  t.equal(exitCodeFor([r("a[linux]", "XFAIL"), r("b[linux]", "FAIL")]), EXIT_FAILED);
  t.equal(
    exitCodeFor([r("a[linux]", "XFAIL"), r("b[linux]", "FAIL"), r("c[linux]", "MISS")]),
    EXIT_NOT_JUDGED,
  );
  const by = (x: CheckResult, expectedBy: CheckResult["expectedBy"]): CheckResult => ({ ...x, expectedBy });
  t.equal(
    summaryLine([
      r("a", "PASS"),
      by(r("b", "XFAIL"), "known bug"),
      by(r("c", "XFAIL"), "known bug"),
      by(r("d", "XPASS"), "known bug"),
      r("e", "MISS"),
    ]),
    "hil: 1 passed, 0 failed, 2 xfail (2 known bugs), 1 xpass (known bug not seen), 1 miss",
  );
  t.equal(
    summaryLine([
      by(r("a", "XFAIL"), "injected fault"),
      by(r("b", "XFAIL"), "known bug"),
      by(r("c", "XFAIL"), "injected fault"),
      r("d", "XFAIL"),
    ]),
    "hil: 0 passed, 0 failed, 4 xfail (2 injected faults, 1 known bug, 1 expected)",
    "an injected fault's expected FAIL is not called a known bug; a record without its cause says expected",
  );
  const table = renderScenarioTable([
    r("kernel-release", "PASS"),
    r("erdma-probe", "PASS"),
    { ...r("ov[ib]", "XFAIL"), reason: "rule 5: known bug (f.c:g): lost" },
    r("ov[linux]", "XFAIL"),
    r("ok[ib]", "PASS"),
    r("ok[linux]", "XPASS"),
  ]).split("\n");
  t.equal(table[0], "the device probes: kernel-release PASS, erdma-probe PASS");
  t.match(table[2], /^scenario\s+ib\s+linux\s+judged \(rule:events\)\s+reason$/);
  t.match(table[3], /^ov\s+XFAIL\s+XFAIL\s+-\s+rule 5: known bug \(f\.c:g\): lost$/);
  t.match(table[4], /^ok\s+PASS\s+XPASS\s+-\s+x$/);
  t.equal(table[5], "hil: 3 passed, 0 failed, 2 xfail (2 expected), 1 xpass (known bug not seen)");
  const failedProbe = renderScenarioTable([r("erdma-probe", "FAIL"), r("s[linux]", "MISS")]).split("\n");
  t.equal(failedProbe[0], "the device probes:");
  t.match(failedProbe[1], /^\s+erdma-probe\s+FAIL\s+x$/);
});

t.test("known_bugs in a scenario file: validated with file:line errors", async (t) => {
  const text = (bug: string[]) =>
    ["description: d", "covers: [5]", "steps: [ { drain: {} } ]", "known_bugs:", ...bug].join("\n");
  const ok = parseScenario(
    text([
      "  - driver: erdma",
      "    rules: [5, hang]",
      "    failure: never completed",
      "    kernels: [debian:6.12, '6.1']",
      "    executors: [kernel]",
      "    reference: https://lore.kernel.org/linux-rdma/x",
      "    note: n",
    ]),
    "ok.yaml",
  );
  t.same(ok.known_bugs?.[0]?.rules, [5, "hang"]);
  const errorOf = (lines: string[]) => {
    try {
      parseScenario(text(lines), "bad.yaml");
    } catch (err) {
      return err as { message: string; where?: string };
    }
    throw new Error("no error");
  };
  const noRef = errorOf(["  - driver: erdma", "    rules: [5]", "    failure: x", "    note: n"]);
  t.match(noRef.message, /^known_bugs\[0\]\.reference: /);
  t.equal(noRef.where, "bad.yaml:5:5");
  const badRef = errorOf([
    "  - driver: erdma",
    "    rules: [5]",
    "    failure: x",
    "    reference: somewhere",
    "    note: n",
  ]);
  t.match(badRef.message, /known_bugs\[0\]\.reference: file:function .* or a URL/);
  t.equal(badRef.where, "bad.yaml:8:5");
  const noFailure = errorOf(["  - driver: erdma", "    rules: [5]", "    reference: a/b.c:f", "    note: n"]);
  t.match(noFailure.message, /^known_bugs\[0\]\.failure: /, "a record says what its failure looks like");
  const badFailure = errorOf([
    "  - driver: erdma",
    "    rules: [5]",
    "    failure: 'WR (1'",
    "    reference: a/b.c:f",
    "    note: n",
  ]);
  t.match(badFailure.message, /known_bugs\[0\]\.failure: not a valid regular expression/);
  const rule8 = errorOf([
    "  - driver: erdma",
    "    rules: [8]",
    "    failure: x",
    "    reference: a/b.c:f",
    "    note: n",
  ]);
  t.match(rule8.message, /rule 8 \(SQ Error\) is not judged: an RC QP never enters SQE/);
  const unknownId = errorOf(["  - no-such-bug"]);
  t.match(
    unknownId.message,
    /known_bugs\[0\]: no known bug "no-such-bug" in fixtures\/known-bugs\.yaml \(rdma-core-erdma-eio-in-error/,
  );
  const shared = parseScenario(text(["  - rdma-core-erdma-eio-in-error"]), "shared.yaml");
  t.same(
    shared.known_bugs?.filter((b) => !b.implied).map((b) => [b.id, b.executors, b.rules, b.failure]),
    [["rdma-core-erdma-eio-in-error", ["user"], [1, 2, 9], "returned -?5\\b"]],
    "a shared record named by id (named: not implied)",
  );
  t.same(
    shared.known_bugs?.filter((b) => b.implied).map((b) => b.id),
    ["siw-user-qp-no-flush-in-error", "rxe-user-qp-recv-unflushed-in-error", "siw-query-qp-no-state"],
    "the other shared records apply to every scenario by their pattern",
  );
  const badKernel = errorOf([
    "  - driver: erdma",
    "    rules: [5]",
    "    failure: x",
    "    kernels: [linux-6]",
    "    reference: a/b.c:f",
    "    note: n",
  ]);
  t.match(badKernel.message, /known_bugs\[0\]\.kernels\[0\]: a base \(debian:6\.12\) or a version/);
  const badRule = errorOf([
    "  - driver: erdma",
    "    rules: [10]",
    "    failure: x",
    "    reference: a/b.c:f",
    "    note: n",
  ]);
  t.match(badRule.message, /known_bugs\[0\]\.rules\[0\]/);
  const offDriver = parseScenarioError([
    "description: d",
    "covers: [5]",
    "drivers: [siw]",
    "steps: [ { drain: {} } ]",
    "known_bugs:",
    "  - driver: erdma",
    "    rules: [5]",
    "    failure: x",
    "    reference: a/b.c:f",
    "    note: n",
  ]);
  t.match(offDriver.message, /known_bugs\[0\]\.driver: the scenario does not run on erdma/);
  t.equal(offDriver.where, "bad.yaml:6:5", "the driver field of the entry");
});

function parseScenarioError(lines: string[]): { message: string; where?: string } {
  try {
    parseScenario(lines.join("\n"), "bad.yaml");
  } catch (err) {
    return err as { message: string; where?: string };
  }
  throw new Error("no error");
}

t.test("the fixture records the erdma RQ-overflow bug with its citation", async (t) => {
  const { loadScenarioFile } = await import("../../harness/scenario/load.ts");
  const s = await loadScenarioFile(
    new URL("../../fixtures/scenarios/partial-post-rq-overflow.yaml", import.meta.url).pathname,
  );
  t.same(
    s.known_bugs?.filter((b) => !b.implied).map((b) => [b.driver, b.rules, b.reference, b.kernels, b.hides]),
    [
      [
        "erdma",
        [4, 5, "hw-protocol"],
        "drivers/infiniband/hw/erdma/erdma_qp.c:erdma_post_recv",
        undefined,
        [3],
      ],
    ],
  );
});

t.test("expect_fail: the rules an injected fault must break", async (t) => {
  const why = { rules: [5, "hang" as const], why: "dropped CQE" };
  const [caught] = applyExpectedFailures(
    [judgement([rule("5", "FAIL"), rule("hang", "PASS"), rule("4", "PASS")])],
    why,
  );
  t.equal(
    caught?.verdict,
    "FAIL",
    "the hang rule held though the fault should break it: the oracle missed it",
  );
  t.match(
    caught?.rules[1]?.reason,
    /^the injected fault should break this rule \(dropped CQE\), but it holds/,
  );
  const [both] = applyExpectedFailures(
    [judgement([rule("5", "FAIL"), rule("hang", "FAIL"), rule("4", "PASS")])],
    why,
  );
  t.equal(both?.verdict, "XFAIL");
  t.match(both?.rules[0]?.reason, /^injected fault \(dropped CQE\): rule 5 says FAIL$/);
  t.equal(both?.rules[0]?.injectedFault, true, "the XFAIL says the scenario's fault made it");
  t.equal(both?.rules[0]?.knownBug, undefined, "and names no known bug");
  const [other] = applyExpectedFailures(
    [judgement([rule("5", "FAIL"), rule("hang", "FAIL"), rule("4", "FAIL")])],
    why,
  );
  t.equal(other?.verdict, "FAIL", "a rule the fault is not meant to break still FAILs");
  t.same(applyExpectedFailures([judgement([rule("5", "FAIL")])], undefined)[0]?.verdict, "FAIL");
  t.throws(
    () =>
      parseScenario(
        [
          "description: d",
          "covers: [5]",
          "steps: [ { drain: {} } ]",
          "expect_fail: { rules: [5], why: w }",
        ].join("\n"),
        "x.yaml",
      ),
    { message: /expect_fail: expect_fail is for scenarios whose fault steps break rules/ },
  );
});

/** A FAIL of rule `id` with one problem per reason, each about the WRs given. */
function failing(id: RuleVerdict["rule"], problems: { reason: string; wrs?: number[] }[]): RuleVerdict {
  return {
    ...rule(id, "FAIL"),
    reason: problems[0]?.reason ?? "",
    problems: problems.map((p) => ({
      reason: p.reason,
      evidence: [],
      ...(p.wrs ? { wrs: p.wrs.map((wrId) => ({ qp: "qp", queue: "rq" as const, wrId })) } : {}),
    })),
  };
}

t.test("a known bug matches its evidence: a failure the record does not describe stays a FAIL", async (t) => {
  const bug: KnownBug = { ...BUG, rules: [5], failure: "WR 200[3-5] completed 2 times" };
  const [described] = applyKnownBugs(
    [judgement([failing("5", [{ reason: "qp rq WR 2004 completed 2 times" }])])],
    [bug],
  );
  t.equal(described?.verdict, "XFAIL", "the failure the record describes");
  const [second] = applyKnownBugs(
    [
      judgement([
        failing("5", [
          { reason: "qp rq WR 2004 completed 2 times" },
          { reason: "qp sq WR 1000 (posted in RTS) never completed though qp ended in ERR" },
        ]),
      ]),
    ],
    [bug],
  );
  t.equal(second?.verdict, "FAIL", "a second, different failure of the same rule is a FAIL");
  t.match(
    second?.rules[0]?.reason,
    /WR 1000 .* never completed .*a failure the known-bug record of rule 5 does not describe/,
  );
  t.equal(second?.rules[0]?.knownBug, undefined);
});

t.test(
  "expect_fail is met only by a failure naming the faulted WR; it is applied before the known bugs",
  async (t) => {
    const why = { rules: [5], why: "the device drops WR 2003's flush completion" };
    const target = [{ qp: "qp", queue: "rq" as const, wrId: 2003 }];
    const [named] = applyExpectedFailures(
      [judgement([failing("5", [{ reason: "WR 2003 never completed", wrs: [2003] }])])],
      why,
      target,
    );
    t.equal(named?.verdict, "XFAIL");
    const [elsewhere] = applyExpectedFailures(
      [judgement([failing("5", [{ reason: "WR 2007 never completed", wrs: [2007] }])])],
      why,
      target,
    );
    t.equal(elsewhere?.verdict, "FAIL", "the rule broke on a WR the fault did not hit");
    t.match(elsewhere?.rules[0]?.reason, /on no WR the injected fault hit \(qp rq WR 2003\)/);
    const [noWr] = applyExpectedFailures(
      [judgement([failing("hang", [{ reason: "drain did not return" }])])],
      { rules: ["hang"], why: "the queue is stalled" },
      [],
    );
    t.equal(noWr?.verdict, "XFAIL", "a fault on no WR (a stalled queue) is met by any failure of the rule");

    // a known bug recorded on the rule a fault must break: the fault's miss is not hidden as an XPASS
    const bug: KnownBug = { ...BUG, rules: [5] };
    const held = applyKnownBugs(applyExpectedFailures([judgement([rule("5", "PASS")])], why, target), [bug]);
    t.equal(held[0]?.verdict, "FAIL", "the fault was not caught: FAIL, whatever the known-bug record says");
  },
);

t.test("--strict: an XPASS fails the run", async (t) => {
  const xpass: CheckResult[] = [{ id: "a[ib]", title: "a", verdict: "XPASS", reason: "holds though" }];
  t.equal(exitCodeFor(xpass), EXIT_ALL_PASS);
  t.equal(exitCodeFor(xpass, { strict: true }), EXIT_FAILED);
  t.equal(
    exitCodeFor([...xpass, { id: "b[ib]", title: "b", verdict: "MISS", reason: "r" }], { strict: true }),
    EXIT_NOT_JUDGED,
  );
});

t.test(
  "hides: a covered rule the bug keeps from being exercised is a SKIP naming it, not a MISS",
  async (t) => {
    const bug: KnownBug = { ...BUG, rules: [1], hides: [6] };
    const miss = { ...rule("6", "MISS"), reason: "rule 6 not exercised: no unsignaled send WR", judged: 0 };
    const [hidden] = applyKnownBugs([judgement([rule("1", "FAIL"), miss])], [bug]);
    t.same(
      hidden?.rules.map((r) => r.verdict),
      ["XFAIL", "SKIP"],
    );
    t.match(hidden?.rules[1]?.reason, /not exercised: .*a known bug keeps it from being exercised here/);
    const [other] = applyKnownBugs([judgement([{ ...rule("4", "MISS"), judged: 0 }])], [bug]);
    t.equal(other?.verdict, "MISS", "a rule the record does not hide stays a MISS");
  },
);

t.test(
  "hides takes a ULP rule: a ULP that cannot connect moves no data, a SKIP naming the record",
  async (t) => {
    const bug: KnownBug = { ...BUG, rules: ["ulp-steps"], failure: "-99", hides: ["ulp-data"] };
    const steps = failing("ulp-steps", [{ reason: "step 2 (connect) exited 1: rdma_connect_locked(): -99" }]);
    const miss = { ...rule("ulp-data", "MISS"), reason: "rule ulp-data not exercised: no I/O", judged: 0 };
    const [hidden] = applyKnownBugs([judgement([steps, miss])], [bug]);
    t.same(
      hidden?.rules.map((r) => r.verdict),
      ["XFAIL", "SKIP"],
    );
    t.equal(hidden?.verdict, "XFAIL");
    t.same(
      knownBugSchema.parse({ ...BUG, hides: ["ulp-data"] }).hides,
      ["ulp-data"],
      "the record's schema takes it",
    );
    t.throws(
      () => knownBugSchema.parse({ ...BUG, hides: ["ulp-nothing"] }),
      "a rule that does not exist is refused",
    );
  },
);

t.test("a shared record applied by pattern makes no XPASS where its bug does not show", async (t) => {
  const implied: KnownBug = { ...BUG, id: "shared-bug", implied: true, rules: [5] };
  const [held] = applyKnownBugs([judgement([rule("5", "PASS")])], [implied]);
  t.equal(held?.verdict, "PASS", "the scenario did not meet the bug: nothing to say about the record");
  const [met] = applyKnownBugs([judgement([rule("5", "FAIL")])], [implied]);
  t.equal(met?.verdict, "XFAIL");
  t.equal(met?.rules[0]?.knownBug?.id, "shared-bug", "the XFAIL names the shared record");
  const named: KnownBug = { ...BUG, id: "shared-bug", rules: [5] };
  t.equal(
    applyKnownBugs([judgement([rule("5", "PASS")])], [named])[0]?.verdict,
    "XPASS",
    "named in the file: XPASS",
  );
});

t.test(
  "a record naming commands: a step's unexpected return it describes is XFAIL, other ERRORs stay",
  async (t) => {
    const bug: KnownBug = {
      ...BUG,
      rules: ["commands"],
      failure: "returned 0; the scenario expects an error",
    };
    const cmd = (reason: string): RuleVerdict => ({ ...rule("commands", "ERROR"), reason });
    const [described] = applyKnownBugs(
      [judgement([cmd('step 2 (line 9): "post_send" returned 0; the scenario expects an error')])],
      [bug],
    );
    t.equal(described?.rules[0]?.verdict, "XFAIL");
    t.equal(described?.verdict, "XFAIL");
    const [truncated] = applyKnownBugs(
      [judgement([cmd("the trace ends before step 3 (line 11) was done")])],
      [bug],
    );
    t.equal(truncated?.rules[0]?.verdict, "ERROR", "a cut trace is not the driver's return");
    const [other] = applyKnownBugs(
      [judgement([{ ...rule("console", "ERROR"), reason: "returned 0; the scenario expects an error" }])],
      [{ ...bug, rules: ["console"] }],
    );
    t.equal(other?.rules[0]?.verdict, "ERROR", "only the commands rule's ERROR can be a known bug");
  },
);
