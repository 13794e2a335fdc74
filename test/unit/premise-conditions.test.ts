// Each verbs-trace premise condition (harness/oracle/premise.ts) on hand-built traces, at its
// edges: what counts (the QP it names, the queue, the op, WRs posted before the ERR transition,
// accepted, not the drain's markers) and what does not, and the premise row a result becomes. A
// condition counting the wrong WRs makes a run that missed its situation a PASS (or a good one a
// MISS).
import t from "tap";
import { checkPremise, PREMISE_TITLE, premiseMissReason, premiseRow } from "../../harness/oracle/premise.ts";
import type { TraceRecord } from "../../harness/protocol/trace.ts";
import { type Premise, premiseSchema } from "../../harness/scenario/premise-schema.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { FLUSH, LOC_PROT_ERR, pair, SUCCESS, TraceBuilder } from "../support/oracle-trace.ts";

const premise = (...conditions: unknown[]): Premise => premiseSchema.parse(conditions);

/** The one condition's [held, reason] on the trace. */
function one(condition: unknown, b: TraceBuilder | readonly TraceRecord[], driver?: "erdma" | "siw") {
  const records = "records" in b ? b.records : b;
  const r = checkPremise(premise(condition), { records, faults: false, ...(driver ? { driver } : {}) });
  if (!r || "none" in r) throw new Error("no conditions");
  const c = r.conditions[0];
  return [c?.held, c?.reason];
}

t.test("flushed: WRs of the named QP and queue, posted before ERR, accepted, completed with a flush", (t) => {
  const b = pair()
    .post("qp", "sq", 1, 2, { op: "write" })
    .post("qp", "sq", 3, 1, { op: "send" })
    .post("qp", "sq", 4, 1, { op: "write", rc: -12, bad: 0 })
    .post("peer", "sq", 5, 1, { op: "write" })
    .post("qp", "rq", 6, 1)
    .modify("qp", "ERR")
    .post("qp", "sq", 7, 1, { op: "write" })
    .flush("qp", "sq", 1, 3)
    .cqe("qp", "sq", 4)
    .cqe("qp", "sq", 7)
    .cqe("peer", "sq", 5)
    .cqe("qp", "rq", 6)
    .drain("qp", "sq")
    .markerDone()
    .drained();
  t.same(
    one({ flushed: { queue: "sq" } }, b),
    [true, "3 flushed"],
    "1, 2, 3: not the refused, the peer's or the one posted in ERR",
  );
  t.same(one({ flushed: { queue: "sq", op: "write" } }, b), [true, "2 flushed"]);
  t.same(one({ flushed: { queue: "sq", op: "write", min: 3 } }, b), [false, "2 flushed"]);
  t.same(one({ flushed: { queue: "sq", min: 3 } }, b), [true, "3 flushed"], "min is at least");
  t.same(one({ flushed: { queue: "rq" } }, b), [true, "1 flushed"]);
  t.same(one({ flushed: { on: "peer", queue: "sq" } }, b), [true, "1 flushed"]);
  t.same(one({ flushed: { on: "peer", queue: "rq" } }, b), [false, "0 flushed"]);
  t.same(one({ flushed: { queue: "sq", min: { siw: 4, erdma: 3 } } }, b, "erdma"), [true, "3 flushed"]);
  t.same(one({ flushed: { queue: "sq", min: { siw: 4, erdma: 3 } } }, b, "siw"), [false, "3 flushed"]);
  const ok = pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: SUCCESS }).cqe("qp", "sq", 1);
  t.same(one({ flushed: { queue: "sq" } }, ok), [true, "1 flushed"], "a flush among its completions counts");
  const err = pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: LOC_PROT_ERR });
  t.same(one({ flushed: { queue: "sq" } }, err), [false, "0 flushed"], "an error that is no flush");
  t.end();
});

