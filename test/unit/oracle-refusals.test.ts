// The device's complaints as rule hw-protocol's findings (harness/oracle/hw-protocol/refusals.ts):
// each refused command, warning, DMA fault and internal error goes to the check that explains it,
// names the QPs it concerns (an injected fault on one of them may excuse it), says whether it is a
// CQ's or EQ's (an injected interrupt fault may excuse those), and is explained only when the
// driver's contract allows it. A finding in the wrong check, on the wrong QPs or wrongly explained
// is a wrong verdict.
import t from "tap";
import { DeviceView } from "../../harness/oracle/hw-protocol/device-view.ts";
import {
  deviceWarning,
  dmaFault,
  internalError,
  refusedCommand,
} from "../../harness/oracle/hw-protocol/refusals.ts";
import type { ErdmaTraceEventOf } from "../../harness/protocol/hw-trace.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";

let clock = 100;
const base = () => ({ t: ++clock, dev: "erdma" });

type Obj = NonNullable<ErdmaTraceEventOf<"cmd">["object"]>;
const refused = (name: string, status: number, object?: Obj, reason?: string): ErdmaTraceEventOf<"cmd"> => ({
  ...base(),
  ...cmdEventBody(name, status, { ...(object ? { object } : {}), ...(reason ? { reason } : {}) }),
});
const state = (
  object: ErdmaTraceEventOf<"state">["object"],
  id: number,
  from: string,
  to: string,
): ErdmaTraceEventOf<"state"> => ({ ...base(), kind: "state", object, id, from, to });
const warn = (message: string, detail?: Record<string, unknown>): ErdmaTraceEventOf<"warn"> => ({
  ...base(),
  kind: "warn",
  message,
  ...(detail ? { detail } : {}),
});

/** A view with QP 2 and QP 5 completing on CQ 1, QP 7 on CQ 3. */
function view(): DeviceView {
  const v = new DeviceView();
  for (const [qpn, cqn] of [
    [2, 1],
    [5, 1],
    [7, 3],
  ] as const) {
    v.state(state("qp", qpn, "none", "IDLE"));
    v.command({ ...refused("CREATE_QP", 0), detail: { qpn, sqCqn: cqn, rqCqn: cqn } });
  }
  return v;
}

t.test("NOT_FOUND: a lifetime problem naming how the object went, on the QPs it concerns", (t) => {
  const v = view();
  const gone = state("qp", 2, "IDLE", "destroyed");
  v.state(gone);
  const qp = refusedCommand(refused("MODIFY_QP", 4, { kind: "qp", id: 2 }, "no such QP"), v);
  t.same(qp, {
    check: "lifetime",
    qpns: [2],
    queueEvent: false,
    reason: `MODIFY_QP for QP 2 after DESTROY_QP of QP 2 (t=${gone.t}): NOT_FOUND (no such QP)`,
  });
  const cq = refusedCommand(refused("DESTROY_CQ", 4, { kind: "cq", id: 1 }), v);
  t.same(cq.qpns, [2, 5], "a CQ's finding concerns the QPs that complete on it");
  t.equal(cq.queueEvent, true);
  t.equal(
    cq.reason,
    "DESTROY_CQ for CQ 1, which the device does not have (no creation of CQ 1 in this trace): NOT_FOUND",
  );
  const eq = refusedCommand(refused("DESTROY_EQ", 4, { kind: "eq", id: 1 }), v);
  t.equal(eq.queueEvent, true, "an EQ's is a queue event too");
  t.same(eq.qpns, []);
  const mr = refusedCommand(refused("DEREG_MR", 4, { kind: "mr", id: 0x100 }), v);
  t.equal(mr.queueEvent, false);
  t.same(mr.qpns, [], "an MR concerns no QP");
  t.equal(mr.explained, undefined);
  t.end();
});

t.test(
  "NOT_FOUND after a reset the driver did not order is explained; after its own reset it is not",
  (t) => {
    const v = view();
    const reset = state("device", 0, "enabled", "reset (FLR)");
    v.state(reset);
    const f = refusedCommand(refused("DESTROY_QP", 4, { kind: "qp", id: 7 }), v);
    t.equal(f.check, "lifetime");
    t.same(f.qpns, [7]);
    t.equal(f.reason, "DESTROY_QP for QP 7: NOT_FOUND");
    t.equal(
      f.explained,
      `DESTROY_QP for QP 7 raced a reset the driver did not order (FLR, t=${reset.t}), which took QP 7 with everything else (erdma_pci_driver has no shutdown or reset_prepare hook, erdma_main.c:632-637)`,
    );

    const w = view();
    w.state(state("device", 0, "enabled", "reset (DEV_CTRL.RESET)"));
    const own = refusedCommand(refused("DESTROY_QP", 4, { kind: "qp", id: 7 }), w);
    t.equal(own.explained, undefined, "a command after the driver's own reset is the driver's problem");
    t.match(own.reason, /^DESTROY_QP for QP 7 after QP 7 was lost in a device reset \(DEV_CTRL\.RESET\)/);
    t.end();
  },
);

