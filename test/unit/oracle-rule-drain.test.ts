// Rule 9 (the Linux drain contract) on hand-built traces, part by part: the ERR transition before
// the marker, the marker accepted, its completion after those of every earlier WR of its queue,
// the drain's return and the QP's state after it, a drain that never returns, the kernel's
// warnings; what each problem quotes and names, and the parts the executor did not observe
// (ERROR, never PASS). Traces the kernel executor writes come from TraceBuilder.drain(); the raw
// ones are what a broken driver or executor could leave.
import t from "tap";
import type { ConsoleObservation, StuckObservation } from "../../harness/protocol/observations.ts";
import { pair, quoted, type TraceBuilder, verdictOf } from "../support/oracle-trace.ts";

const DRAIN = 50;
const marker = (queue: "sq" | "rq", post: number) => ({ qp: "qp", queue, wrId: -1, post });
const sq = (wrId: number, post: number) => ({ qp: "qp", queue: "sq", wrId, post });

/** the raw records of a drain: its start, an ERR transition, a marker post, its return */
const drainStart = (b: TraceBuilder, which: "qp" | "sq" | "rq", call = DRAIN) =>
  b.raw({ ev: "drain", call, qp: "qp", which });
/** rc null: the trace has no modify_ret */
const errTransition = (b: TraceBuilder, call: number, rc: number | null = 0) => {
  b.raw({ ev: "modify", call, qp: "qp", state: "ERR", by: "drain" });
  return rc === null ? b : b.raw({ ev: "modify_ret", call, rc });
};
const markerPost = (b: TraceBuilder, queue: "sq" | "rq", rc = 0, call = DRAIN) =>
  b.raw({ ev: "drain_marker", call, qp: "qp", queue, how: "kernel", rc });
const drainRet = (b: TraceBuilder, state?: string, call = DRAIN) =>
  b.raw({ ev: "drain_ret", call, us: 9, ...(state ? { state } : {}) });

const stuck: StuckObservation = {
  ev: "stuck",
  step: 1,
  op: "drain",
  ms: 5003,
  state: "D (disk sleep)",
  stack: "[<0>] __wait_for_common+0x8f/0x1b0\n[<0>] __ib_drain_sq+0x8d/0xd0 [ib_core]",
};
const warning = (text: string, trace: string[]): ConsoleObservation => ({
  ev: "console",
  kind: "warn",
  text,
  trace,
});
const unrelated = warning("WARNING: CPU: 0 PID: 7 at mm/slub.c:1 kfree+0x1/0x2", [
  "kfree+0x1/0x2",
  "x+0x1/0x2",
]);

t.test("judged under linux only; no drain: SKIP", async (t) => {
  const b = pair().drain("qp", "sq").markerDone().drained();
  for (const profile of ["ib", "iwarp-rdmac"] as const) {
    const v = verdictOf(b, "9", profile);
    t.same(
      [v.verdict, v.reason, v.judged, v.applies],
      ["SKIP", "the Linux drain contract is judged under the linux profile", 0, false],
    );
  }
  const none = verdictOf(pair().post("qp", "sq", 1, 1).modify("qp", "ERR").cqe("qp", "sq", 1), "9");
  t.same([none.verdict, none.reason, none.judged, none.applies], ["SKIP", "no ib_drain_* call", 0, true]);
});

t.test("PASS counts the drains", async (t) => {
  const b = pair()
    .post("qp", "sq", 1, 2)
    .drain("qp", "sq")
    .flush("qp", "sq", 1, 2)
    .markerDone()
    .drained()
    .drain("qp", "qp")
    .markerDone()
    .markerDone()
    .drained()
    .post("qp", "sq", 5, 1)
    .cqe("qp", "sq", 5);
  const v = verdictOf(b, "9", "linux", [unrelated]);
  t.same(
    [v.verdict, v.reason, v.judged],
    [
      "PASS",
      "2 drain(s): ERR first, marker accepted and completed after every earlier WR of its queue, returned, QP in ERR",
      2,
    ],
    "WR 5, posted after the drains, is not their business; a warning about something else is the console rule's",
  );
});

t.test(
  "a drain that never returns: FAIL with the stuck task's stack and the marker it waits for",
  async (t) => {
    const b = pair().post("qp", "sq", 1, 1).drain("qp", "sq");
    const drain = b.records.length - 4;
    const pending = b.records.length - 1;
    const withStack = verdictOf(b, "9", "linux", [unrelated, stuck]);
    t.equal(withStack.verdict, "FAIL");
    t.same(withStack.problems, [
      {
        reason:
          "ib_drain_sq on qp did not return within 5003 ms (worker D (disk sleep)): its sq marker never completed",
        evidence: [
          quoted(b, drain),
          quoted(b, pending),
          "stack: [<0>] __wait_for_common+0x8f/0x1b0",
          "stack: [<0>] __ib_drain_sq+0x8d/0xd0 [ib_core]",
        ],
        wrs: [marker("sq", pending)],
      },
    ]);
    t.same(
      verdictOf(b, "9").problems?.[0]?.reason,
      "ib_drain_sq on qp did not return: its sq marker never completed",
    );

    // the SQ's marker completed, the RQ's ERR transition returned, its marker was never posted
    const rq = pair();
    drainStart(rq, "qp");
    errTransition(rq, 51);
    markerPost(rq, "sq").markerCqe(DRAIN, "qp", "sq");
    errTransition(rq, 52);
    t.same(verdictOf(rq, "9").problems, [
      { reason: "ib_drain_qp on qp did not return", evidence: [quoted(rq, 4)] },
    ]);
  },
);

