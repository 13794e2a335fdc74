// Edges of rule hw-complete (harness/oracle/rules/hw-complete.ts) that hw-complete.test.ts does not
// pin: which CQEs count as a WQE's completion (not the command queue's, not one naming no queue or
// WQE), what makes a trace judgeable at all, the counts in a problem's words and evidence, and the
// rule's words when it passes, skips or does not apply.
import t from "tap";
import { TraceModel } from "../../harness/oracle/model.ts";
import { hwCompleteRule } from "../../harness/oracle/rules/hw-complete.ts";
import type { HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import { WcStatus } from "../../qemu/erdma/hw.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";

const ev = (e: Record<string, unknown>): HwTraceEvent =>
  erdmaTraceEventSchema.parse({ t: 1, dev: "erdma", ...e });
const recv = (qpn: number, index: number) =>
  ev({ kind: "wqe", qpn, queue: "rq", index, opcode: 0, op: "RECEIVE", status: WcStatus.SUCCESS });
const cqe = (qpn: number, more: Record<string, unknown>) =>
  ev({ kind: "cqe", cq: 1, index: 0, owner: 1, qpn, syndrome: 0, opcode: 0, ...more });
const judge = (hw: HwTraceEvent[] | undefined) =>
  hwCompleteRule.judge({
    model: new TraceModel([]),
    observations: [],
    profile: "linux",
    ...(hw ? { hw } : {}),
  });

t.test("a WQE's completion is a data CQE naming its queue and WQE index", (t) => {
  const ok = judge([
    recv(3, 0),
    recv(3, 1),
    cqe(3, { queue: "rq", wqe: 0 }),
    cqe(3, { queue: "rq", wqe: 1 }),
  ]);
  t.same(ok, {
    verdict: "PASS",
    reason: "2 completion(s) owed by the device's WQEs, each written once",
    judged: 2,
    applies: true,
  });
  const cmdq = judge([
    recv(3, 0),
    cqe(3, { queue: "rq", wqe: 0 }),
    cqe(3, { cq: "cmdq", queue: "rq", wqe: 0 }),
  ]);
  t.equal(cmdq.verdict, "PASS", "a command queue CQE is no WQE's");
  const noQueue = judge([recv(3, 0), cqe(3, { queue: "rq", wqe: 0 }), cqe(3, { wqe: 0 })]);
  t.equal(noQueue.verdict, "PASS", "nor one naming no queue");
  const noWqe = judge([recv(3, 0), cqe(3, { queue: "rq", wqe: 0 }), cqe(3, { queue: "rq" })]);
  t.equal(noWqe.verdict, "PASS", "nor one naming no WQE");
  t.end();
});

t.test("the counts of a WR lost and of a duplicate, in words and evidence", (t) => {
  const lost = judge([
    recv(3, 0),
    recv(3, 0),
    recv(3, 0),
    cqe(3, { queue: "rq", wqe: 0 }),
    cqe(4, { queue: "rq", wqe: 9 }),
    recv(4, 9),
  ]);
  t.same(lost.problems, [
    {
      reason: "QP 3 rq WQE 0 (RECEIVE): 2 completion(s) owed and never written (a WR lost)",
      evidence: ["owed 3, written 1"],
      wrs: [{ qp: "QP 3", queue: "rq", wrId: 0 }],
    },
  ]);
  t.equal(lost.judged, 4);
  const dup = judge([
    recv(3, 0),
    cqe(3, { queue: "rq", wqe: 0 }),
    cqe(3, { queue: "rq", wqe: 0 }),
    cqe(3, { queue: "rq", wqe: 0 }),
  ]);
  t.same(dup.problems, [
    {
      reason:
        "QP 3 rq WQE 0 (RECEIVE): 2 completion(s) more than owed (a duplicate, or a WQE the device did not take)",
      evidence: ["owed 1, written 3"],
      wrs: [{ qp: "QP 3", queue: "rq", wrId: 0 }],
    },
  ]);
  t.end();
});

t.test(
  "judgeable only with a data completion naming a WQE; not under a run without a hardware trace",
  (t) => {
    t.same(judge([recv(3, 0), cqe(3, { queue: "rq" })]), {
      verdict: "SKIP",
      reason: "the hardware trace has no data completion of a WQE",
      judged: 0,
      applies: true,
    });
    t.equal(
      judge([cqe(3, { queue: "rq", wqe: 0 })]).verdict,
      "FAIL",
      "one CQE naming a WQE is enough to judge",
    );
    t.same(judge(undefined), {
      verdict: "SKIP",
      reason: "no hardware trace here (siw, or a device of your own)",
      judged: 0,
      applies: false,
    });
    const withServer = judge([
      { src: "vfio-user", t: 1, dev: "erdma", kind: "connect" },
      recv(3, 0),
      cqe(3, { queue: "rq", wqe: 0 }),
    ]);
    t.equal(withServer.verdict, "PASS", "the server's lines are no device events (nor a second device)");
    t.equal(withServer.problems, undefined);
    t.end();
  },
);
