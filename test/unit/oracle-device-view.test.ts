// What rule hw-protocol's DeviceView (harness/oracle/hw-protocol/device-view.ts) reads from one
// device's trace: which objects exist, since when, how each that is gone went (its destroy command
// or a reset, ordered by the driver or not), which CQs a QP completes on, how a QP entered ERROR,
// and the key each MR's MPT holds. A wrong answer here is a wrong problem in a hw-protocol FAIL
// (a refused command blamed on the wrong cause, a live object called destroyed).
import t from "tap";
import { DeviceView, fmt, objectName } from "../../harness/oracle/hw-protocol/device-view.ts";
import type { ErdmaTraceEventOf } from "../../harness/protocol/hw-trace.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";

let clock = 0;
const base = () => ({ t: ++clock, dev: "erdma" });

type StateObject = ErdmaTraceEventOf<"state">["object"];
const state = (object: StateObject, id: number, from: string, to: string): ErdmaTraceEventOf<"state"> => ({
  ...base(),
  kind: "state",
  object,
  id,
  from,
  to,
});

const cmd = (name: string, detail: Record<string, unknown>, status = 0): ErdmaTraceEventOf<"cmd"> => ({
  ...base(),
  ...cmdEventBody(name, status, { detail }),
});

/** A QP as the device tells of it: its state event, then the CREATE_QP naming its CQs. */
function createQp(v: DeviceView, qpn: number, cqns: { sqCqn?: number; rqCqn?: number }): void {
  v.state(state("qp", qpn, "none", "IDLE"));
  v.command(cmd("CREATE_QP", { qpn, ...cqns }));
}

const regMrWqe = (stag: string, status = 0, op = "REG_MR"): ErdmaTraceEventOf<"wqe"> => ({
  ...base(),
  kind: "wqe",
  qpn: 3,
  queue: "sq",
  index: 7,
  opcode: 8,
  op,
  status,
  mr: { stag, va: "0x1000", length: 4096, pages: 1, pageSize: 4096, mtt: "inline" },
});

t.test(
  "objects created by state events exist until destroyed; the destroy command names how they went",
  (t) => {
    const v = new DeviceView();
    const created = state("qp", 5, "none", "IDLE");
    v.state(created);
    t.ok(v.exists("qp", 5));
    t.equal(v.created("qp", 5), created.t);
    t.notOk(v.exists("qp", 6), "another QP number is not there");
    t.notOk(v.exists("cq", 5), "nor a CQ with the same number");
    t.equal(v.gone("qp", 5), undefined);
    v.state(state("qp", 5, "IDLE", "RTS"));
    t.ok(v.exists("qp", 5), "a transition is not a destruction");
    const destroyed = state("qp", 5, "RTS", "destroyed");
    v.state(destroyed);
    t.notOk(v.exists("qp", 5));
    t.same(v.gone("qp", 5), { t: destroyed.t, by: "DESTROY_QP" });
    t.equal(v.absence("qp", 5), ` after DESTROY_QP of QP 5 (t=${destroyed.t})`);

    for (const [object, by] of [
      ["cq", "DESTROY_CQ"],
      ["eq", "DESTROY_EQ"],
    ] as const) {
      v.state(state(object, 2, "none", "VALID"));
      t.ok(v.exists(object, 2));
      v.state(state(object, 2, "VALID", "destroyed"));
      t.equal(v.gone(object, 2)?.by, by);
    }
    t.end();
  },
);