/** An ib_drain_sq that posts its marker, which completes, after an ERR transition returning `rc`
 * (null: no modify_ret in the trace), or after none; the drain returns with the QP in ERR. */
function sqMarkerAfter(rc: number | null | "no transition"): TraceBuilder {
  const b = pair();
  drainStart(b, "sq");
  if (rc !== "no transition") errTransition(b, 51, rc);
  markerPost(b, "sq").markerCqe(DRAIN, "qp", "sq");
  drainRet(b, "ERR");
  return b;
}

t.test("the ERR transition must come, and succeed, before the marker", async (t) => {
  const none = sqMarkerAfter("no transition");
  t.same(verdictOf(none, "9").problems, [
    {
      reason: "ib_drain_sq on qp posted its marker without an ERR transition the trace shows",
      evidence: [quoted(none, 4), quoted(none, 5)],
      wrs: [marker("sq", 5)],
    },
  ]);

  const unanswered = sqMarkerAfter(null);
  t.same(
    verdictOf(unanswered, "9").problems?.map((p) => p.reason),
    ["ib_drain_sq on qp posted its marker without an ERR transition the trace shows"],
    "a modify whose return the trace lacks is not a transition it shows",
  );

  const failed = sqMarkerAfter(-22);
  t.same(verdictOf(failed, "9").problems, [
    {
      reason: "ib_drain_sq on qp posted its marker though moving qp to ERR returned -22",
      evidence: [quoted(failed, 5), quoted(failed, 7)],
      wrs: [marker("sq", 7)],
    },
  ]);
});

t.test("an ERR transition that failed: the drain WARNs and returns, that is the one problem", async (t) => {
  const b = pair().post("qp", "sq", 1, 1).drain("qp", "sq", { modifyRc: -22 });
  const modify = b.records.length - 2;
  b.drained("RTS");
  const v = verdictOf(b, "9");
  t.same(v.problems, [
    {
      reason:
        "ib_drain_sq on qp could not move qp to ERR (ib_modify_qp returned -22): it WARNs and returns without draining",
      evidence: [quoted(b, modify)],
    },
  ]);
});

t.test("a refused marker: the drain cannot wait, that is the one problem", async (t) => {
  const b = pair().post("qp", "sq", 1, 1).drain("qp", "sq", { markerRc: -12 });
  const drain = b.records.length - 4;
  const refused = b.records.length - 1;
  b.drained();
  const v = verdictOf(b, "9");
  t.same(v.problems, [
    {
      reason:
        "the sq drain marker of qp was refused (post returned -12): the drain cannot wait for it (__ib_drain_sq WARNs and returns)",
      evidence: [quoted(b, drain), quoted(b, refused)],
      wrs: [marker("sq", refused)],
    },
  ]);
});

t.test("an earlier WR completed after the marker, or after the return, or not at all", async (t) => {
  const early = pair().post("qp", "sq", 1, 2);
  const post = early.records.length - 2;
  const drain = early.records.length;
  early.drain("qp", "sq");
  const markerPosted = early.records.length - 1;
  early.cqe("qp", "sq", 1).markerDone();
  const done = early.records.length - 1;
  early.drained();
  const ret = early.records.length - 1;
  early.cqe("qp", "sq", 2);
  const v = verdictOf(early, "9");
  t.equal(v.verdict, "FAIL");
  t.equal(v.applies, true);
  t.same(v.problems, [
    {
      reason: "qp sq WR 2 completed after the drain's marker (ib_drain_sq on qp returns before it)",
      evidence: [quoted(early, done), quoted(early, ret + 1)],
      wrs: [sq(2, post), marker("sq", markerPosted)],
      cqes: [done, ret + 1],
    },
    {
      reason: "qp sq WR 2 completed after ib_drain_sq returned",
      evidence: [quoted(early, drain), quoted(early, ret), quoted(early, ret + 1)],
      wrs: [sq(2, post)],
      cqes: [ret + 1],
    },
  ]);

  const missing = pair().post("qp", "sq", 1, 2).drain("qp", "sq").cqe("qp", "sq", 1).markerDone().drained();
  t.same(verdictOf(missing, "9").problems, [
    {
      reason: "qp sq WR 2 had not completed when ib_drain_sq returned",
      evidence: [quoted(missing, 4), quoted(missing, missing.records.length - 1)],
      wrs: [sq(2, 4)],
    },
  ]);
});

