// Rule 3 (a partial post counts) on hand-built traces: what a PASS counts, what each problem
// quotes (the post and its return) and which WRs it names, and that a WR before *bad_wr owes its
// completion only once its QP is in ERR.
import t from "tap";
import { pair, quoted, verdictOf } from "../support/oracle-trace.ts";

const wr = (queue: "sq" | "rq", wrId: number, post: number) => ({ qp: "qp", queue, wrId, post });

t.test("no post call failed: SKIP", async (t) => {
  const v = verdictOf(pair().post("qp", "sq", 1, 2).drain("qp", "sq", { markerRc: -12 }), "3");
  t.same(
    [v.verdict, v.reason, v.judged],
    ["SKIP", "no post call failed", 0],
    "a refused drain marker is rule 9's",
  );
});

t.test("PASS counts the partial posts and the WRs before *bad_wr", async (t) => {
  const b = pair()
    .post("qp", "rq", 10, 4, { rc: -12, bad: 2 })
    .post("qp", "sq", 1, 3, { rc: -12, bad: 1 })
    .modify("qp", "ERR")
    .flush("qp", "rq", 10, 2)
    .flush("qp", "sq", 1, 1);
  const v = verdictOf(b, "3");
  t.same(
    [v.verdict, v.reason, v.judged],
    ["PASS", "2 partial post(s): 3 WR(s) before *bad_wr completed, none after", 2],
  );
});

t.test("a WR before *bad_wr owes its completion once its QP is in ERR, not before", async (t) => {
  const b = pair().post("qp", "sq", 1, 3, { rc: -12, bad: 2 });
  t.equal(verdictOf(b, "3").verdict, "PASS", "the QP is still in RTS: WR 1 and 2 may still complete");
  b.modify("qp", "ERR");
  t.equal(verdictOf(b, "3").verdict, "FAIL");
});

t.test("each problem quotes the call's post and return and names its WRs and completions", async (t) => {
  const b = pair().post("qp", "sq", 1, 4, { rc: 0, bad: 2 });
  const contradicted = b.records.length - 2;
  b.post("qp", "rq", 10, 2, { rc: -22, bad: null });
  const noBad = b.records.length - 2;
  b.post("qp", "rq", 20, 3, { rc: -12, bad: 1 });
  const partial = b.records.length - 2;
  b.modify("qp", "ERR");
  const ghost = b.records.length;
  b.cqe("qp", "rq", 22);
  const v = verdictOf(b, "3");
  t.equal(v.verdict, "FAIL");
  t.equal(v.judged, 3, "two failed calls and one that returned 0 with *bad_wr");
  t.same(v.problems, [
    {
      reason: `post call 1 on qp returned 0 with *bad_wr at index 2: the WRs from there on count as posted`,
      evidence: [quoted(b, contradicted), quoted(b, contradicted + 1)],
      wrs: [wr("sq", 3, contradicted), wr("sq", 4, contradicted)],
    },
    {
      reason: "post call 2 on qp returned -22 without *bad_wr",
      evidence: [quoted(b, noBad), quoted(b, noBad + 1)],
      wrs: [wr("rq", 10, noBad), wr("rq", 11, noBad)],
    },
    {
      reason: "WR 20 before *bad_wr (index 1) of call 3, posted to qp in RTS, never completed",
      evidence: [quoted(b, partial), quoted(b, partial + 1)],
      wrs: [wr("rq", 20, partial)],
    },
    {
      reason: "WR 22 at or after *bad_wr (index 1) of call 3 was not posted but completed",
      evidence: [quoted(b, partial), quoted(b, partial + 1), quoted(b, ghost)],
      wrs: [wr("rq", 22, partial)],
      cqes: [ghost],
    },
  ]);
});