t.test("posted_in_error: the WRs of post calls made while the QP was in ERR", (t) => {
  const b = pair()
    .post("qp", "sq", 1, 1, { op: "write" })
    .modify("qp", "ERR")
    .post("qp", "sq", 2, 3, { op: "write" })
    .post("qp", "sq", 5, 1, { op: "send" })
    .post("qp", "rq", 6, 2)
    .post("peer", "sq", 8, 1)
    .drain("qp", "sq")
    .markerDone()
    .drained();
  t.same(
    one({ posted_in_error: { queue: "sq" } }, b),
    [true, "4 posted in ERR"],
    "not the marker, not before ERR",
  );
  t.same(one({ posted_in_error: { queue: "sq", op: "write" } }, b), [true, "3 posted in ERR"]);
  t.same(one({ posted_in_error: { queue: "sq", op: "read" } }, b), [false, "0 posted in ERR"]);
  t.same(one({ posted_in_error: { queue: "sq", min: 5 } }, b), [false, "4 posted in ERR"]);
  t.same(one({ posted_in_error: { queue: "sq", min: 4 } }, b), [true, "4 posted in ERR"]);
  t.same(one({ posted_in_error: { queue: "rq" } }, b), [true, "2 posted in ERR"]);
  t.same(one({ posted_in_error: { on: "peer", queue: "sq" } }, b), [false, "0 posted in ERR"]);
  t.end();
});

t.test("outstanding_at_drain: WRs posted and not yet polled when a drain posted its marker", (t) => {
  const b = pair()
    .post("qp", "sq", 1, 3)
    .post("qp", "sq", 4, 1, { rc: -12, bad: 0 })
    .cqe("qp", "sq", 1, { status: SUCCESS })
    .post("peer", "sq", 9, 4)
    .post("qp", "rq", 5, 1)
    .drain("qp", "sq");
  const marker = b.records.length - 1;
  b.flush("qp", "sq", 2, 2).markerDone().drained().post("qp", "sq", 6, 5);
  t.same(one({ outstanding_at_drain: { queue: "sq" } }, b), [
    true,
    "at most 2 outstanding at a drain's marker",
  ]);
  t.same(one({ outstanding_at_drain: { queue: "sq", min: 3 } }, b), [
    false,
    "at most 2 outstanding at a drain's marker",
  ]);
  t.same(one({ outstanding_at_drain: { queue: "sq", min: 2 } }, b)[0], true);
  t.same(
    one({ outstanding_at_drain: { queue: "rq" } }, b),
    [false, "at most 0 outstanding at a drain's marker"],
    "the RQ was not drained",
  );
  t.same(one({ outstanding_at_drain: { on: "peer", queue: "sq" } }, b)[0], false, "the peer was not drained");
  // a completion polled at the marker's own record cannot be: the count is of those before it
  t.ok(marker > 0);
  const second = pair()
    .post("qp", "sq", 1, 1)
    .drain("qp", "sq")
    .markerDone()
    .drained()
    .post("qp", "sq", 2, 3)
    .drain("qp", "sq")
    .markerDone()
    .drained();
  t.same(
    one({ outstanding_at_drain: { queue: "sq" } }, second),
    [true, "at most 4 outstanding at a drain's marker"],
    "the largest over the drains; the first marker is no WR of the queue",
  );
  t.end();
});

t.test("again_in_error: a drain or a modify to ERR (not the drain's own) on a QP already in ERR", (t) => {
  const b = pair().modify("qp", "ERR").modify("qp", "ERR").drain("qp", "sq").markerDone().drained();
  t.same(
    one({ again_in_error: { call: "modify" } }, b),
    [true, "1 of 2 modify call(s) found the QP in ERR"],
    "not the drain's modify",
  );
  t.same(one({ again_in_error: { call: "drain" } }, b), [true, "1 of 1 drain call(s) found the QP in ERR"]);
  t.same(one({ again_in_error: { on: "peer", call: "modify" } }, b), [
    false,
    "0 of 0 modify call(s) found the QP in ERR",
  ]);
  const once = pair().modify("qp", "RTS").modify("qp", "ERR").drain("qp", "sq").markerDone().drained();
  t.same(
    one({ again_in_error: { call: "modify" } }, once),
    [false, "0 of 1 modify call(s) found the QP in ERR"],
    "a modify to RTS is not counted",
  );
  t.same(one({ again_in_error: { call: "drain" } }, once)[0], true);
  const fresh = pair().drain("qp", "sq").markerDone().drained();
  t.same(one({ again_in_error: { call: "drain" } }, fresh), [
    false,
    "0 of 1 drain call(s) found the QP in ERR",
  ]);
  const peer = pair().modify("peer", "ERR").drain("peer", "sq").markerDone().drained();
  t.same(
    one({ again_in_error: { call: "drain" } }, peer),
    [false, "0 of 0 drain call(s) found the QP in ERR"],
    "the peer's drain is not the QP's",
  );
  t.same(one({ again_in_error: { on: "peer", call: "drain" } }, peer)[0], true);
  t.end();
});