t.test("what the drain does not wait for", async (t) => {
  const peer = pair().post("peer", "sq", 1, 1).drain("qp", "sq").markerDone().drained();
  t.equal(verdictOf(peer, "9").verdict, "PASS", "another QP's WRs");
  const unsignaled = pair()
    .post("qp", "sq", 1, 1, { signal: "none" })
    .drain("qp", "sq")
    .markerDone()
    .drained();
  t.equal(verdictOf(unsignaled, "9").verdict, "PASS", "an unsignaled send posted before the error");
  const twice = pair().drain("qp", "sq").markerDone();
  twice.markerCqe(twice.drainCall, "qp", "sq").drained();
  t.equal(verdictOf(twice, "9").verdict, "PASS", "the marker's own repeat is rule 5's");
  t.match(verdictOf(twice, "5").reason, /qp sq the drain's marker completed 2 times/);
});

t.test("an earlier drain's marker is that drain's business", async (t) => {
  const b = pair().drain("qp", "sq").drained().drain("qp", "sq").markerDone().drained();
  const v = verdictOf(b, "9");
  t.same(
    [v.verdict, v.reason],
    [
      "ERROR",
      "the completion of the sq marker of ib_drain_sq on qp was not observed: the drain cannot be judged",
    ],
  );
});

t.test("the QP is in ERR after the drain", async (t) => {
  const b = pair().drain("qp", "sq").markerDone().drained("RTS");
  t.same(verdictOf(b, "9").problems, [
    {
      reason: "qp is in RTS after ib_drain_sq, not ERR",
      evidence: [quoted(b, b.records.length - 1)],
    },
  ]);
});

t.test("what the executor did not observe: ERROR naming it, never PASS", async (t) => {
  const noCompletion = pair().post("qp", "sq", 1, 1).drain("qp", "sq").cqe("qp", "sq", 1).drained();
  const v = verdictOf(noCompletion, "9");
  t.same(
    [v.verdict, v.reason, v.evidence, v.judged, v.applies],
    [
      "ERROR",
      "the completion of the sq marker of ib_drain_sq on qp was not observed: the drain cannot be judged",
      ["the completion of the sq marker of ib_drain_sq on qp was not observed"],
      0,
      true,
    ],
  );

  const noState = verdictOf(pair().drain("qp", "sq").markerDone().drained(null), "9");
  t.same(
    [noState.verdict, noState.reason],
    ["ERROR", "the state of qp after ib_drain_sq on qp was not observed: the drain cannot be judged"],
  );

  const noMarker = pair();
  drainStart(noMarker, "sq");
  errTransition(noMarker, 51);
  drainRet(noMarker, "ERR");
  t.same(
    [verdictOf(noMarker, "9").verdict, verdictOf(noMarker, "9").reason],
    ["ERROR", "the sq marker of ib_drain_sq on qp was not observed: the drain cannot be judged"],
    "an ERR transition that succeeded is no marker",
  );

  const two = pair();
  drainStart(two, "qp");
  drainRet(two);
  t.same(verdictOf(two, "9").evidence, [
    "the sq marker of ib_drain_qp on qp was not observed",
    "the rq marker of ib_drain_qp on qp was not observed",
    "the state of qp after ib_drain_qp on qp was not observed",
  ]);
  t.equal(
    verdictOf(two, "9").reason,
    "the sq marker of ib_drain_qp on qp was not observed (and 2 more): the drain cannot be judged",
  );

  const many = pair();
  for (let i = 0; i < 5; i++) drainRet(drainStart(many, "qp", 60 + i), undefined, 60 + i);
  const m = verdictOf(many, "9");
  t.equal(
    m.reason,
    "the sq marker of ib_drain_qp on qp was not observed (and 14 more): the drain cannot be judged",
  );
  t.equal(m.evidence?.length, 12, "the first twelve");
});

t.test("a kernel warning about a drain, in its text or its call trace, is a FAIL", async (t) => {
  const ok = pair().drain("qp", "sq").markerDone().drained();
  const frames = (fn: string) => ["a+0x1/0x2", fn, ...Array.from({ length: 8 }, (_, i) => `f${i}+0x1/0x2`)];
  const inText = warning("WARNING: ib_drain_sq timed out", frames("b+0x1/0x2"));
  const inTrace = warning(
    "WARNING: CPU: 0 PID: 90 at drivers/infiniband/core/verbs.c:2800",
    frames("__ib_drain_sq+0x1/0x2"),
  );
  for (const w of [inText, inTrace]) {
    const v = verdictOf(ok, "9", "linux", [w]);
    t.same(v.problems, [
      { reason: `the kernel warned during a drain: ${w.text}`, evidence: w.trace.slice(0, 8) },
    ]);
  }
});