t.test("EXISTS: a lifetime problem saying when the object was made", (t) => {
  const v = view();
  const made = state("cq", 9, "none", "VALID");
  v.state(made);
  t.same(refusedCommand(refused("CREATE_CQ", 5, { kind: "cq", id: 9 }), v), {
    check: "lifetime",
    qpns: [],
    reason: `CREATE_CQ for CQ 9, which exists (created t=${made.t}, never destroyed): EXISTS`,
  });
  t.equal(
    refusedCommand(refused("CREATE_QP", 5, { kind: "qp", id: 11 }), v).reason,
    "CREATE_QP for QP 11, which exists (created before this trace, never destroyed): EXISTS",
  );
  t.end();
});

t.test("BAD_STATE on a QP: a qp-state problem, explained only for a stop of a QP the device failed", (t) => {
  const v = view();
  const entry = state("qp", 2, "RTS", "ERROR (LLP closed)");
  v.state(entry);
  const stop = refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 2 }, "ERROR -> CLOSING"), v);
  t.equal(stop.check, "qp-state");
  t.same(stop.qpns, [2]);
  t.equal(stop.reason, "MODIFY_QP of QP 2 refused: BAD_STATE (ERROR -> CLOSING)");
  t.equal(
    stop.explained,
    `MODIFY_QP of QP 2 to CLOSING refused in ERROR: the device moved QP 2 to ERROR itself (LLP closed, t=${entry.t}), which the driver learns only as IB_EVENT_QP_FATAL, so it still stops the QP as if in RTS`,
  );
  t.ok(
    refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 2 }, "ERROR -> TERMINATE"), v).explained,
    "TERMINATE is a stop too",
  );
  t.equal(
    refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 2 }, "ERROR -> RTS"), v).explained,
    undefined,
    "moving a failed QP back to RTS is not a stop",
  );
  t.equal(
    refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 2 }), v).explained,
    undefined,
    "a refusal naming no target",
  );
  v.state(state("qp", 5, "RTS", "ERROR"));
  t.equal(
    refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 5 }, "ERROR -> CLOSING"), v).explained,
    undefined,
    "the driver moved QP 5 to ERROR itself: stopping it again is its own mistake",
  );
  t.equal(
    refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 7 }, "RTS -> CLOSING"), v).explained,
    undefined,
    "a QP not in ERROR",
  );
  const noWhy = view();
  noWhy.state({ ...state("qp", 2, "RTS", "ERROR (x)"), to: "ERROR ()" });
  t.match(
    refusedCommand(refused("MODIFY_QP", 6, { kind: "qp", id: 2 }, "ERROR -> CLOSING"), noWhy).explained,
    /ERROR itself \(a failed WQE, t=/,
  );
  const cq = refusedCommand(refused("MODIFY_CQ", 6, { kind: "cq", id: 1 }), v);
  t.equal(cq.check, "status", "BAD_STATE for another object is a status problem");
  t.end();
});

t.test("DEREG_MR refused BAD_PARAM: the MPT holds another key, which the finding names", (t) => {
  const v = view();
  const reg = state("mr", 0x3a1, "none", "VALID");
  v.state(reg);
  t.same(refusedCommand(refused("DEREG_MR", 3, { kind: "mr", id: 0x3a2 }), v), {
    check: "lifetime",
    qpns: [],
    reason: `DEREG_MR names an MR its MPT does not hold: the device's MPT 0x3 holds key 161 (set by REG_MR, t=${reg.t}); the driver's ibmr->lkey names another: BAD_PARAM`,
  });
  t.equal(
    refusedCommand(refused("DEREG_MR", 3, { kind: "mr", id: 0x4b2 }), v).reason,
    "DEREG_MR names an MR its MPT does not hold: the device's MPT 0x4 holds another key; the driver's ibmr->lkey names another: BAD_PARAM",
  );
  t.equal(
    refusedCommand(refused("REG_MR", 3, { kind: "mr", id: 0x3a2 }), v).check,
    "status",
    "only DEREG_MR",
  );
  t.equal(
    refusedCommand(refused("DEREG_MR", 2, { kind: "mr", id: 0x3a2 }), v).check,
    "status",
    "only BAD_PARAM",
  );
  t.end();
});