t.test("error_without_modify: the QP's own error before any modify to ERR or drain", (t) => {
  const cqe = pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: LOC_PROT_ERR });
  const at = cqe.records.length - 1;
  cqe.modify("qp", "ERR");
  t.same(one({ error_without_modify: {} }, cqe), [true, JSON.stringify(cqe.records[at])]);
  const flushOnly = pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: FLUSH });
  t.same(one({ error_without_modify: {} }, flushOnly), [
    false,
    "no error completion, fatal event or broken connection",
  ]);
  const success = pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: SUCCESS });
  t.same(one({ error_without_modify: {} }, success)[0], false);
  const peerErr = pair().post("peer", "sq", 1, 1).cqe("peer", "sq", 1, { status: LOC_PROT_ERR });
  t.same(one({ error_without_modify: {} }, peerErr)[0], false, "the peer's error is not the QP's");
  t.same(one({ error_without_modify: { on: "peer" } }, peerErr)[0], true);
  for (const code of [1, 2, 3]) {
    const ev = pair().raw({ ev: "async", qp: "qp", event: "QP_FATAL", code });
    t.same(one({ error_without_modify: {} }, ev)[0], true, `async event ${code}`);
  }
  const benign = pair().raw({ ev: "async", qp: "qp", event: "QP_LAST_WQE_REACHED", code: 16 });
  t.same(one({ error_without_modify: {} }, benign)[0], false);
  const otherQp = pair().raw({ ev: "async", qp: "peer", event: "QP_FATAL", code: 1 });
  t.same(one({ error_without_modify: {} }, otherQp)[0], false);
  for (const event of ["DISCONNECTED", "CONNECT_ERROR", "UNREACHABLE", "REJECTED"]) {
    const cm = pair().raw({ ev: "cm", id: "qp", event, code: 1, status: 0 });
    t.same(one({ error_without_modify: {} }, cm)[0], true, event);
  }
  const est = pair().raw({ ev: "cm", id: "qp", event: "TIMEWAIT_EXIT", code: 1, status: 0 });
  t.same(one({ error_without_modify: {} }, est)[0], false, "a connection that ended in order did not break");
  const peerCm = pair().raw({ ev: "cm", id: "peer", event: "DISCONNECTED", code: 1, status: 0 });
  t.same(one({ error_without_modify: {} }, peerCm)[0], false);
  const after = pair().modify("qp", "ERR").raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
  t.same(one({ error_without_modify: {} }, after), [false, "the first error came after a modify to ERR"]);
  const afterDrain = pair().drain("qp", "sq").raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
  t.same(one({ error_without_modify: {} }, afterDrain)[0], false, "or after a drain");
  const otherModify = pair()
    .modify("qp", "RTS")
    .modify("peer", "ERR")
    .drain("peer", "sq")
    .raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
  t.same(
    one({ error_without_modify: {} }, otherModify)[0],
    true,
    "a modify to RTS or the peer's to ERR is no modify of the QP to ERR",
  );
  const first = pair().raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
  t.same(one({ error_without_modify: {} }, first)[0], true, "an error at the first record after the setup");
  t.end();
});

t.test("chain_exceeds_queue: a post call with more WRs than the queue's capacity at create", (t) => {
  const b = pair().post("qp", "sq", 1, 64).post("qp", "rq", 100, 65).post("peer", "sq", 200, 70);
  t.same(one({ chain_exceeds_queue: { queue: "sq" } }, b), [
    false,
    "the longest chain 64 WR(s), the queue holds 64",
  ]);
  t.same(one({ chain_exceeds_queue: { queue: "rq" } }, b), [
    true,
    "the longest chain 65 WR(s), the queue holds 64",
  ]);
  t.same(one({ chain_exceeds_queue: { on: "peer", queue: "sq" } }, b)[0], true);
  const small = pair()
    .raw({
      ev: "create",
      kind: "qp",
      name: "third",
      qp_num: 3,
      scq: "cq",
      rcq: "cq",
      sig_all: false,
      max_send_wr: 4,
      max_recv_wr: 2,
      max_send_sge: 1,
      max_inline_data: 0,
      cmd: 1,
    })
    .post("qp", "sq", 1, 3);
  t.same(
    one({ chain_exceeds_queue: { queue: "sq" } }, small)[0],
    false,
    "the capacity is the named QP's, not another's",
  );
  const noCap = pair().records.map((r) => (r.ev === "create" ? { ...r, max_send_wr: undefined } : r));
  t.same(one({ chain_exceeds_queue: { queue: "sq" } }, noCap as TraceRecord[]), [
    false,
    "the trace has no capacity of the queue",
  ]);
  t.end();
});

