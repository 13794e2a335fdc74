// The oracle's view of a trace (harness/oracle/model.ts) that every rule reads: the QP states the
// trace shows (and only those), the WRs with the state each was posted in and its completions, the
// drains with their ERR transitions and markers, and which WRs owe a completion. A wrong state or a
// WR owing the wrong completion is a wrong verdict in rules 1-9.
import t from "tap";
import { drainCovers, isError, isFlush, TraceModel } from "../../harness/oracle/model.ts";
import { FLUSH, LOC_PROT_ERR, pair, SUCCESS, TraceBuilder } from "../support/oracle-trace.ts";

/** One QP (not connected through the CM: it starts in RESET) on cq. */
function plain(): TraceBuilder {
  return new TraceBuilder().raw({
    ev: "create",
    kind: "qp",
    name: "qp",
    qp_num: 1,
    scq: "cq",
    rcq: "rcq",
    sig_all: false,
    max_send_wr: 64,
    max_recv_wr: 64,
    max_send_sge: 1,
    max_inline_data: 0,
    cmd: 1,
  });
}
const last = (b: TraceBuilder) => b.records.length - 1;

t.test(
  "QP states: created, connected, modified, queried, failed, destroyed, as the trace shows them",
  (t) => {
    const b = plain();
    const created = last(b);
    b.modify("qp", "INIT");
    const init = last(b);
    b.modify("qp", "RTR", 22);
    b.raw({ ev: "query", qp: "qp", rc: 0, state: "RTS" });
    const queried = last(b);
    b.raw({ ev: "query", qp: "qp", rc: 0, state: "UNSET" });
    b.raw({ ev: "query", qp: "qp", rc: -5, state: "SQD" });
    b.raw({ ev: "query", qp: "qp", rc: 0 });
    const afterQueries = b.records.length;
    b.raw({ ev: "async", qp: "qp", event: "QP_LAST_WQE_REACHED", code: 16 });
    const noErrEvent = b.records.length;
    b.raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
    const fatal = last(b);
    b.raw({ ev: "destroy", kind: "qp", name: "qp", why: "teardown", rc: 0 });
    const teardown = b.records.length;
    b.raw({ ev: "destroy", kind: "cq", name: "cq", why: "command", rc: 0 });
    b.raw({ ev: "destroy", kind: "qp", name: "qp", why: "command", rc: 0 });
    const destroyed = last(b);
    const m = new TraceModel(b.records);

    t.equal(m.stateAt("qp", created), "UNKNOWN", "nothing before its creation");
    t.equal(m.stateAt("qp", created + 1), "RESET", "a QP not made through the CM starts in RESET");
    t.equal(m.stateAt("qp", init), "RESET", "a modify counts from its return on");
    t.equal(m.stateAt("qp", init + 1), "INIT");
    t.equal(m.stateAt("qp", queried), "INIT", "a modify that failed changes nothing");
    t.equal(m.stateAt("qp", queried + 1), "RTS", "a query that answered");
    t.equal(m.stateAt("qp", afterQueries), "RTS", "a query that failed, said UNSET or nothing tells nothing");
    t.equal(m.stateAt("qp", noErrEvent), "RTS", "an async event that is no QP error");
    t.equal(m.stateAt("qp", fatal + 1), "ERR", "IB_EVENT_QP_FATAL puts it in ERR");
    t.equal(m.stateAt("qp", teardown), "ERR", "the teardown's destroy is not a step's");
    t.equal(m.stateAt("qp", destroyed), "ERR", "a CQ's destroy is not the QP's");
    t.equal(m.finalState("qp"), "DESTROYED", "a destroy step takes it down");
    t.equal(m.finalState("nobody"), "UNKNOWN");
    t.same(m.intervalsIn("qp", "ERR"), [[fatal, destroyed]]);
    t.same(m.intervalsIn("qp", "DESTROYED"), [[destroyed, b.records.length]]);
    t.same(m.intervalsIn("qp", "SQD"), []);
    t.same(m.intervalsIn("nobody", "ERR"), []);
    t.end();
  },
);

