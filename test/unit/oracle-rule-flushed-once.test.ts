// Rule 5 (every outstanding WR completes exactly once, on its own CQ) on hand-built traces: what
// it counts as owed, what each problem quotes and names, and completions of WRs never posted
// (a drain marker's included).
import t from "tap";
import { pair, quoted, TraceBuilder, verdictOf } from "../support/oracle-trace.ts";

const rq = (wrId: number, post: number) => ({ qp: "qp", queue: "rq", wrId, post });

t.test("nothing came and nothing was owed: SKIP", async (t) => {
  const v = verdictOf(pair().post("qp", "rq", 10, 2), "5");
  t.same([v.verdict, v.reason, v.judged], ["SKIP", "no completion came and none was owed", 0]);
});

t.test("PASS counts the completions and the completions owed", async (t) => {
  const b = pair()
    .post("qp", "rq", 10, 3, { rc: -12, bad: 1 })
    .post("qp", "sq", 1, 1)
    .modify("qp", "ERR")
    .cqe("qp", "rq", 10)
    .cqe("qp", "sq", 1);
  const v = verdictOf(b, "5");
  t.same(
    [v.verdict, v.reason, v.judged],
    [
      "PASS",
      "2 completion(s), each of a posted WR on its own CQ, none twice; 2 owed completion(s) all present",
      4,
    ],
    "the WRs at and after *bad_wr were never posted: nothing is owed for them",
  );
});

t.test("a QP the trace never created: its CQs are unknown, not judged", async (t) => {
  const b = new TraceBuilder()
    .post("x", "rq", 1, 2)
    .modify("x", "ERR")
    .cqe("x", "rq", 1, { cq: "a" })
    .cqe("x", "rq", 2, { cq: "b" });
  const v = verdictOf(b, "5");
  t.same([v.verdict, v.judged], ["PASS", 4]);
});

t.test("each problem quotes its records and names its WR and completions", async (t) => {
  const b = new TraceBuilder().qp("qp", { qpNum: 7, scq: "scq", rcq: "rcq" }).post("qp", "rq", 10, 4);
  const post = b.records.length - 2;
  b.modify("qp", "ERR");
  const first = b.records.length;
  b.cqe("qp", "rq", 10);
  const wrongCq = b.records.length;
  b.cqe("qp", "rq", 11, { cq: "scq" });
  const again = b.records.length;
  b.cqe("qp", "rq", 10);
  const ghost = b.records.length;
  b.cqe("qp", "rq", 99, { call: 42 });
  const ghostMarker = b.records.length;
  b.markerCqe(77, "qp", "sq");
  b.cqe("qp", "rq", 13);
  const v = verdictOf(b, "5");
  t.equal(v.verdict, "FAIL");
  t.equal(v.judged, 6 + 4, "six completions, four owed (WR 10 to 13)");
  t.same(v.problems, [
    {
      reason: "qp rq WR 11 completed on scq, its queue's CQ is rcq",
      evidence: [quoted(b, wrongCq)],
      wrs: [rq(11, post)],
      cqes: [wrongCq],
    },
    {
      reason: "a completion for qp rq WR 99 that was never posted",
      evidence: [quoted(b, ghost)],
      cqes: [ghost],
    },
    {
      reason: "a completion for qp sq WR (marker) that was never posted",
      evidence: [quoted(b, ghostMarker)],
      cqes: [ghostMarker],
    },
    {
      reason: "qp rq WR 10 completed 2 times",
      evidence: [quoted(b, first), quoted(b, again)],
      wrs: [rq(10, post)],
      cqes: [first, again],
    },
    {
      reason: "qp rq WR 12 (posted in RTS) never completed though qp ended in ERR",
      evidence: [quoted(b, post)],
      wrs: [rq(12, post)],
    },
  ]);
});

t.test("a run that ended in a hung drain: only the CQ the drain polled is known to the end", async (t) => {
  const hung = (b: TraceBuilder) =>
    b.raw({
      ev: "hang",
      call: 9,
      qp: "qp",
      op: "drain",
      which: "sq",
      queue: "sq",
      cq: "scq",
      waited_ms: 10_000,
    });
  const b = new TraceBuilder()
    .qp("qp", { qpNum: 1, scq: "scq", rcq: "rcq" })
    .post("qp", "rq", 10, 2)
    .post("qp", "sq", 1, 1)
    .modify("qp", "ERR");
  const unpolled = hung(b);
  const v = verdictOf(unpolled, "5");
  t.same([v.verdict, v.judged], ["FAIL", 1], "the send the drain waited for on scq is owed");
  t.match(v.problems, [{ reason: /qp sq WR 1 \(posted in RTS\) never completed/ }]);
  t.notMatch(v.reason, /rq WR 1[01]/, "the receives on rcq, which nobody polled after the hang, are not");
  const polled = hung(
    new TraceBuilder()
      .qp("qp", { qpNum: 1, scq: "scq", rcq: "rcq" })
      .post("qp", "sq", 1, 1)
      .modify("qp", "ERR")
      .cqe("qp", "sq", 1, { status: 5 }),
  );
  t.equal(verdictOf(polled, "5").verdict, "PASS");
});