t.test("an MR is one object per MPT index whatever its key; deregistration is DEREG_MR", (t) => {
  const v = new DeviceView();
  const reg = state("mr", 0x1234, "none", "VALID");
  v.state(reg);
  t.ok(v.exists("mr", 0x1234));
  t.ok(v.exists("mr", 0x12ff), "the same MPT (0x12) under another key");
  t.notOk(v.exists("mr", 0x1334), "another MPT");
  t.same(v.mptKey(0x12), { key: 0x34, t: reg.t, by: "REG_MR" }, "registration sets the MPT's key");
  t.equal(v.mptKey(0x13), undefined);
  v.state(state("mr", 0x1234, "VALID", "deregistered"));
  t.notOk(v.exists("mr", 0x1234));
  t.equal(v.gone("mr", 0x1234)?.by, "DEREG_MR");
  t.equal(v.absence("mr", 0x1234).startsWith(" after DEREG_MR of MR 0x1234 (t="), true);
  t.end();
});

t.test("a fast registration (REG_MR WQE) gives the MPT a new key; a failed or other WQE does not", (t) => {
  const v = new DeviceView();
  v.state(state("mr", 0x500, "none", "VALID"));
  const ok = regMrWqe("0x5a7");
  v.wqe(ok);
  t.same(v.mptKey(5), { key: 0xa7, t: ok.t, by: "the REG_MR WQE QP 3 sq WQE 7" });
  v.wqe(regMrWqe("0x5b1", 5));
  t.equal(v.mptKey(5)?.key, 0xa7, "a REG_MR that failed sets no key");
  v.wqe(regMrWqe("0x5c2", 0, "SEND"));
  t.equal(v.mptKey(5)?.key, 0xa7, "only a REG_MR sets a key");
  v.wqe(regMrWqe("zz"));
  t.equal(v.mptKey(5)?.key, 0xa7, "an stag that is no number sets none");
  const { mr: _mr, ...noMr } = regMrWqe("0x5d3");
  v.wqe(noMr);
  t.equal(v.mptKey(5)?.key, 0xa7, "a REG_MR without its registration sets none");
  t.end();
});

t.test("commands create the objects that have no state event: AHs, GIDs, doorbell pages", (t) => {
  const v = new DeviceView();
  v.command(cmd("CREATE_AH", { ahn: 4 }));
  v.command(cmd("SET_GID", { index: 1, op: "add" }));
  v.command(cmd("ALLOC_DB", { sdb: 9 }));
  t.ok(v.exists("ah", 4));
  t.ok(v.exists("gid", 1));
  t.ok(v.exists("db", 9));
  t.notOk(v.exists("ah", 9), "each kind by its own number");
  v.command(cmd("DESTROY_AH", { ahn: 4 }));
  v.command(cmd("SET_GID", { index: 1, op: "del" }));
  v.command(cmd("FREE_DB", { sdb: 9 }));
  t.equal(v.gone("ah", 4)?.by, "DESTROY_AH");
  t.equal(v.gone("gid", 1)?.by, "SET_GID (delete)");
  t.equal(v.gone("db", 9)?.by, "FREE_DB");
  t.end();
});

t.test("a command the device refused, or one without its number, changes nothing", (t) => {
  const v = new DeviceView();
  v.command(cmd("CREATE_AH", { ahn: 4 }, 3));
  v.command(cmd("ALLOC_DB", { sdb: 9 }, 3));
  v.command(cmd("SET_GID", { index: 1, op: "add" }, 3));
  v.command(cmd("CREATE_QP", { qpn: 2, sqCqn: 1, rqCqn: 1 }, 3));
  t.notOk(v.exists("ah", 4));
  t.notOk(v.exists("db", 9));
  t.notOk(v.exists("gid", 1));
  t.same(v.cqnsOf(2), []);
  v.command(cmd("CREATE_AH", { ahn: "4" }));
  v.command(cmd("CREATE_AH", { ahn: 4.5 }));
  v.command(cmd("ALLOC_DB", {}));
  v.command(cmd("SET_GID", { op: "add" }));
  t.notOk(v.exists("ah", 4), "an AH number that is no integer");
  t.equal(v.created("ah", 4), undefined);
  v.command(cmd("CREATE_AH", { ahn: 4 }));
  v.command(cmd("ALLOC_DB", { sdb: 9 }));
  v.command(cmd("SET_GID", { index: 1 }));
  v.command(cmd("DESTROY_AH", { ahn: "4" }));
  v.command(cmd("FREE_DB", {}));
  v.command(cmd("SET_GID", { op: "del" }));
  t.ok(v.exists("ah", 4), "a DESTROY_AH without a number destroys nothing");
  t.ok(v.exists("db", 9), "a FREE_DB without a number frees nothing");
  t.ok(v.exists("gid", 1), "a SET_GID without an index deletes nothing");
  v.command(cmd("DESTROY_AH", { ahn: 4 }, 3));
  t.ok(v.exists("ah", 4), "a refused destroy destroys nothing");
  const { detail: _detail, ...bare } = cmd("CREATE_QP", {});
  v.command(bare);
  t.end();
});