t.test("the other async errors, and a state kept over repeated transitions", (t) => {
  for (const code of [2, 3]) {
    const b = plain().raw({ ev: "async", qp: "qp", event: "QP_ERR", code });
    t.equal(new TraceModel(b.records).finalState("qp"), "ERR", `event code ${code}`);
  }
  const b = plain().modify("qp", "ERR");
  const first = last(b);
  b.modify("qp", "ERR");
  b.modify("qp", "RESET");
  const reset = last(b);
  b.modify("qp", "ERR");
  const again = last(b);
  const m = new TraceModel(b.records);
  t.same(m.intervalsIn("qp", "ERR"), [
    [first, reset],
    [first + 2, reset],
    [again, b.records.length],
  ]);
  t.end();
});

t.test("the CM moves a connected QP to RTS, and out of it when the connection goes", (t) => {
  for (const event of ["DISCONNECTED", "TIMEWAIT_EXIT", "CONNECT_ERROR", "UNREACHABLE", "REJECTED"]) {
    const b = pair();
    const m0 = new TraceModel(b.records);
    t.equal(m0.stateAt("qp", 1), "UNKNOWN", "a CM QP's state is unknown until the CM says");
    t.equal(m0.finalState("qp"), "RTS");
    b.raw({ ev: "cm", id: "qp", event, code: 1, status: 0 });
    t.equal(new TraceModel(b.records).finalState("qp"), "UNKNOWN", `${event}: the QP's state is unknown`);
    b.modify("qp", "ERR");
    b.raw({ ev: "cm", id: "qp", event, code: 1, status: 0 });
    t.equal(new TraceModel(b.records).finalState("qp"), "ERR", `${event} leaves a QP in ERR there`);
  }
  const b = pair().raw({ ev: "cm", id: "qp", event: "ADDR_RESOLVED", code: 0, status: 0 });
  t.equal(new TraceModel(b.records).finalState("qp"), "RTS", "another CM event changes nothing");
  const c = pair().raw({ ev: "cm", id: "listener", event: "ESTABLISHED", code: 9, status: 0 });
  t.equal(new TraceModel(c.records).finalState("listener"), "UNKNOWN", "a CM id that is no QP of the trace");
  t.end();
});

t.test("a completion in error other than a flush puts the QP in ERR; a flush or a success does not", (t) => {
  const b = plain().modify("qp", "RTS").post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: SUCCESS });
  t.equal(new TraceModel(b.records).finalState("qp"), "RTS");
  b.post("qp", "sq", 2, 1).cqe("qp", "sq", 2, { status: FLUSH });
  t.equal(new TraceModel(b.records).finalState("qp"), "RTS", "a flush alone says nothing");
  b.post("qp", "sq", 3, 1).cqe("qp", "sq", 3, { status: LOC_PROT_ERR });
  t.equal(new TraceModel(b.records).finalState("qp"), "ERR");
  t.end();
});

t.test("a drain: its state after, from drain_ret (not UNSET, not absent)", (t) => {
  const b = pair().drain("qp", "sq").markerDone().drained("ERR");
  const m = new TraceModel(b.records);
  t.equal(m.finalState("qp"), "ERR");
  t.equal(m.drains[0]?.stateAfter, "ERR");
  const u = pair().drain("qp", "sq", { modifyRc: 22 }).drained("UNSET");
  const mu = new TraceModel(u.records);
  t.equal(mu.finalState("qp"), "RTS", "a failed drain that says UNSET leaves the state known before");
  t.equal(mu.drains[0]?.stateAfter, "UNSET");
  const n = pair().drain("qp", "sq", { modifyRc: 22 }).drained(null);
  const mn = new TraceModel(n.records);
  t.equal(mn.finalState("qp"), "RTS");
  t.notOk("stateAfter" in (mn.drains[0] ?? {}), "no state reported: none claimed");
  const other = pair().drain("qp", "sq", { modifyRc: 22 }).drained("SQD");
  t.equal(new TraceModel(other.records).finalState("qp"), "SQD");
  t.equal(new TraceModel(other.records).finalState("peer"), "RTS", "the drained QP's, not another's");
  t.end();
});