t.test(
  "outstanding_across_wrap: the WRs outstanding at ERR span the end of the queue's ring, flushed or not",
  (t) => {
    // pair() creates queues of 64: 60 posted, 56 of them completed, 12 more posted: the 57th to the
    // 72nd are outstanding at ERR, across slot 64 (and 65, for a ring of one slot more)
    const consumed = (b: ReturnType<typeof pair>, n: number) => {
      for (let id = 1; id <= n; id++) b.cqe("qp", "rq", id, { status: SUCCESS });
      return b;
    };
    const across = consumed(pair().post("qp", "rq", 1, 60), 56)
      .post("qp", "rq", 61, 12)
      .modify("qp", "ERR")
      .flush("qp", "rq", 57, 16)
      .drain("qp", "rq")
      .markerDone()
      .drained();
    t.same(one({ outstanding_across_wrap: { queue: "rq" } }, across), [
      true,
      "the WRs outstanding at ERR were numbers 57 to 72 of those posted to the queue, which holds 64",
    ]);
    t.same(one({ outstanding_across_wrap: { queue: "sq" } }, across), [
      false,
      "no WR of the queue outstanding at ERR; it holds 64",
    ]);
    const before = consumed(pair().post("qp", "rq", 1, 40), 30)
      .modify("qp", "ERR")
      .flush("qp", "rq", 31, 10);
    t.same(one({ outstanding_across_wrap: { queue: "rq" } }, before)[0], false, "all within the first turn");
    const edge = consumed(pair().post("qp", "rq", 1, 60), 56)
      .post("qp", "rq", 61, 5)
      .modify("qp", "ERR")
      .flush("qp", "rq", 57, 9);
    t.same(
      one({ outstanding_across_wrap: { queue: "rq" } }, edge)[0],
      false,
      "up to the 65th: a ring of 65 slots has not turned over",
    );
    const after = consumed(pair().post("qp", "rq", 1, 70), 68)
      .post("qp", "rq", 71, 10)
      .modify("qp", "ERR")
      .flush("qp", "rq", 69, 12);
    t.same(
      one({ outstanding_across_wrap: { queue: "rq" } }, after)[0],
      false,
      "all past the end: no span across it",
    );
    const peer = consumed(pair().post("qp", "rq", 1, 60), 56)
      .post("peer", "rq", 100, 80)
      .post("qp", "rq", 61, 12)
      .modify("qp", "ERR")
      .flush("qp", "rq", 57, 16);
    t.same(one({ outstanding_across_wrap: { queue: "rq" } }, peer)[0], true, "the peer's posts do not count");
    const lost = consumed(pair().post("qp", "rq", 1, 60), 56)
      .post("qp", "rq", 61, 12)
      .modify("qp", "ERR")
      .flush("qp", "rq", 57, 8);
    t.same(
      one({ outstanding_across_wrap: { queue: "rq" } }, lost)[0],
      true,
      "the situation happened though the driver flushed only those before the ring's end",
    );
    const never = consumed(pair().post("qp", "rq", 1, 60), 56).post("qp", "rq", 61, 12);
    t.same(one({ outstanding_across_wrap: { queue: "rq" } }, never), [false, "the QP never went to ERR"]);
    t.end();
  },
);

