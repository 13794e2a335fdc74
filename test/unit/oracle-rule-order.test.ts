// Rule 4 (completion order per work queue) on hand-built traces: what it counts, when it has
// nothing to compare, and that a WR's repeated completion is left to rule 5.
import t from "tap";
import { pair, quoted, SUCCESS, verdictOf } from "../support/oracle-trace.ts";

t.test("nothing to put in order: SKIP, saying why", async (t) => {
  const none = verdictOf(pair().modify("qp", "ERR"), "4");
  t.same([none.verdict, none.reason, none.judged], ["SKIP", "no completions of posted WRs", 0]);
  const ghostOnly = verdictOf(
    pair().cqe("qp", "rq", 99, { call: 42 }).cqe("qp", "rq", 98, { call: 42 }),
    "4",
  );
  t.same(
    [ghostOnly.verdict, ghostOnly.reason],
    ["SKIP", "no completions of posted WRs"],
    "completions of WRs never posted are rule 5's",
  );
  const onePerQueue = pair().post("qp", "sq", 1, 1).post("qp", "rq", 10, 1).modify("qp", "ERR");
  const single = verdictOf(onePerQueue.cqe("qp", "sq", 1).cqe("qp", "rq", 10), "4");
  t.same(
    [single.verdict, single.reason, single.judged],
    ["SKIP", "no work queue had two completions to put in order", 0],
  );
});

t.test("PASS counts the completions of posted WRs, the queues, and the pairs compared", async (t) => {
  const b = pair()
    .post("qp", "sq", 1, 3)
    .post("qp", "rq", 10, 2)
    .modify("qp", "ERR")
    .flush("qp", "sq", 1, 3)
    .cqe("qp", "rq", 77, { call: 42 })
    .flush("qp", "rq", 10, 2);
  const v = verdictOf(b, "4");
  t.same(
    [v.verdict, v.reason, v.judged],
    ["PASS", "5 completion(s) in posting order on 2 queue(s)", 3],
    "the never-posted WR 77 is not counted; each queue's first completion has nothing before it",
  );
});

t.test("a WR completed twice is rule 5's: its repeat is not a swap", async (t) => {
  const b = pair().post("qp", "rq", 10, 2).modify("qp", "ERR").flush("qp", "rq", 10, 2).cqe("qp", "rq", 10);
  const v = verdictOf(b, "4");
  t.same([v.verdict, v.judged], ["PASS", 1]);
  t.match(verdictOf(b, "5").reason, /qp rq WR 10 completed 2 times/);
});

t.test("a swap: FAIL naming both WRs and both completions, judged per pair compared", async (t) => {
  const b = pair().post("qp", "sq", 1, 3);
  const post = b.records.length - 2;
  b.modify("qp", "ERR").cqe("qp", "sq", 1, { status: SUCCESS });
  const c3 = b.records.length;
  b.cqe("qp", "sq", 3);
  const c2 = b.records.length;
  b.cqe("qp", "sq", 2);
  const v = verdictOf(b, "4");
  t.equal(v.verdict, "FAIL");
  t.equal(v.judged, 2);
  t.same(v.problems, [
    {
      reason: "qp sq: WR 2 completed after WR 3, which was posted later",
      evidence: [quoted(b, c3), quoted(b, c2)],
      wrs: [
        { qp: "qp", queue: "sq", wrId: 2, post },
        { qp: "qp", queue: "sq", wrId: 3, post },
      ],
      cqes: [c3, c2],
    },
  ]);
});
