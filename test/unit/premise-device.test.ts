// The premise conditions read on the device's hardware trace (harness/oracle/premise-device.ts), on
// hand-made device events at their edges: the QP the condition names (by the QP number the
// executor's trace gives it), the queue, the time window (after the ERROR transition, before the
// first flush's end), and the server's own lines, which are no device events. And the implicit
// condition that every fault a scenario arms fires.
import t from "tap";
import { TraceModel } from "../../harness/oracle/model.ts";
import { checkDeviceCondition, faultsFired } from "../../harness/oracle/premise-device.ts";
import type { HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import { type PremiseCondition, premiseSchema } from "../../harness/scenario/premise-schema.ts";
import { serverTraceLineSchema } from "../../qemu/device-server/trace-line.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";
import { TraceBuilder } from "../support/oracle-trace.ts";

const QPNS = new Map([
  ["qp", 1],
  ["peer", 2],
]);

function condition(c: unknown): PremiseCondition {
  const [parsed] = premiseSchema.parse([c]) as PremiseCondition[];
  if (!parsed) throw new Error("no condition");
  return parsed;
}

/** Device events at t = 1, 2, ... in order, each checked against the hardware trace's schema. */
function hw(...events: Record<string, unknown>[]): HwTraceEvent[] {
  return events.map((e, i) =>
    "src" in e
      ? serverTraceLineSchema.parse({ t: i + 1, dev: "erdma", ...e })
      : erdmaTraceEventSchema.parse({ t: i + 1, dev: "erdma", ...e }),
  );
}
const flush = (qpn: number, queue: "sq" | "rq", count: number, more: Record<string, unknown> = {}) => ({
  kind: "flush",
  qpn,
  queue,
  from: 0,
  to: count,
  count,
  limit: "pi",
  ...more,
});
const state = (id: number, from: string, to: string) => ({ kind: "state", object: "qp", id, from, to });
const doorbell = (db: string, id: number) => ({ kind: "doorbell", db, value: "0x1", id });
const check = (c: unknown, events: HwTraceEvent[], qpns: ReadonlyMap<string, number> = QPNS) =>
  checkDeviceCondition(condition(c), events, qpns);

t.test("device_flushed: WQEs flushed on the queue, of the named QP or of any", (t) => {
  const events = hw(flush(1, "sq", 3), flush(2, "sq", 4), flush(1, "rq", 5), {
    src: "vfio-user",
    kind: "connect",
  });
  t.same(check({ device_flushed: { on: "qp", queue: "sq" } }, events), [true, "3 sq WQE(s) flushed"]);
  t.same(check({ device_flushed: { on: "peer", queue: "sq", min: 4 } }, events), [
    true,
    "4 sq WQE(s) flushed",
  ]);
  t.same(check({ device_flushed: { on: "peer", queue: "sq", min: 5 } }, events), [
    false,
    "4 sq WQE(s) flushed",
  ]);
  t.same(
    check({ device_flushed: { queue: "sq" } }, events),
    [true, "7 sq WQE(s) flushed"],
    "no QP named: any",
  );
  t.same(check({ device_flushed: { queue: "rq", min: 5 } }, events), [true, "5 rq WQE(s) flushed"]);
  t.same(check({ device_flushed: { on: "peer", queue: "rq" } }, events), [false, "0 rq WQE(s) flushed"]);
  t.same(check({ device_flushed: { on: "qp", queue: "sq" } }, events, new Map()), [
    false,
    "the executor's trace names no QP number of the qp",
  ]);
  t.same(check({ device_flushed: { on: "peer", queue: "sq" } }, events, new Map([["qp", 1]])), [
    false,
    "the executor's trace names no QP number of the peer",
  ]);
  t.same(check({ device_flushed: { queue: "sq" } }, events, new Map())[0], true, "any QP needs no number");
  t.end();
});

t.test("device_flushed_blocks: flushed WQEs of the QP's queue taking at least so many blocks", (t) => {
  const events = hw(
    flush(1, "sq", 3, { blocks: [1, 2, 4] }),
    flush(1, "sq", 1, { blocks: [3] }),
    flush(2, "sq", 2, { blocks: [5, 6] }),
    flush(1, "rq", 2, { wqes: [0, 1] }),
  );
  t.same(check({ device_flushed_blocks: { queue: "sq", blocks: 3 } }, events), [
    true,
    "4 WQE(s) flushed, 2 of 3+ blocks (largest 4)",
  ]);
  t.same(check({ device_flushed_blocks: { queue: "sq", blocks: 3, min: 3 } }, events)[0], false);
  t.same(
    check({ device_flushed_blocks: { queue: "sq", blocks: 4, min: 1 } }, events)[0],
    true,
    "at least, not more than",
  );
  t.same(check({ device_flushed_blocks: { on: "peer", queue: "sq", blocks: 6 } }, events), [
    true,
    "2 WQE(s) flushed, 1 of 6+ blocks (largest 6)",
  ]);
  t.same(
    check({ device_flushed_blocks: { queue: "rq", blocks: 2 } }, events),
    [false, "2 WQE(s) flushed, 0 of 2+ blocks (largest 1)"],
    "a receive WQE is one block",
  );
  t.same(
    check({ device_flushed_blocks: { queue: "rq", blocks: 2 } }, hw(flush(1, "rq", 2))),
    [false, "0 WQE(s) flushed, 0 of 2+ blocks (largest 0)"],
    "a flush listing no WQEs",
  );
  t.same(check({ device_flushed_blocks: { queue: "sq", blocks: 2 } }, events, new Map())[0], false);
  t.end();
});

t.test("device_destroyed_unflushed: DESTROY_QP of the QP with entries pending", (t) => {
  const destroy = (qpn: number, pending?: Record<string, number>) =>
    cmdEventBody("DESTROY_QP", 0, { detail: { qpn, ...(pending ? { pending } : {}) } });
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(2, { sq: 3 }), destroy(1, { sq: 2, rq: 1 }))), [
    true,
    "at DESTROY_QP of QP 1: 2 sq and 1 rq entries pending",
  ]);
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(1, { rq: 1 }))), [
    true,
    "at DESTROY_QP of QP 1: 0 sq and 1 rq entries pending",
  ]);
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(1, { sq: 4 })))[0], true);
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(1, {}))), [
    false,
    "at DESTROY_QP of QP 1: 0 sq and 0 rq entries pending",
  ]);
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(1))), [
    false,
    "the DESTROY_QP event does not say what was pending",
  ]);
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(2, { sq: 1 }))), [
    false,
    "QP 1 was not destroyed",
  ]);
  t.same(check({ device_destroyed_unflushed: {} }, hw({ ...destroy(1, { sq: 1 }), name: "CREATE_QP" })), [
    false,
    "QP 1 was not destroyed",
  ]);
  t.same(
    check(
      { device_destroyed_unflushed: {} },
      hw({ kind: "warn", message: "DESTROY_QP", detail: { qpn: 1 } }),
    ),
    [false, "QP 1 was not destroyed"],
    "only a command",
  );
  t.same(check({ device_destroyed_unflushed: {} }, hw(destroy(1, { sq: 1 })), new Map())[0], false);
  t.end();
});