t.test("cq_wrapped and cq_shared_by_qps: the CQ of the QP under test, by its completions polled", (t) => {
  const cq = (name: string, size: Record<string, number>) => ({ ev: "create", kind: "cq", name, ...size });
  const b = pair()
    .raw(cq("cq", { cqe: 4, depth: 99 }))
    .raw(cq("pcq", { depth: 2 }))
    .post("qp", "sq", 1, 9)
    .flush("qp", "sq", 1, 9)
    .post("peer", "sq", 20, 1)
    .cqe("peer", "sq", 20, { cq: "cq", status: SUCCESS });
  t.same(one({ cq_wrapped: { cq: "send", times: 2 } }, b), [
    true,
    "10 completion(s) polled from cq, which holds 4",
  ]);
  t.same(one({ cq_wrapped: { cq: "send", times: 3 } }, b), [
    false,
    "10 completion(s) polled from cq, which holds 4",
  ]);
  t.same(one({ cq_wrapped: { cq: "send", times: 1 } }, b)[0], true);
  t.same(one({ cq_shared_by_qps: { cq: "send" } }, b), [true, "completions of qp, peer on cq"]);
  const alone = pair()
    .raw(cq("cq", { depth: 3 }))
    .post("qp", "sq", 1, 3)
    .flush("qp", "sq", 1, 3);
  t.same(
    one({ cq_wrapped: { cq: "send", times: 1 } }, alone),
    [false, "3 completion(s) polled from cq, which holds 3"],
    "CQ size from depth without cqe",
  );
  t.same(one({ cq_shared_by_qps: { cq: "send" } }, alone), [false, "completions of qp on cq"]);
  t.same(one({ cq_shared_by_qps: { cq: "recv" } }, pair().raw(cq("cq", { depth: 3 }))), [
    false,
    "completions of no QP on cq",
  ]);
  const recv = new TraceBuilder()
    .qp("qp", { qpNum: 1, scq: "scq", rcq: "rcq" })
    .raw(cq("scq", { cqe: 100 }))
    .raw(cq("rcq", { cqe: 1 }))
    .post("qp", "rq", 1, 2)
    .flush("qp", "rq", 1, 2);
  t.same(
    one({ cq_wrapped: { cq: "recv", times: 1 } }, recv),
    [true, "2 completion(s) polled from rcq, which holds 1"],
    "the recv CQ is the QP's rcq",
  );
  t.same(
    one({ cq_wrapped: { cq: "send", times: 1 } }, recv),
    [false, "0 completion(s) polled from scq, which holds 100"],
    "the send CQ is its scq",
  );
  t.same(one({ cq_shared_by_qps: { cq: "recv" } }, recv), [false, "completions of qp on rcq"]);
  const noSize = pair().post("qp", "sq", 1, 1);
  t.same(
    one({ cq_wrapped: { cq: "send", times: 1 } }, noSize),
    [false, "the trace has no size of the CQ"],
    "no create of its CQ",
  );
  const otherCq = pair().raw(cq("pcq", { cqe: 1 }));
  t.same(
    one({ cq_wrapped: { cq: "send", times: 1 } }, otherCq)[0],
    false,
    "another CQ's size is not the QP's",
  );
  t.end();
});

t.test("a premise: none, no conditions, device conditions without a hardware trace, and its row", (t) => {
  const records = pair().records;
  t.same(checkPremise({ none: "its steps make it" }, { records, faults: false }), {
    none: "its steps make it",
  });
  t.equal(
    checkPremise(undefined, { records, faults: false }),
    undefined,
    "no premise, no faults: nothing to check",
  );
  const device = checkPremise(premise({ device_flushed: { queue: "sq" } }), { records, faults: true });
  t.same(
    device,
    {
      held: true,
      conditions: [
        {
          condition: device && "conditions" in device ? device.conditions[0]?.condition : "",
          held: null,
          reason: "no hardware trace here",
        },
      ],
    },
    "not observable without a hardware trace, and no fault condition without one either",
  );
  if (!device || "none" in device) throw new Error("conditions");
  t.same(premiseRow(device), {
    rule: "premise",
    title: PREMISE_TITLE,
    citation: "DESIGN.md, What is judged: a PASS is a claim made in the situation the scenario exists for",
    applies: true,
    verdict: "SKIP",
    reason: `not observable here: ${device.conditions[0]?.condition} (no hardware trace here)`,
    judged: 0,
  });
  t.equal(premiseMissReason(device), undefined);
  t.equal(premiseRow({ none: "x" }), undefined);
  t.equal(premiseMissReason({ none: "x" }), undefined);

  const mixed = checkPremise(
    premise(
      { device_flushed: { queue: "sq" } },
      { flushed: { queue: "sq" } },
      { posted_in_error: { queue: "sq" } },
    ),
    {
      records: pair().post("qp", "sq", 1, 1).flush("qp", "sq", 1, 1).records,
      faults: false,
    },
  );
  if (!mixed || "none" in mixed) throw new Error("conditions");
  t.equal(mixed.held, false, "one condition not held");
  const row = premiseRow(mixed);
  t.equal(row?.verdict, "MISS");
  t.equal(row?.judged, 2, "the conditions observable here");
  t.equal(
    row?.reason,
    `premise not met: ${mixed.conditions[2]?.condition} (0 posted in ERR)`,
    "the first that did not hold",
  );

  const held = checkPremise(premise({ device_flushed: { queue: "sq" } }, { flushed: { queue: "sq" } }), {
    records: pair().post("qp", "sq", 1, 1).flush("qp", "sq", 1, 1).records,
    faults: false,
  });
  if (!held || "none" in held) throw new Error("conditions");
  t.same(premiseRow(held)?.verdict, "PASS");
  t.equal(
    premiseRow(held)?.reason,
    `held: ${held.conditions[1]?.condition} (1 flushed)`,
    "only the conditions checked",
  );
  t.equal(premiseRow(held)?.judged, 1);
  t.equal(premiseMissReason(held), undefined);
  t.end();
});

