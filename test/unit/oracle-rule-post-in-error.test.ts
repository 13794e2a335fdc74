// Rules 1 and 2 (a post to a QP in ERROR returns 0 and each WR is flushed) on hand-built traces:
// which calls they judge (sends in SQE too, receives in SQE not), a WR made invalid on purpose,
// what iwarp-rdmac tolerates, when a WR owes its flush, and what each problem quotes and names.
import t from "tap";
import { pair, quoted, SUCCESS, verdictOf } from "../support/oracle-trace.ts";

const wr = (queue: "sq" | "rq", wrId: number, post: number) => ({ qp: "qp", queue, wrId, post });

t.test("nothing posted in ERROR: SKIP, per queue", async (t) => {
  const b = pair().post("qp", "sq", 1, 1).post("qp", "rq", 10, 1).modify("qp", "ERR");
  const r1 = verdictOf(b, "1");
  const r2 = verdictOf(b, "2");
  t.same([r1.verdict, r1.reason, r1.judged], ["SKIP", "no send posted in ERROR", 0]);
  t.same([r2.verdict, r2.reason, r2.judged], ["SKIP", "no receive posted in ERROR", 0]);
});

t.test("SQE: a send posted in it is judged, a receive is not (receives keep working in SQE)", async (t) => {
  const b = pair()
    .modify("qp", "SQE")
    .post("qp", "sq", 1, 2)
    .post("qp", "rq", 10, 1)
    .modify("qp", "ERR")
    .flush("qp", "sq", 1, 2)
    .cqe("qp", "rq", 10);
  const r1 = verdictOf(b, "1");
  t.same(
    [r1.verdict, r1.reason, r1.judged],
    ["PASS", "1 post call(s), 2 WR(s) in ERROR: returned 0 and flushed", 2],
  );
  t.equal(verdictOf(b, "2").reason, "no receive posted in ERROR");
});

t.test("an immediate error: a FAIL under ib and linux, tolerated under iwarp-rdmac", async (t) => {
  const b = pair().modify("qp", "ERR").post("qp", "sq", 10, 2, { rc: -22, bad: 0 });
  const post = b.records.length - 2;
  for (const profile of ["ib", "linux"] as const) {
    const v = verdictOf(b, "1", profile);
    t.same([v.verdict, v.judged], ["FAIL", 2], profile);
    t.same(v.problems, [
      {
        reason: "post call 2 to qp in ERR returned -22, not 0",
        evidence: [quoted(b, post), quoted(b, post + 1)],
        wrs: [wr("sq", 10, post), wr("sq", 11, post)],
      },
    ]);
  }
  const rdmac = verdictOf(b, "1", "iwarp-rdmac");
  t.same(
    [rdmac.verdict, rdmac.reason, rdmac.judged],
    [
      "PASS",
      "1 post call(s), 2 WR(s) in ERROR: returned 0 and flushed; 1 immediate error(s) tolerated (RDMAC 6.2.4)",
      2,
    ],
  );
  b.post("qp", "sq", 20, 1, { rc: -5 });
  t.equal(
    verdictOf(b, "1", "iwarp-rdmac").reason,
    "2 post call(s), 3 WR(s) in ERROR: returned 0 and flushed; 2 immediate error(s) tolerated (RDMAC 6.2.4)",
  );
});

t.test("a refused drain marker is named as the drain's and quoted once", async (t) => {
  const b = pair().drain("qp", "sq", { markerRc: -12 });
  const marker = b.records.length - 1;
  const v = verdictOf(b, "1");
  t.same(v.problems, [
    {
      reason: "the drain's sq marker post to qp in ERR returned -12, not 0",
      evidence: [quoted(b, marker)],
      wrs: [{ qp: "qp", queue: "sq", wrId: -1, post: marker }],
    },
  ]);
});

t.test("a WR made invalid on purpose (bad=) is refused in any state: rule 3's, not rule 1's", async (t) => {
  const refused = pair()
    .modify("qp", "ERR")
    .post("qp", "sq", 1, 3, { rc: -22, bad: 1, invalid: 1 })
    .cqe("qp", "sq", 1);
  t.equal(verdictOf(refused, "1").verdict, "PASS", "the call stopped at the invalid WR");
  const elsewhere = pair().modify("qp", "ERR").post("qp", "sq", 1, 3, { rc: -22, bad: 0, invalid: 2 });
  t.equal(
    verdictOf(elsewhere, "1").reason,
    "post call 2 to qp in ERR returned -22, not 0",
    "the call stopped before the invalid WR: the ERR state refused it",
  );
});

t.test("a WR at or after *bad_wr was never posted: its completion is rule 3's", async (t) => {
  const b = pair()
    .modify("qp", "ERR")
    .post("qp", "sq", 1, 2, { rc: -12, bad: 1 })
    .cqe("qp", "sq", 1)
    .cqe("qp", "sq", 2, { status: SUCCESS });
  t.equal(verdictOf(b, "1", "iwarp-rdmac").verdict, "PASS");
  t.match(verdictOf(b, "3").reason, /WR 2 at or after \*bad_wr/);
});

t.test("a WR posted in ERROR owes its flush while the QP stays in ERR", async (t) => {
  const b = pair().modify("qp", "ERR").post("qp", "rq", 10, 1).modify("qp", "RESET");
  t.equal(verdictOf(b, "2").verdict, "PASS", "a QP taken to RESET drops its WRs");
});

t.test("each problem quotes the call (and the completion) and names its WR and completion", async (t) => {
  const b = pair().modify("qp", "ERR").post("qp", "rq", 10, 2);
  const post = b.records.length - 2;
  const done = b.records.length;
  b.cqe("qp", "rq", 10, { status: SUCCESS });
  const lone = b.records.length;
  b.raw({ ev: "post", call: 50, qp: "qp", queue: "rq", op: "recv", wr_id: 30, count: 1, index: 0, len: 64 });
  const v = verdictOf(b, "2");
  t.equal(v.verdict, "FAIL");
  t.equal(v.judged, 3);
  t.same(v.problems, [
    {
      reason: "WR 10 posted to qp in ERR completed with SUCCESS, not WR_FLUSH_ERR",
      evidence: [quoted(b, post), quoted(b, post + 1), quoted(b, done)],
      wrs: [wr("rq", 10, post)],
      cqes: [done],
    },
    {
      reason: "WR 11 posted to qp in ERR was accepted but never completed",
      evidence: [quoted(b, post), quoted(b, post + 1)],
      wrs: [wr("rq", 11, post)],
    },
    {
      reason: "WR 30 posted to qp in ERR was accepted but never completed",
      evidence: [quoted(b, lone)],
      wrs: [wr("rq", 30, lone)],
    },
  ]);
});
