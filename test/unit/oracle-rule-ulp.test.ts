// The ULP workload's rules (harness/oracle/rules/ulp.ts) on hand-made observations: data read back
// as written unless an I/O error was reported, each step's exit against what it allows, objects
// left behind after the teardown (with the release commands the device refused), hung steps, and
// a connect half open on the device named in a failed or hung connect. And every rule of both rule
// sets carries the title and citation its verdict rows show.
import t from "tap";
import { RULES, ULP_RULE_SET } from "../../harness/oracle/judge.ts";
import { TraceModel } from "../../harness/oracle/model.ts";
import type { RuleResult } from "../../harness/oracle/rule.ts";
import { ulpDataRule, ulpLeakRule, ulpReturnsRule, ulpStepsRule } from "../../harness/oracle/rules/ulp.ts";
import type { HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import type {
  Observation,
  StuckObservation,
  UlpObjectsObservation,
  UlpStepObservation,
} from "../../harness/protocol/observations.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";

const model = new TraceModel([]);
const judge = (
  rule: { judge: (i: never) => RuleResult },
  observations: Observation[],
  hw?: HwTraceEvent[],
): RuleResult => rule.judge({ model, observations, profile: "linux", ...(hw ? { hw } : {}) } as never);

const step = (
  n: number,
  action: string,
  exitCode: number,
  more: Partial<UlpStepObservation> = {},
): UlpStepObservation => ({
  ev: "ulp-step",
  step: n,
  action,
  exitCode,
  ms: 10,
  values: {},
  expect: 0,
  ...more,
});
const io = (n: number, values: Record<string, string>, more: Partial<UlpStepObservation> = {}) =>
  step(n, "io 1024 KiB", 0, { values: { "written-sha256": "aa", ...values }, ...more });

/** One side's QP reached RTS on a connection whose other side never did. */
const HALF_OPEN: HwTraceEvent[] = [
  erdmaTraceEventSchema.parse({
    t: 1,
    dev: "erdma",
    ...cmdEventBody("MODIFY_QP", 0, {
      detail: {
        qpn: 4,
        to: "RTS",
        connection: { sip: "10.0.0.1", dip: "10.0.0.2", sport: 4420, dport: 5000 },
      },
    }),
  }),
];
const HALF =
  "hw: erdma QP 4 reached RTS on 10.0.0.1:4420 <-> 10.0.0.2:5000; no QP reached RTS on its other side (10.0.0.2:5000)";

t.test("ulp-data: read back as written, or an I/O error reported", (t) => {
  t.same(judge(ulpDataRule, [step(0, "connect", 0)]), {
    verdict: "SKIP",
    reason: "no I/O step wrote data",
    judged: 0,
    applies: true,
  });
  t.same(
    judge(ulpDataRule, [
      io(1, { "read-sha256": "aa" }),
      io(2, { "write-error": "EIO" }),
      io(3, { "read-error": "EIO", "read-sha256": "bb" }),
    ]),
    {
      verdict: "PASS",
      reason: "3 I/O step(s): the data read back is the data written (2 reported an I/O error)",
      judged: 3,
      applies: true,
    },
  );
  t.equal(
    judge(ulpDataRule, [io(1, { "read-sha256": "aa" })]).reason,
    "1 I/O step(s): the data read back is the data written",
  );
  const notRead = judge(ulpDataRule, [io(1, {}, { exitCode: 3, stderr: "dd: error" }), io(2, {})]);
  t.equal(notRead.verdict, "FAIL");
  t.same(notRead.problems, [
    {
      reason: "step 2 (io 1024 KiB): the data written was not read back and no I/O error was reported",
      evidence: ["exit 3: dd: error"],
    },
    {
      reason: "step 3 (io 1024 KiB): the data written was not read back and no I/O error was reported",
      evidence: ["exit 0"],
    },
  ]);
  const differ = judge(ulpDataRule, [io(0, { "read-sha256": "bb", bytes: "4096", differ: "offset 12" })]);
  t.same(differ.problems, [
    {
      reason:
        "step 1 (io 1024 KiB): 4096 bytes read back differ from what was written, and no I/O error was reported",
      evidence: ["written sha256 aa", "read    sha256 bb", "first difference: offset 12"],
    },
  ]);
  const sameSum = judge(ulpDataRule, [io(0, { "read-sha256": "aa", differ: "offset 0" })]);
  t.equal(sameSum.verdict, "FAIL", "a difference found though the sums agree");
  t.equal(
    sameSum.problems?.[0]?.reason,
    "step 1 (io 1024 KiB): ? bytes read back differ from what was written, and no I/O error was reported",
  );
  t.same(judge(ulpDataRule, [io(0, { "read-sha256": "bb" })]).problems?.[0]?.evidence, [
    "written sha256 aa",
    "read    sha256 bb",
  ]);
  t.end();
});

t.test(
  "ulp-steps: each step's exit against what it allows; a failed connect names a half-open connection",
  (t) => {
    t.same(judge(ulpStepsRule, []), {
      verdict: "SKIP",
      reason: "no ULP step returned",
      judged: 0,
      applies: true,
    });
    t.same(
      judge(ulpStepsRule, [
        step(0, "connect", 0),
        step(1, "io", 5, { expect: "any" }),
        step(2, "disconnect", 1, { expect: "error" }),
      ]),
      { verdict: "PASS", reason: "3 ULP step(s) did what they meant", judged: 3, applies: true },
    );
    const failed = judge(
      ulpStepsRule,
      [
        step(0, "connect", 1, { stderr: "no route\nline 2\n3\n4\n5\n6\n7" }),
        step(1, "disconnect", 0, { expect: "error" }),
        step(2, "teardown", 2),
      ],
      HALF_OPEN,
    );
    t.same(failed.problems, [
      {
        reason:
          "step 1 (connect) exited 1: no route; the device saw 1 connection(s) reach RTS on one side only",
        evidence: ["no route", "line 2", "3", "4", "5", "6", HALF],
      },
      { reason: "step 2 (disconnect) exited 0 (expected error)", evidence: [] },
      { reason: "step 3 (teardown) exited 2", evidence: [] },
    ]);
    const noHw = judge(ulpStepsRule, [step(0, "connect", 1)]);
    t.same(noHw.problems, [{ reason: "step 1 (connect) exited 1", evidence: [] }]);
    t.end();
  },
);

t.test("ulp-leak: objects left after the teardown, with the releases the device refused", (t) => {
  const objects = (
    source: "kernel" | "device",
    before: Record<string, number>,
    after: Record<string, number>,
  ): UlpObjectsObservation => ({
    ev: "ulp-objects",
    source,
    before,
    after,
  });
  t.same(judge(ulpLeakRule, []), {
    verdict: "SKIP",
    reason: "the objects were not counted after the teardown (it did not finish)",
    judged: 0,
    applies: true,
  });
  t.same(judge(ulpLeakRule, [objects("kernel", { qp: 1 }, { qp: 1, cq: 4 }), objects("device", {}, {})]), {
    verdict: "PASS",
    reason:
      "nothing left behind (rdma resource and device model; CQs kept by the kernel's CQ pool not counted)",
    judged: 2,
    applies: true,
  });
  const refusal = (name: string, status: number, reason?: string): HwTraceEvent =>
    erdmaTraceEventSchema.parse({
      t: 2,
      dev: "erdma",
      ...cmdEventBody(name, status, reason ? { reason } : {}),
    });
  const hw = [
    refusal("DESTROY_QP", 6, "busy"),
    refusal("DEREG_MR", 6),
    refusal("DESTROY_CQ", 0),
    refusal("MODIFY_QP", 6),
  ];
  const left = judge(
    ulpLeakRule,
    [objects("kernel", { qp: 1, mr: 2 }, { qp: 3, mr: 3, pd: 1 }), objects("device", { qp: 0 }, { qp: 2 })],
    hw,
  );
  t.same(left.problems, [
    {
      reason:
        "after the teardown the kernel still tracks 2 qp(s), 1 mr(s), 1 pd(s) more than before the scenario",
      evidence: [
        "kernel qp: 1 before, 3 after",
        "kernel mr: 2 before, 3 after",
        "kernel pd: 0 before, 1 after",
      ],
    },
    {
      reason:
        "after the teardown the device still holds 2 qp(s) more than before the scenario; erdma DESTROY_QP refused (BAD_STATE): busy; erdma DEREG_MR refused (BAD_STATE)",
      evidence: [
        "device qp: 0 before, 2 after",
        "hw: erdma DESTROY_QP refused (BAD_STATE): busy",
        "hw: erdma DEREG_MR refused (BAD_STATE)",
      ],
    },
  ]);
  t.equal(
    judge(ulpLeakRule, [objects("device", { qp: 0 }, { qp: 1 })]).reason,
    "after the teardown the device still holds 1 qp(s) more than before the scenario",
    "no hardware trace: no refusals to name",
  );
  t.end();
});

t.test("hang: every step returned; a hung connect names a half-open connection", (t) => {
  t.same(judge(ulpReturnsRule, [step(0, "connect", 0), step(1, "io", 0)]), {
    verdict: "PASS",
    reason: "every ULP step returned within its watchdog",
    judged: 2,
    applies: true,
  });
  const stuck = (op: string): StuckObservation => ({
    ev: "stuck",
    step: 1,
    op,
    ms: 30000,
    stack: "a\nb",
    state: "D (disk sleep)",
  });
  const hung = judge(
    ulpReturnsRule,
    [step(0, "connect", 0), stuck("ulp connect"), stuck("ulp disconnect")],
    HALF_OPEN,
  );
  t.equal(hung.judged, 3);
  t.same(hung.problems, [
    {
      reason:
        "ulp connect (step 2) did not return within 30000 ms; its task is D (disk sleep); the device saw 1 connection(s) reach RTS on one side only",
      evidence: ["stack: a", "stack: b", HALF],
    },
    {
      reason: "ulp disconnect (step 2) did not return within 30000 ms; its task is D (disk sleep)",
      evidence: ["stack: a", "stack: b"],
    },
  ]);
  t.equal(
    judge(ulpReturnsRule, [stuck("ulp connect")]).problems?.[0]?.evidence.length,
    2,
    "no hardware trace",
  );
  const unread = "the target's TCP connection 10.99.0.2:7600 from 10.99.0.1:40000 holds 72 unread byte(s)";
  t.equal(
    judge(ulpReturnsRule, [{ ...stuck("ulp connect"), unread: [unread] }]).problems?.[0]?.reason,
    `ulp connect (step 2) did not return within 30000 ms; its task is D (disk sleep); ${unread}`,
    "bytes left in a socket are said with the hang",
  );
  t.end();
});

t.test("every rule of a set has its own id; each has a title and a citation", (t) => {
  for (const set of [RULES, ULP_RULE_SET]) {
    const ids = set.map((r) => r.id);
    t.equal(new Set(ids).size, ids.length, `ids are unique within a set: ${ids.join(", ")}`);
  }
  const rules = [...new Set([...RULES, ...ULP_RULE_SET])];
  for (const r of rules) {
    t.ok(r.title.length > 10, `${r.id}: title "${r.title}"`);
    t.ok(r.citation.length > 10, `${r.id}: citation "${r.citation}"`);
  }
  t.end();
});