const qpCreate = (name: string, qpNum: number, sq: number, rq: number, cqs = { scq: "cq", rcq: "cq" }) => ({
  ev: "create",
  kind: "qp",
  name,
  qp_num: qpNum,
  ...cqs,
  sig_all: false,
  max_send_wr: sq,
  max_recv_wr: rq,
  max_send_sge: 1,
  max_inline_data: 0,
  cmd: 1,
});

t.test("chain_exceeds_queue reads the named QP's own capacity of the named queue, from posts only", (t) => {
  const b = new TraceBuilder()
    .raw(qpCreate("qp", 1, 64, 2))
    .raw(qpCreate("peer", 2, 2, 64))
    .post("peer", "sq", 1, 3)
    .post("qp", "rq", 10, 3)
    .post("qp", "sq", 20, 3)
    .cqe("qp", "sq", 20);
  t.same(one({ chain_exceeds_queue: { on: "peer", queue: "sq" } }, b), [
    true,
    "the longest chain 3 WR(s), the queue holds 2",
  ]);
  t.same(one({ chain_exceeds_queue: { queue: "rq" } }, b), [
    true,
    "the longest chain 3 WR(s), the queue holds 2",
  ]);
  t.same(one({ chain_exceeds_queue: { queue: "sq" } }, b), [
    false,
    "the longest chain 3 WR(s), the queue holds 64",
  ]);
  t.end();
});

t.test("error_without_modify: a query that shows ERR is no modify; a drain alone is one", (t) => {
  const queried = pair()
    .raw({ ev: "query", qp: "qp", rc: 0, state: "ERR" })
    .raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
  t.same(one({ error_without_modify: {} }, queried)[0], true);
  const drained = pair()
    .raw({ ev: "drain", call: 50, qp: "qp", which: "sq" })
    .raw({ ev: "async", qp: "qp", event: "QP_FATAL", code: 1 });
  t.same(one({ error_without_modify: {} }, drained), [false, "the first error came after a modify to ERR"]);
  t.end();
});

t.test("cq_shared_by_qps: the QP's send CQ is its scq; another CQ's completions do not count", (t) => {
  const b = new TraceBuilder()
    .raw(qpCreate("qp", 1, 64, 64, { scq: "scq", rcq: "rcq" }))
    .raw(qpCreate("peer", 2, 64, 64, { scq: "scq", rcq: "pcq" }))
    .post("qp", "sq", 1, 1)
    .cqe("qp", "sq", 1, { cq: "scq" })
    .post("peer", "sq", 2, 1)
    .cqe("peer", "sq", 2, { cq: "scq" })
    .post("peer", "rq", 3, 1)
    .cqe("peer", "rq", 3, { cq: "pcq" })
    .post("qp", "rq", 4, 1)
    .cqe("qp", "rq", 4, { cq: "rcq" });
  t.same(one({ cq_shared_by_qps: { cq: "send" } }, b), [true, "completions of qp, peer on scq"]);
  t.same(one({ cq_shared_by_qps: { cq: "recv" } }, b), [false, "completions of qp on rcq"]);
  t.end();
});

