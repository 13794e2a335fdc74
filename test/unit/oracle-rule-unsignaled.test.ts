// Rule 6 (unsignaled WRs get error completions, never success ones) on hand-built traces: which
// WRs it judges (accepted unsignaled sends), what a PASS counts, when an unsignaled WR owes its
// error completion, and what each problem quotes and names.
import t from "tap";
import { pair, quoted, SUCCESS, verdictOf } from "../support/oracle-trace.ts";

const sq = (wrId: number, post: number) => ({ qp: "qp", queue: "sq", wrId, post });

t.test("no unsignaled send: SKIP", async (t) => {
  const v = verdictOf(pair().post("qp", "sq", 1, 2).post("qp", "rq", 10, 2).modify("qp", "ERR"), "6");
  t.same([v.verdict, v.reason, v.judged], ["SKIP", "no unsignaled send WR", 0]);
  const rqMarker = pair().raw({ ev: "drain", call: 50, qp: "qp", which: "rq" }).modify("qp", "ERR").raw({
    ev: "drain_marker",
    call: 50,
    qp: "qp",
    queue: "rq",
    how: "user",
    wr_id: 7,
    rc: 0,
    signaled: false,
  });
  t.equal(verdictOf(rqMarker, "6").reason, "no unsignaled send WR", "a receive has no signaled flag to drop");
});

t.test("PASS counts the accepted unsignaled sends and those completed in error", async (t) => {
  const b = pair()
    .post("qp", "sq", 1, 1, { signal: "none" })
    .modify("qp", "ERR")
    .post("qp", "sq", 2, 4, { signal: "none", rc: -12, bad: 2 })
    .flush("qp", "sq", 2, 2);
  const v = verdictOf(b, "6");
  t.same(
    [v.verdict, v.reason, v.judged],
    ["PASS", "3 unsignaled WR(s): 2 completed in error, none with SUCCESS", 3],
    "WR 1 ran before the error without a completion; WR 4 and 5 were never posted",
  );
});

t.test("an unsignaled WR posted in ERROR owes its error completion while the QP stays in ERR", async (t) => {
  const b = pair().modify("qp", "ERR").post("qp", "sq", 1, 1, { signal: "none" }).modify("qp", "RESET");
  t.equal(verdictOf(b, "6").verdict, "PASS", "a QP taken to RESET drops its WRs");
});

t.test(
  "each problem quotes the post (and the success completions) and names its WR and completions",
  async (t) => {
    const b = pair().post("qp", "sq", 1, 1, { signal: "none" });
    const first = b.records.length - 2;
    const success = b.records.length;
    b.cqe("qp", "sq", 1, { status: SUCCESS });
    b.modify("qp", "ERR").post("qp", "sq", 2, 1, { signal: "none" });
    const second = b.records.length - 2;
    const v = verdictOf(b, "6");
    t.equal(v.verdict, "FAIL");
    t.equal(v.judged, 2);
    t.same(v.problems, [
      {
        reason: "unsignaled WR 1 on qp has a SUCCESS completion",
        evidence: [quoted(b, first), quoted(b, success)],
        wrs: [sq(1, first)],
        cqes: [success],
      },
      {
        reason: "unsignaled WR 2 posted to qp in ERR got no error completion",
        evidence: [quoted(b, second)],
        wrs: [sq(2, second)],
      },
    ]);
  },
);