t.test("WRs: posting order per queue, the state each was posted in, markers, completions", (t) => {
  const b = pair()
    .post("qp", "sq", 10, 2)
    .post("qp", "rq", 20, 1)
    .post("peer", "sq", 30, 1)
    .post("qp", "sq", 12, 1, { signal: "none" })
    .drain("qp", "qp")
    .markerDone()
    .markerDone()
    .drained()
    .post("qp", "sq", 13, 1)
    .cqe("qp", "sq", 10, { status: SUCCESS })
    .cqe("qp", "sq", 13);
  const m = new TraceModel(b.records);
  const sq = m.queueWrs("qp", "sq");
  t.same(
    sq.map((w) => [w.wrId, w.seq, w.postedIn, w.signaled, Boolean(w.marker)]),
    [
      [10, 0, "RTS", true, false],
      [11, 1, "RTS", true, false],
      [12, 2, "RTS", false, false],
      [-1, 3, "ERR", true, true],
      [13, 4, "ERR", true, false],
    ],
  );
  t.same(
    m.queueWrs("qp", "rq").map((w) => [w.wrId, w.op, w.signaled, Boolean(w.marker)]),
    [
      [20, "recv", true, false],
      [-1, "recv", true, true],
    ],
  );
  const sqMarker = sq[3];
  t.equal(sqMarker?.op, "write", "the SQ marker is a write");
  t.equal(sqMarker?.invalid, false);
  t.equal(sqMarker?.accepted, true);
  t.same(
    m.queueWrs("peer", "sq").map((w) => w.wrId),
    [30],
  );
  t.same(m.queueWrs("peer", "rq"), []);
  t.same(
    sq[0]?.completions.map((c) => c.rec.status),
    [SUCCESS],
  );
  t.same(
    sq[4]?.completions.map((c) => c.rec.status),
    [FLUSH],
  );
  t.same(sq[1]?.completions, []);
  t.equal(sqMarker?.completions.length, 1, "the marker's completion is found by its drain call");
  const drain = m.drains[0];
  t.same(
    drain?.queues.map((q) => [q.queue, q.modify?.rc, q.marker?.wrId]),
    [
      ["sq", 0, -1],
      ["rq", 0, -1],
    ],
  );
  t.equal(drain?.queues[0]?.marker, sqMarker);
  t.equal(m.calls.filter((c) => c.marker).length, 2, "a post call per marker");
  t.equal(m.calls.find((c) => !c.marker && c.qp === "qp" && c.queue === "sq")?.bad, null);
  t.end();
});

t.test("a drain's queue whose ERR transition failed ends there; the next modify is the next queue's", (t) => {
  const b = pair().drain("qp", "qp", { modifyRc: 22 });
  b.modify("peer", "ERR");
  const modify = b.records.length;
  b.raw({ ev: "modify", call: 50, qp: "qp", state: "ERR", by: "drain" })
    .raw({ ev: "modify_ret", call: 50, rc: 0 })
    .raw({ ev: "drain_marker", call: b.drainCall, qp: "qp", queue: "rq", how: "kernel", rc: 0 })
    .drained();
  const m = new TraceModel(b.records);
  const [sq, rq] = m.drains[0]?.queues ?? [];
  t.equal(sq?.modify?.rc, 22);
  t.equal(sq?.marker, undefined);
  t.same(rq?.modify, { at: modify, retAt: modify + 1, rc: 0 }, "the second modify is the RQ's");
  t.equal(rq?.marker?.queue, "rq");
  t.end();
});

t.test("a drain that never returned, and one whose modify never returned", (t) => {
  const b = pair().post("qp", "sq", 1, 1).drain("qp", "sq");
  const m = new TraceModel(b.records);
  t.equal(m.drains[0]?.retAt, undefined);
  t.equal(m.drains[0]?.queues[0]?.marker?.marker, true);
  const noRet = new TraceBuilder()
    .qp("qp", { qpNum: 1 })
    .raw({ ev: "drain", call: 7, qp: "qp", which: "sq" })
    .raw({ ev: "modify", call: 8, qp: "qp", state: "ERR", by: "drain" });
  const mn = new TraceModel(noRet.records);
  t.same(mn.drains[0]?.queues[0]?.modify, { at: 3, retAt: undefined, rc: undefined });
  t.end();
});