t.test("device conditions find the QP by the number its create gave it, whatever records follow", (t) => {
  const records = pair().raw({ ev: "destroy", kind: "qp", name: "qp", why: "teardown", rc: 0 }).records;
  const hw = [
    erdmaTraceEventSchema.parse({
      t: 1,
      dev: "erdma",
      kind: "flush",
      qpn: 1,
      queue: "sq",
      from: 0,
      to: 2,
      count: 2,
      limit: "pi",
    }),
  ];
  const r = checkPremise(premise({ device_flushed: { on: "qp", queue: "sq" } }), {
    records,
    hw,
    faults: false,
  });
  t.same(r && "conditions" in r ? r.conditions.map((c) => [c.held, c.reason]) : [], [
    [true, "2 sq WQE(s) flushed"],
  ]);
  t.end();
});

t.test("a premise row lists every condition it names, separated", (t) => {
  const records = pair().post("qp", "sq", 1, 1).flush("qp", "sq", 1, 1).records;
  const held = checkPremise(
    premise({ flushed: { queue: "sq" } }, { outstanding_at_drain: { queue: "sq" } }),
    {
      records: pair().post("qp", "sq", 1, 1).drain("qp", "sq").flush("qp", "sq", 1, 1).markerDone().drained()
        .records,
      faults: false,
    },
  );
  if (!held || "none" in held) throw new Error("conditions");
  t.equal(
    premiseRow(held)?.reason,
    `held: ${held.conditions[0]?.condition} (1 flushed); ${held.conditions[1]?.condition} (at most 1 outstanding at a drain's marker)`,
  );
  const unseen = checkPremise(
    premise({ device_flushed: { queue: "sq" } }, { device_ceq_batch: { min: 2 } }),
    {
      records,
      faults: false,
    },
  );
  if (!unseen || "none" in unseen) throw new Error("conditions");
  t.equal(
    premiseRow(unseen)?.reason,
    `not observable here: ${unseen.conditions[0]?.condition} (no hardware trace here); ${unseen.conditions[1]?.condition} (no hardware trace here)`,
  );
  t.end();
});

t.test(
  "drained_unconnected: a drain or modify to ERR of a QP never connected, or whose connect was refused",
  (t) => {
    const qpOnly = () => new TraceBuilder().qp("qp", { qpNum: 1, connected: false });
    const resolved = () =>
      qpOnly()
        .raw({ ev: "cm", id: "qp", event: "ADDR_RESOLVED", code: 0, status: 0 })
        .raw({ ev: "cm", id: "qp", event: "ROUTE_RESOLVED", code: 2, status: 0 });
    const never = { drained_unconnected: { how: "never" } };
    const refused = { drained_unconnected: { how: "refused" } };

    t.same(one(never, resolved().drain("qp", "sq")), [
      true,
      "rdma_cm events of the QP: ADDR_RESOLVED, ROUTE_RESOLVED",
    ]);
    t.same(one(never, resolved().modify("qp", "ERR"))[0], true, "a modify to ERR counts as a drain does");
    t.same(one(never, resolved()), [
      false,
      "no drain or modify to ERR of the QP; rdma_cm events of the QP: ADDR_RESOLVED, ROUTE_RESOLVED",
    ]);
    t.same(one(never, pair().drain("qp", "sq"))[0], false, "a connected QP is not the situation");
    t.same(one(refused, resolved().drain("qp", "sq"))[0], false, "never connected is not refused");

    const byCall = resolved()
      .raw({ ev: "refused", qp: "qp", by: "rdma_connect", rc: -111 })
      .drain("qp", "sq");
    t.same(one(refused, byCall), [
      true,
      "rdma_cm events of the QP: ADDR_RESOLVED, ROUTE_RESOLVED; refused by rdma_connect (-111)",
    ]);
    t.same(one(never, byCall)[0], false, "a refused connect was attempted");
    const byEvent = resolved()
      .raw({ ev: "cm", id: "qp", event: "REJECTED", code: 8, status: -104 })
      .raw({ ev: "refused", qp: "qp", by: "REJECTED", rc: -104 })
      .drain("qp", "sq");
    t.same(one(refused, byEvent)[0], true);
    const rejectedOnly = resolved()
      .raw({ ev: "cm", id: "qp", event: "REJECTED", code: 8, status: -104 })
      .drain("qp", "sq");
    t.same(
      one(refused, rejectedOnly)[0],
      false,
      "the executor's refused record is what says the command saw it",
    );
    const peersRefusal = pair()
      .raw({ ev: "refused", qp: "peer", by: "rdma_connect", rc: -111 })
      .drain("qp", "sq");
    t.same(one(refused, peersRefusal)[0], false, "another QP's refusal");
    t.end();
  },
);