t.test(
  "device_destroyed_with_unpolled_cqes: CQEs of the QP before its DESTROY_QP, unpolled at its destroy step, its CQ polled after",
  (t) => {
    const cqe = (qpn: number, cq: number | "cmdq" = 1) => ({
      kind: "cqe",
      cq,
      index: 0,
      owner: 1,
      qpn,
      syndrome: 0,
      opcode: 0,
    });
    const destroy = (qpn: number) => cmdEventBody("DESTROY_QP", 0, { detail: { qpn, pending: {} } });
    /** the peer on the QP's CQ `cq`, a receive of it posted; then `then` */
    const trace = (then: (b: TraceBuilder) => TraceBuilder) =>
      new TraceModel(
        then(new TraceBuilder().qp("qp", { qpNum: 1 }).qp("peer", { qpNum: 2 }).post("peer", "rq", 4000, 1))
          .records,
      );
    const destroyed = (b: TraceBuilder, why = "command") =>
      b.raw({ ev: "destroy", kind: "qp", name: "peer", why, rc: 0 });
    const poll = (b: TraceBuilder, cq = "cq") => b.raw({ ev: "poll", cq, got: 0, min: 0, total: 0 });
    const c = { device_destroyed_with_unpolled_cqes: { on: "peer" } };
    const model = trace((b) => poll(destroyed(b)));
    const checkWith = (events: HwTraceEvent[], m?: TraceModel) =>
      checkDeviceCondition(condition(c), events, QPNS, m);

    t.same(checkWith(hw(cqe(2), destroy(2)), model), [
      true,
      "1 CQE(s) of QP 2 written before its DESTROY_QP, 0 of its completions polled before the destroy step; cq polled after it",
    ]);
    // another QP's CQEs, the command queue's, and the peer's after the destroy are not in the CQ at it
    t.same(checkWith(hw(cqe(1), cqe(2, "cmdq"), destroy(2), cqe(2)), model)[0], false);
    t.same(checkWith(hw(cqe(2), destroy(1)), model), [false, "QP 2 was not destroyed"]);
    // polled before the destroy step
    const polledFirst = trace((b) => poll(destroyed(b.cqe("peer", "rq", 4000, { status: 0 }))));
    t.match(checkWith(hw(cqe(2), destroy(2)), polledFirst), [
      false,
      /^1 CQE\(s\) .*, 1 of its completions polled before/,
    ]);
    // a completion polled after the destroy shows the CQ polled too, with no poll record
    t.same(
      checkWith(
        hw(cqe(2), cqe(2), destroy(2)),
        trace((b) => destroyed(b).cqe("peer", "rq", 4000, { status: 0 })),
      )[0],
      true,
    );
    // only a CQ of the QP counts as polled after; the teardown's destroy is no destroy step
    t.match(
      checkWith(
        hw(cqe(2), destroy(2)),
        trace((b) => poll(destroyed(b), "pcq")),
      ),
      [false, /cq not polled after it$/],
    );
    t.same(
      checkWith(
        hw(cqe(2), destroy(2)),
        trace((b) => poll(destroyed(b, "reset"))),
      ),
      [false, "no destroy step of peer in the executor's trace"],
    );
    t.same(checkWith(hw(cqe(2), destroy(2))), [false, "no executor's trace to tell what was polled"]);
    t.end();
  },
);