t.test("owed completions: receives and signaled sends; unsignaled sends only when posted in error", (t) => {
  const b = pair()
    .post("qp", "sq", 1, 1, { signal: "none" })
    .post("qp", "sq", 2, 1, { signal: "none" })
    .post("qp", "sq", 3, 1)
    .post("qp", "rq", 4, 1)
    .post("qp", "sq", 5, 1, { signal: "none", rc: -22 })
    .cqe("qp", "sq", 3, { status: SUCCESS })
    .post("qp", "sq", 6, 1, { signal: "none" })
    .post("peer", "sq", 7, 1)
    .cqe("peer", "sq", 7, { status: SUCCESS })
    .modify("qp", "ERR")
    .post("qp", "sq", 8, 1, { signal: "none" })
    .modify("qp", "SQE")
    .post("qp", "sq", 9, 1, { signal: "none" });
  const m = new TraceModel(b.records);
  const wr = (id: number) => m.wrs.find((w) => w.wrId === id && !w.marker);
  const owes = (id: number) => {
    const w = wr(id);
    return w ? m.owesCompletion(w) : "no WR";
  };
  t.equal(m.completedSilently(wr(1) as never), true, "an unsignaled send a later success covers");
  t.equal(owes(1), false);
  t.equal(owes(2), false);
  t.equal(owes(3), true, "a signaled send");
  t.equal(m.completedSilently(wr(3) as never), false, "a signaled send never completes silently");
  t.equal(owes(4), true, "a receive");
  t.equal(m.completedSilently(wr(4) as never), false, "a receive never completes silently");
  t.equal(owes(5), false, "a WR the driver refused owes nothing");
  t.equal(owes(6), false, "an unsignaled send posted before the error may have executed silently");
  t.equal(m.completedSilently(wr(6) as never), false, "the peer's success covers none of qp's WRs");
  t.equal(owes(8), true, "an unsignaled send posted in ERR must be flushed");
  t.equal(owes(9), true, "and one posted in SQE");
  t.equal(m.deadline(wr(8) as never), undefined, "the QP ends in SQE: no deadline");
  b.modify("qp", "ERR");
  const e = new TraceModel(b.records);
  const w8 = e.wrs.find((w) => w.wrId === 8);
  t.equal(w8 ? e.deadline(w8) : -1, b.records.length, "in ERR at the end: the end of the trace");
  const w1 = e.wrs.find((w) => w.wrId === 1);
  t.equal(w1 ? e.deadline(w1) : -1, undefined, "a WR owing nothing has no deadline");
  t.end();
});

t.test("a success only covers the unsignaled sends posted before it on the same QP's SQ", (t) => {
  const b = pair()
    .post("qp", "sq", 1, 1)
    .post("qp", "sq", 2, 1, { signal: "none" })
    .cqe("qp", "sq", 1, { status: SUCCESS })
    .post("qp", "rq", 3, 1)
    .cqe("qp", "rq", 3, { status: SUCCESS })
    .post("qp", "sq", 4, 1)
    .cqe("qp", "sq", 4, { status: FLUSH });
  const m = new TraceModel(b.records);
  const w2 = m.wrs.find((w) => w.wrId === 2);
  t.equal(
    w2 ? m.completedSilently(w2) : true,
    false,
    "an earlier success, a receive's, a later flush: none covers it",
  );
  t.end();
});

t.test("completion helpers", (t) => {
  const b = plain().post("qp", "sq", 1, 3).cqe("qp", "sq", 1, { status: SUCCESS });
  b.cqe("qp", "sq", 2, { status: FLUSH }).cqe("qp", "sq", 3, { status: LOC_PROT_ERR });
  const [ok, flush, err] = new TraceModel(b.records).completions.map((c) => c.rec);
  if (!ok || !flush || !err) throw new Error("three completions");
  t.same([isError(ok), isError(flush), isError(err)], [false, true, true]);
  t.same([isFlush(ok), isFlush(flush), isFlush(err)], [false, true, false]);
  const d = { which: "sq" } as never;
  t.same([drainCovers(d, "sq"), drainCovers(d, "rq")], [true, false]);
  t.same(
    [drainCovers({ which: "qp" } as never, "rq"), drainCovers({ which: "rq" } as never, "rq")],
    [true, true],
  );
  t.end();
});