t.test("CREATE_QP tells the CQs a QP completes on, and a CQ which QPs complete on it", (t) => {
  const v = new DeviceView();
  createQp(v, 2, { sqCqn: 1, rqCqn: 3 });
  createQp(v, 4, { sqCqn: 3 });
  t.same(v.cqnsOf(2), [1, 3]);
  t.same(v.cqnsOf(4), [3], "a CQ number missing is left out");
  t.same(v.cqnsOf(9), [], "a QP the trace never created completes on no CQ");
  t.same(v.qpsOn(3), [2, 4]);
  t.same(v.qpsOn(1), [2]);
  t.same(v.qpsOn(7), []);
  v.command(cmd("CREATE_QP", { sqCqn: 1 }));
  t.same(v.qpsOn(1), [2], "a CREATE_QP without its QP number tells nothing");
  v.state(state("qp", 2, "IDLE", "destroyed"));
  v.state(state("qp", 2, "none", "IDLE"));
  t.same(v.cqnsOf(2), [], "a QP number made again starts with no CQs");
  t.end();
});

t.test(
  "how a QP entered ERROR: by a command, or by the device with its reason; destruction forgets it",
  (t) => {
    const v = new DeviceView();
    v.state(state("qp", 1, "none", "IDLE"));
    v.state(state("qp", 1, "IDLE", "RTS"));
    t.equal(v.errorEntry(1), undefined);
    const byCommand = state("qp", 1, "RTS", "ERROR");
    v.state(byCommand);
    t.same(v.errorEntry(1), { t: byCommand.t, byDevice: false });
    v.state(state("qp", 2, "none", "IDLE"));
    const byDevice = state("qp", 2, "RTS", "ERROR (LLP closed)");
    v.state(byDevice);
    t.same(v.errorEntry(2), { t: byDevice.t, byDevice: true, why: "LLP closed" });
    v.state(state("qp", 2, "ERROR (LLP closed)", "ERROR (a WQE failed)"));
    t.equal(v.errorEntry(2)?.t, byDevice.t, "staying in ERROR keeps the first entry");
    v.state(state("cq", 2, "VALID", "ERROR (overflow)"));
    t.equal(v.errorEntry(2)?.t, byDevice.t, "a CQ's ERROR is not a QP's");
    v.state(state("qp", 2, "ERROR (LLP closed)", "destroyed"));
    t.equal(v.errorEntry(2), undefined, "a destroyed QP has no ERROR entry");
    t.equal(v.errorEntry(7), undefined);
    t.end();
  },
);