t.test("device_posted_while_flushing: doorbells of the queue between ERROR and the first flush", (t) => {
  const c = { device_posted_while_flushing: { queue: "sq" } };
  t.same(
    check(
      c,
      hw(
        doorbell("sq", 1),
        state(1, "RTS", "ERROR (LLP closed)"),
        doorbell("sq", 1),
        doorbell("sq", 1),
        flush(1, "sq", 3),
        doorbell("sq", 1),
      ),
    ),
    [true, "2 sq doorbell(s) between the ERROR transition and the end of the first flush (3 WQEs)"],
  );
  t.same(
    check(
      c,
      hw(
        state(1, "RTS", "ERROR"),
        doorbell("rq", 1),
        doorbell("sq", 2),
        doorbell("cq", 1),
        flush(1, "sq", 2),
      ),
    ),
    [false, "0 sq doorbell(s) between the ERROR transition and the end of the first flush (2 WQEs)"],
    "another queue's, another QP's, a CQ's doorbell",
  );
  t.same(check(c, hw(doorbell("sq", 1), flush(1, "sq", 2))), [false, "QP 1 never entered ERROR"]);
  t.same(
    check(c, hw(state(2, "RTS", "ERROR"), state(1, "RTS", "ERRORED"), doorbell("sq", 1), flush(1, "sq", 1))),
    [false, "QP 1 never entered ERROR"],
    "another QP's ERROR; a state that only starts like it",
  );
  t.same(
    check(
      c,
      hw(
        { kind: "state", object: "cq", id: 1, from: "VALID", to: "ERROR" },
        doorbell("sq", 1),
        flush(1, "sq", 1),
      ),
    ),
    [false, "QP 1 never entered ERROR"],
    "a CQ's ERROR",
  );
  t.same(
    check(
      c,
      hw(
        flush(1, "sq", 2),
        state(1, "RTS", "ERROR"),
        doorbell("sq", 1),
        flush(1, "sq", 0),
        flush(2, "sq", 1),
        flush(1, "rq", 1),
      ),
    ),
    [false, "nothing of QP 1's sq was flushed after it entered ERROR"],
    "a flush before ERROR, an empty one, another QP's, another queue's",
  );
  t.same(
    check(c, hw(state(1, "RTS", "ERROR"), flush(1, "sq", 1), doorbell("sq", 1), flush(1, "sq", 2))),
    [false, "0 sq doorbell(s) between the ERROR transition and the end of the first flush (1 WQEs)"],
    "a doorbell after the first flush",
  );
  const sameTime = [
    ...hw(state(1, "RTS", "ERROR")),
    ...hw(doorbell("sq", 1)),
    ...hw(doorbell("sq", 1), flush(1, "sq", 1)).map((e) => ({ ...e, t: 2 })),
  ];
  t.same(check(c, sameTime)[0], false, "neither at the ERROR's time nor at the flush's");
  const [error, early, later, bell] = hw(
    state(1, "RTS", "ERROR"),
    flush(1, "sq", 1),
    flush(1, "sq", 4),
    doorbell("sq", 1),
  );
  if (!error || !early || !later || !bell) throw new Error("four events");
  t.same(
    check(c, [error, { ...early, t: error.t }, later, bell])[1],
    "0 sq doorbell(s) between the ERROR transition and the end of the first flush (4 WQEs)",
    "a flush at the ERROR's own time is not after it",
  );
  t.same(check(c, hw(state(1, "RTS", "ERROR")), new Map())[0], false);
  t.end();
});