t.test("the model's QPs are the QPs: a CQ's create or destroy is no QP's state", (t) => {
  const b = pair()
    .raw({ ev: "create", kind: "cq", name: "cq", depth: 4 })
    .raw({ ev: "destroy", kind: "cq", name: "pcq", why: "command", rc: 0 });
  const m = new TraceModel(b.records);
  t.same([...m.qps.keys()], ["qp", "peer"]);
  t.equal(m.finalState("cq"), "UNKNOWN");
  t.equal(m.finalState("pcq"), "UNKNOWN");
  t.end();
});

t.test("an SQ marker the executor reports unsignaled is unsignaled", (t) => {
  const b = pair().raw({ ev: "drain", call: 9, qp: "qp", which: "sq" });
  b.raw({ ev: "drain_marker", call: 9, qp: "qp", queue: "sq", how: "kernel", rc: 0, signaled: false });
  t.equal(new TraceModel(b.records).queueWrs("qp", "sq")[0]?.signaled, false);
  t.end();
});

t.test(
  "within a drain: another QP's modify is not its transition; a second modify before the marker replaces the first",
  (t) => {
    const b = pair().drain("qp", "qp");
    b.markerDone();
    const rqModify = b.records.length - 3;
    b.modify("peer", "ERR").drained();
    const rq = new TraceModel(b.records).drains[0]?.queues[1];
    t.equal(rq?.modify?.at, rqModify, "the peer's modify after the RQ's own is not the RQ's");
    const again = pair().raw({ ev: "drain", call: 9, qp: "qp", which: "qp" });
    again
      .raw({ ev: "modify", call: 10, qp: "qp", state: "ERR", by: "drain" })
      .raw({ ev: "modify_ret", call: 10, rc: 0 });
    const second = again.records.length;
    again
      .raw({ ev: "modify", call: 11, qp: "qp", state: "ERR", by: "drain" })
      .raw({ ev: "modify_ret", call: 11, rc: 0 });
    const [sq, rq2] = new TraceModel(again.records).drains[0]?.queues ?? [];
    t.equal(sq?.modify?.at, second, "the SQ's, replaced");
    t.equal(rq2?.modify, undefined, "the RQ's transition has not come");
    const extra = pair()
      .drain("qp", "sq", { modifyRc: 22 })
      .modify("qp", "ERR")
      .modify("qp", "ERR")
      .drained();
    t.equal(
      new TraceModel(extra.records).drains[0]?.queues.length,
      1,
      "modifies past the drain's last queue are no queue's",
    );
    t.end();
  },
);

t.test(
  "a later success covers an unsignaled send of the same SQ only, and never itself or a signaled one",
  (t) => {
    const b = pair()
      .post("peer", "sq", 100, 3)
      .post("qp", "sq", 1, 1)
      .post("qp", "sq", 2, 1, { signal: "none" })
      .post("qp", "rq", 3, 3)
      .cqe("qp", "rq", 5, { status: SUCCESS })
      .cqe("peer", "sq", 102, { status: SUCCESS })
      .cqe("qp", "sq", 2, { status: SUCCESS })
      .post("qp", "sq", 4, 1)
      .cqe("qp", "sq", 4, { status: SUCCESS });
    const m = new TraceModel(b.records);
    const wr = (qp: string, id: number) => m.wrs.find((w) => w.qp === qp && w.wrId === id);
    t.equal(m.completedSilently(wr("qp", 1) as never), false, "a signaled send is never silent");
    t.equal(m.owesCompletion(wr("qp", 1) as never), true);
    const c = pair()
      .post("peer", "sq", 100, 3)
      .post("qp", "sq", 1, 1, { signal: "none" })
      .post("qp", "rq", 3, 3);
    c.cqe("qp", "rq", 5, { status: SUCCESS })
      .cqe("peer", "sq", 102, { status: SUCCESS })
      .cqe("qp", "sq", 1, { status: SUCCESS });
    const n = new TraceModel(c.records);
    const w1 = n.wrs.find((w) => w.qp === "qp" && w.wrId === 1);
    t.equal(
      w1 ? n.completedSilently(w1) : true,
      false,
      "not by the peer's later WR, not by a receive, not by its own success",
    );
    t.end();
  },
);
