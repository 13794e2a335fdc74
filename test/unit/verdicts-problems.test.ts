// What verdicts.json keeps of a failed rule's problems: each reason, the WRs it is about with the
// record that posted each, and the completions it judged wrong, through the writer's schema check
// and back through the reader (the HTML report links a failed rule to these events).
import t from "tap";
import { readRunRecord } from "../../harness/rundir/read.ts";
import { writeRunRecord } from "../../harness/rundir/write.ts";
import { leanJudgements } from "../../harness/suite/judge-run.ts";
import { pair, verdictOf } from "../support/oracle-trace.ts";

t.test("a problem's WRs and completions survive the write and the read", async (t) => {
  const b = pair().post("qp", "rq", 10, 2);
  const post = b.records.length - 2;
  b.modify("qp", "ERR");
  const first = b.records.length;
  b.cqe("qp", "rq", 10);
  const again = b.records.length;
  b.cqe("qp", "rq", 10).cqe("qp", "rq", 11);
  const rule5 = verdictOf(b, "5");
  t.equal(rule5.verdict, "FAIL");
  const [lean] = leanJudgements([{ profile: "ib", verdict: "FAIL", rules: [rule5] }]);
  t.same(lean?.rules[0]?.problems, [
    {
      reason: "qp rq WR 10 completed 2 times",
      evidence: [],
      wrs: [{ qp: "qp", queue: "rq", wrId: 10, post }],
      cqes: [first, again],
    },
  ]);
  const dir = t.testdir({});
  await writeRunRecord(dir, {
    kernel: "debian:6.12",
    scenarios: [{ name: "dup", judgements: lean ? [lean] : [] }],
    results: [{ id: "dup[ib]", title: "dup", verdict: "FAIL", reason: rule5.reason }],
  });
  const read = await readRunRecord(dir);
  t.same(read.scenarios?.[0]?.judgements[0]?.rules[0]?.problems, [
    {
      reason: "qp rq WR 10 completed 2 times",
      evidence: [],
      wrs: [{ qp: "qp", queue: "rq", wrId: 10, post }],
      cqes: [first, again],
    },
  ]);
});

t.test("a record written before problems named their events still reads", async (t) => {
  const dir = t.testdir({
    "verdicts.json": JSON.stringify({
      kernel: "debian:6.12",
      scenarios: [
        {
          name: "old",
          judgements: [
            {
              profile: "ib",
              verdict: "FAIL",
              rules: [
                {
                  rule: "5",
                  title: "t",
                  verdict: "FAIL",
                  reason: "r",
                  problems: [{ reason: "r", wrs: [{ qp: "qp", queue: "rq", wrId: 10 }] }],
                },
              ],
            },
          ],
        },
      ],
      results: [],
    }),
  });
  const read = await readRunRecord(dir);
  t.same(read.scenarios?.[0]?.judgements[0]?.rules[0]?.problems, [
    { reason: "r", wrs: [{ qp: "qp", queue: "rq", wrId: 10 }] },
  ]);
});