t.test(
  "device_flush_behind_pending: the queue's flush held behind a pending completion, or overtaking it",
  (t) => {
    const c = { device_flush_behind_pending: { queue: "sq" } };
    const wait = (qpn: number, queue: "sq" | "rq") => ({
      kind: "wait",
      qpn,
      queue,
      index: 4,
      reason: "flush held (erdma_flush_step.hold): the completion of WQE 2 is not written yet",
    });
    t.same(check(c, hw(state(1, "RTS", "ERROR"), wait(1, "sq"), flush(1, "sq", 1))), [
      true,
      "the flush waited at WQE 4: flush held (erdma_flush_step.hold): the completion of WQE 2 is not written yet",
    ]);
    t.same(
      check(
        c,
        hw(flush(1, "sq", 1, { overtook: { wqes: [4], pending: [2], origin: "erdma_flush_step.complete" } })),
      ),
      [true, "flush completions of WQE(s) 4 written while WQE(s) 2 were pending (erdma_flush_step.complete)"],
      "a flush that overtook the pending completion met it too",
    );
    const none = [false, "no flush of QP 1's sq met a pending completion"];
    t.same(check(c, hw(flush(1, "sq", 3))), none, "a flush with nothing pending");
    t.same(check(c, hw(wait(1, "rq"))), none, "the other queue's wait");
    t.same(check(c, hw(wait(2, "sq"))), none, "the peer's wait");
    t.same(check({ device_flush_behind_pending: { on: "peer", queue: "sq" } }, hw(wait(2, "sq")))[0], true);
    t.end();
  },
);

t.test("device_ceq_batch: completion events a CEQ gathered before its interrupt was delivered", (t) => {
  const eqe = (eq: number | "aeq") => ({ kind: "eqe", eq, index: 0, owner: 1, detail: {} });
  const irq = (source: string, delivered = true) => ({ kind: "irq", vector: 1, delivered, source });
  t.same(
    check({ device_ceq_batch: { min: 3 } }, hw(eqe(1), eqe(1), eqe(1), irq("ceq1"), eqe(1), irq("ceq1"))),
    [true, "at most 3 event(s) behind one completion interrupt"],
  );
  t.same(
    check({ device_ceq_batch: { min: 3 } }, hw(eqe(1), eqe(1), irq("ceq1", false), eqe(1), irq("ceq1"))),
    [true, "at most 3 event(s) behind one completion interrupt"],
    "an interrupt not delivered does not end the batch",
  );
  t.same(
    check(
      { device_ceq_batch: { min: 2 } },
      hw(eqe(1), eqe(2), eqe("aeq"), eqe(0), irq("ceq1"), irq("ceq2"), irq("aeq")),
    ),
    [false, "at most 1 event(s) behind one completion interrupt"],
    "per CEQ; the AEQ and EQ 0 (the command queue's) are no CEQ",
  );
  t.same(
    check({ device_ceq_batch: { min: 2 } }, hw(eqe(12), eqe(12), irq("ceq12"))),
    [true, "at most 2 event(s) behind one completion interrupt"],
    "a CEQ number of two digits",
  );
  t.same(
    check({ device_ceq_batch: { min: 2 } }, hw(eqe(1), eqe(1), irq("xceq1"), irq("msix ceq1"))),
    [false, "at most 0 event(s) behind one completion interrupt"],
    "an interrupt from another source",
  );
  t.same(check({ device_ceq_batch: { min: 2 } }, hw(eqe(1), eqe(1))), [
    false,
    "at most 0 event(s) behind one completion interrupt",
  ]);
  t.end();
});