t.test("DMA_FAULT and other statuses; a command naming no object", (t) => {
  const v = view();
  t.same(refusedCommand(refused("CREATE_QP", 7, { kind: "qp", id: 2 }, "SQ buffer"), v), {
    check: "dma",
    qpns: [2],
    reason: "CREATE_QP for QP 2: DMA_FAULT (SQ buffer)",
  });
  t.same(refusedCommand(refused("CREATE_CQ", 7), v), {
    check: "dma",
    qpns: [],
    reason: "CREATE_CQ: DMA_FAULT",
  });
  t.same(refusedCommand(refused("QUERY_STATS", 1), v), {
    check: "status",
    qpns: [],
    reason: "QUERY_STATS answered BAD_OPCODE: a command this device does not have",
  });
  t.same(refusedCommand(refused("CREATE_CQ", 2, { kind: "cq", id: 3 }, "depth"), v), {
    check: "status",
    qpns: [7],
    reason: "CREATE_CQ for CQ 3 answered BAD_LENGTH (depth)",
  });
  t.same(
    refusedCommand(refused("CREATE_AH", 4), v),
    {
      check: "status",
      qpns: [],
      reason: "CREATE_AH answered NOT_FOUND",
    },
    "NOT_FOUND naming no object is no lifetime problem",
  );
  t.equal(refusedCommand(refused("CREATE_AH", 5), v).check, "status", "nor EXISTS");
  t.end();
});

t.test("a DMA fault concerns the QP its context names; an internal error is the model's own", (t) => {
  const e: ErdmaTraceEventOf<"dma-fault"> = {
    ...base(),
    kind: "dma-fault",
    address: "0xdead000",
    length: 64,
    access: "read",
    context: "QP 12 SQE",
    reason: "unmapped",
  };
  t.same(dmaFault(e), {
    check: "dma",
    qpns: [12],
    reason: `DMA read of 0xdead000+64 (QP 12 SQE) outside the memory the guest mapped: unmapped (t=${e.t})`,
  });
  t.same(dmaFault({ ...e, context: "CQ 3 ring" }).qpns, [], "a context naming no QP");
  t.same(dmaFault({ ...e, context: "QP12" }).qpns, [], "QP and its number are words apart");
  const ie: ErdmaTraceEventOf<"internal-error"> = { ...base(), kind: "internal-error", message: "boom" };
  t.same(internalError(ie), {
    check: "status",
    qpns: [],
    modelFault: true,
    reason: `the device model failed (an internal error, not the driver's doing, but nothing here can vouch for the run): boom (t=${ie.t})`,
  });
  t.end();
});