t.test("a device reset loses every object that was not gone; the driver's own reset says so", (t) => {
  const v = new DeviceView();
  createQp(v, 1, { sqCqn: 1, rqCqn: 1 });
  v.state(state("qp", 1, "IDLE", "ERROR"));
  v.state(state("cq", 1, "none", "VALID"));
  v.state(state("mr", 0x200, "none", "VALID"));
  const cqGone = state("cq", 4, "none", "VALID");
  v.state(cqGone);
  const cqDestroyed = state("cq", 4, "VALID", "destroyed");
  v.state(cqDestroyed);
  v.state(state("device", 0, "enabled", "enabled"));
  v.state(state("cmdq", 0, "none", "ready"));
  t.ok(v.exists("qp", 1), "a device event that is no reset loses nothing");
  t.notOk(v.exists("cmdq" as never, 0), "the command queue is no object of the view");
  const reset = state("device", 0, "enabled", "reset (DEV_CTRL.RESET)");
  v.state(reset);
  t.notOk(v.exists("qp", 1));
  t.notOk(v.exists("mr", 0x200));
  t.same(v.gone("cq", 1), {
    t: reset.t,
    by: "a device reset (DEV_CTRL.RESET)",
    reset: { driverOrdered: true, reason: "DEV_CTRL.RESET" },
  });
  t.equal(v.gone("cq", 4)?.by, "DESTROY_CQ", "an object destroyed before keeps how it went");
  t.equal(v.gone("cq", 4)?.t, cqDestroyed.t);
  t.same(v.cqnsOf(1), [], "the reset forgets the QPs' CQs");
  t.equal(v.errorEntry(1), undefined, "and their ERROR entries");
  t.equal(v.mptKey(2), undefined, "and the MPTs' keys");
  t.equal(v.absence("qp", 1), ` after QP 1 was lost in a device reset (DEV_CTRL.RESET) (t=${reset.t})`);

  const w = new DeviceView();
  w.state(state("qp", 1, "none", "IDLE"));
  w.state(state("device", 0, "enabled", "reset (FLR)"));
  t.same(w.gone("qp", 1)?.reset, { driverOrdered: false, reason: "FLR" }, "a reset the platform ordered");
  t.end();
});

t.test("absence and names in the words problems quote", (t) => {
  const v = new DeviceView();
  t.equal(v.absence("cq", 3), ", which the device does not have (no creation of CQ 3 in this trace)");
  t.equal(objectName("mr", 0x1a2b), "MR 0x1a2b");
  t.equal(objectName("db", 2), "doorbell page 2");
  t.equal(objectName("qp", 7), "QP 7");
  t.equal(objectName("gid", 0), "GID 0");
  t.equal(fmt(21837.8554), "21837.855");
  t.equal(fmt(12.5), "12.5");
  t.equal(fmt(3), "3");
  t.end();
});

t.test("one object's events leave the others' facts alone", (t) => {
  const v = new DeviceView();
  createQp(v, 1, { sqCqn: 1, rqCqn: 3 });
  t.equal(v.mptKey(0), undefined, "a QP's state events set no MPT key");
  v.state(state("cq", 1, "none", "VALID"));
  t.same(v.cqnsOf(1), [1, 3], "creating CQ 1 leaves QP 1's CQs");
  const entry = state("qp", 1, "RTS", "ERROR (LLP closed)");
  v.state(entry);
  t.same(v.cqnsOf(1), [1, 3], "entering ERROR leaves the QP's CQs");
  v.state(state("cq", 1, "VALID", "destroyed"));
  t.equal(v.errorEntry(1)?.t, entry.t, "destroying CQ 1 leaves QP 1's ERROR entry");

  v.state(state("mr", 0x500, "none", "VALID"));
  v.wqe(regMrWqe("0x5a7"));
  v.state(state("mr", 0x500, "VALID", "INVALID"));
  t.equal(v.mptKey(5)?.key, 0xa7, "only a registration's state event sets the key, not a later one");
  v.wqe(regMrWqe("zz"));
  t.equal(v.mptKey(0), undefined, "an stag that is no number sets no MPT's key");
  t.end();
});

t.test("a QP the trace shows only in ERROR, or only created, completes on no CQ", (t) => {
  const v = new DeviceView();
  v.state(state("qp", 8, "RTS", "ERROR (a WQE failed)"));
  t.same(v.cqnsOf(8), []);
  t.same(v.qpsOn(1), []);
  v.state(state("qp", 9, "none", "IDLE"));
  t.same(v.cqnsOf(9), []);
  t.same(v.qpsOn(1), []);
  t.end();
});