t.test("a verbs-trace condition is not the device's to read", (t) => {
  t.same(check({ flushed: { queue: "sq" } }, hw()), [false, "flushed is read on the executor's trace"]);
  t.end();
});

t.test("every fault armed fired; none armed is no situation either", (t) => {
  const fault = (action: string, id?: number, kind = "drop_cqe") => ({
    kind: "fault",
    action,
    ...(id === undefined ? {} : { id }),
    fault: { kind },
  });
  t.same(faultsFired(hw(fault("armed", 1), fault("fired", 1), fault("armed", 2), fault("fired", 2))), [
    true,
    "2 armed, each fired",
  ]);
  t.same(
    faultsFired(
      hw(fault("armed", 1), fault("fired", 1), fault("armed", 2, "delay_cqe"), fault("cleared", 2)),
    ),
    [false, '1 of 2 never fired, first {"kind":"delay_cqe"}'],
  );
  t.same(faultsFired(hw()), [false, "no fault was armed"]);
  t.same(
    faultsFired(hw(fault("armed"), fault("fired", 3))),
    [false, "no fault was armed"],
    "an armed event without its id",
  );
  t.same(faultsFired(hw(fault("fired", 1), fault("cleared", 1))), [false, "no fault was armed"]);
  t.same(
    faultsFired(hw(fault("armed", 1), fault("cleared", 1), fault("armed", 4), fault("fired", 4))),
    [false, '1 of 2 never fired, first {"kind":"drop_cqe"}'],
    "a fault cleared is not one fired",
  );
  t.same(
    faultsFired(hw({ kind: "fault", action: "armed", id: 1 })),
    [false, "1 of 1 never fired, first undefined"],
    "a fault event without its spec",
  );
  t.end();
});

t.test(
  "device conditions with no QP number say so; other events of the QP are no flushes or destroys",
  (t) => {
    const none = new Map<string, number>();
    const why = "the executor's trace names no QP number of the qp";
    t.same(
      check(
        { device_flushed_blocks: { queue: "sq", blocks: 2 } },
        hw(flush(1, "sq", 1, { blocks: [3] })),
        none,
      ),
      [false, why],
    );
    t.same(check({ device_destroyed_unflushed: {} }, hw(), none), [false, why]);
    t.same(check({ device_posted_while_flushing: { queue: "sq" } }, hw(state(1, "RTS", "ERROR")), none), [
      false,
      why,
    ]);
    const wqe = { kind: "wqe", qpn: 1, queue: "sq", index: 0, opcode: 0, op: "SEND", status: 0 };
    t.same(check({ device_flushed: { on: "qp", queue: "sq" } }, hw(wqe, flush(1, "sq", 2))), [
      true,
      "2 sq WQE(s) flushed",
    ]);
    const bare = cmdEventBody("DESTROY_QP");
    t.same(
      check(
        { device_destroyed_unflushed: {} },
        hw(bare, { ...bare, detail: { qpn: 1, pending: { sq: 1 } } }),
      ),
      [true, "at DESTROY_QP of QP 1: 1 sq and 0 rq entries pending"],
      "a DESTROY_QP naming no QP is skipped",
    );
    t.end();
  },
);