t.test("each device warning goes to its check, on the QPs it concerns", (t) => {
  const v = view();
  const overrun = warn("CQ overrun: more CQEs written than the ring holds since the last reported CI", {
    cqn: 1,
    ci: 6,
  });
  const o = deviceWarning(overrun, v);
  t.equal(o.check, "cq-doorbell");
  t.same(o.qpns, [2, 5]);
  t.equal(o.queueEvent, true);
  t.equal(o.reason, `${overrun.message} {"cqn":1,"ci":6} (at t=${overrun.t})`);
  t.match(
    o.explained,
    /^CQ 1 turned over past the consumer index of its last arm doorbell \(6\): erdma reports/,
  );
  const o2 = deviceWarning(warn(overrun.message, { cq: 3 }), v);
  t.same(o2.qpns, [7], "the CQ named as cq");
  t.match(o2.explained, /^CQ 3 turned over past the consumer index of its last arm doorbell \(\?\)/);
  const o3 = deviceWarning(warn(overrun.message), v);
  t.same(o3.qpns, []);
  t.match(o3.explained, /^CQ \? turned over/);

  const sq = warn("SQ doorbell for a QP that does not exist", { qpn: 9 });
  t.same(deviceWarning(sq, v), {
    check: "doorbell",
    qpns: [9],
    reason: `SQ doorbell for QP 9, which the device does not have (no creation of QP 9 in this trace) (at t=${sq.t})`,
  });
  const rq = warn("RQ doorbell for a QP that does not exist");
  t.same(deviceWarning(rq, v), {
    check: "doorbell",
    qpns: [],
    reason: `RQ doorbell for QP ? (at t=${rq.t})`,
  });

  const cqDb = warn("doorbell for a CQ that does not exist", { cqn: 4 });
  t.same(deviceWarning(cqDb, v), {
    check: "cq-doorbell",
    qpns: [],
    queueEvent: true,
    reason: `CQ doorbell for CQ 4, which the device does not have (no creation of CQ 4 in this trace) (at t=${cqDb.t})`,
  });
  t.equal(deviceWarning(warn(cqDb.message), v).reason.startsWith("CQ doorbell for CQ ? (at t="), true);
  const eqDb = warn("doorbell for an EQ that does not exist", { eqn: 2 });
  t.same(deviceWarning(eqDb, v), {
    check: "doorbell",
    qpns: [],
    queueEvent: true,
    reason: `EQ doorbell for EQ 2, which the device does not have (no creation of EQ 2 in this trace) (at t=${eqDb.t})`,
  });
  t.equal(deviceWarning(warn(eqDb.message), v).reason.startsWith("EQ doorbell for EQ ? (at t="), true);

  const cmdq = warn("CMDQ doorbell beyond the SQ depth: ignored", { pi: 40, depth: 32, ci: 3 });
  t.same(deviceWarning(cmdq, v), {
    check: "doorbell",
    qpns: [],
    reason: `CMDQ doorbell moves the producer index to 40, more than the CMDQ's 32 WQEBBs past its consumer index 3 (at t=${cmdq.t})`,
  });
  t.match(
    deviceWarning(warn(cmdq.message), v).reason,
    /^CMDQ doorbell moves the producer index to \?, more than the CMDQ's \? WQEBBs past its consumer index \? /,
  );
  const early = warn("doorbell before INIT_DONE ignored", { db: "CQ" });
  t.same(deviceWarning(early, v), {
    check: "doorbell",
    qpns: [],
    reason: `a CQ doorbell before the device reported INIT_DONE (at t=${early.t})`,
  });

  const cqBusy = warn("CQ destroyed while QPs still use it", { cqn: 1, qps: [2, 5, "x"] });
  t.same(deviceWarning(cqBusy, v), {
    check: "lifetime",
    qpns: [2, 5],
    queueEvent: true,
    reason: `DESTROY_CQ of CQ 1 while QP 2, 5, x still complete(s) on it (at t=${cqBusy.t})`,
  });
  const cqBusy2 = deviceWarning(warn(cqBusy.message), v);
  t.same(cqBusy2.qpns, []);
  t.match(cqBusy2.reason, /^DESTROY_CQ of CQ \? while QP \? still/);
  const eqBusy = warn("EQ destroyed while CQs still use it", { eqn: 1, cqs: [1, 3] });
  t.same(deviceWarning(eqBusy, v), {
    check: "lifetime",
    qpns: [],
    queueEvent: true,
    reason: `DESTROY_EQ of EQ 1 while CQ 1, 3 still report(s) to it (at t=${eqBusy.t})`,
  });
  t.match(deviceWarning(warn(eqBusy.message), v).reason, /^DESTROY_EQ of EQ \? while CQ \? still/);

  const dropped = warn("completion for a CQ that does not exist: dropped", { qpn: 7, cqn: 8 });
  t.same(deviceWarning(dropped, v), {
    check: "lifetime",
    qpns: [7],
    queueEvent: true,
    reason: `QP 7 completes on CQ 8, which the device does not have (no creation of CQ 8 in this trace): the device dropped a completion (at t=${dropped.t})`,
  });
  const dropped2 = deviceWarning(warn(dropped.message), v);
  t.same(dropped2.qpns, []);
  t.match(dropped2.reason, /^QP \? completes on CQ \?: the device dropped/);
  const evDropped = warn("CQ event for an EQ that does not exist: dropped", { cqn: 1, eqn: 6 });
  t.same(deviceWarning(evDropped, v), {
    check: "lifetime",
    qpns: [2, 5],
    queueEvent: true,
    reason: `CQ 1 reports to EQ 6, which the device does not have (no creation of EQ 6 in this trace): the device dropped a completion event (at t=${evDropped.t})`,
  });
  const evDropped2 = deviceWarning(warn(evDropped.message), v);
  t.same(evDropped2.qpns, []);
  t.match(evDropped2.reason, /^CQ \? reports to EQ \?: the device dropped/);

  const other = warn("send queue stalled", { qpn: 5, why: "x" });
  t.same(deviceWarning(other, v), {
    check: "status",
    qpns: [5],
    queueEvent: true,
    reason: `the device warned: send queue stalled {"qpn":5,"why":"x"} (at t=${other.t})`,
  });
  const bare = warn("odd");
  t.same(deviceWarning(bare, v), {
    check: "status",
    qpns: [],
    queueEvent: false,
    reason: `the device warned: odd (at t=${bare.t})`,
  });
  t.same(deviceWarning(warn("odd", { qpn: 1.5 }), v).qpns, [], "a QP number that is no integer");
  t.end();
});
