// Rule hw-complete on hand-made hardware traces, and on the device model's own: every WQE the device
// took owes one completion and gets exactly one; a dropped flush completion is a WR lost, named by
// QP, queue and WQE index; a duplicate is named too; a completion fault can pick flush completions.
import t from "tap";
import { TraceModel } from "../../harness/oracle/model.ts";
import { completionAccounts, hwCompleteRule } from "../../harness/oracle/rules/hw-complete.ts";
import { FaultPlan, FaultSpec } from "../../qemu/erdma/faults.ts";
import { WcStatus } from "../../qemu/erdma/hw.ts";
import type { ErdmaTraceEvent } from "../../qemu/erdma/trace-schema.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";

const base = { t: 1, dev: "erdma" };
const wqe = (qpn: number, queue: "sq" | "rq", index: number, status: number, signaled?: boolean) =>
  ({
    ...base,
    kind: "wqe",
    qpn,
    queue,
    index,
    opcode: 0,
    op: queue === "rq" ? "RECEIVE" : "SEND",
    status,
    ...(signaled === undefined ? {} : { signaled }),
  }) as ErdmaTraceEvent;
const cqe = (qpn: number, queue: "sq" | "rq", wqeIndex: number, syndrome: number) =>
  ({
    ...base,
    kind: "cqe",
    cq: 1,
    index: 0,
    owner: 1,
    qpn,
    syndrome,
    opcode: 0,
    queue,
    wqe: wqeIndex,
  }) as ErdmaTraceEvent;
const flush = (qpn: number, queue: "sq" | "rq", wqes: number[]) =>
  ({
    ...base,
    kind: "flush",
    qpn,
    queue,
    from: wqes[0] ?? 0,
    to: (wqes.at(-1) ?? 0) + 1,
    count: wqes.length,
    limit: "pi",
    wqes,
  }) as ErdmaTraceEvent;

function judge(hw: ErdmaTraceEvent[] | undefined) {
  for (const e of hw ?? []) erdmaTraceEventSchema.parse(e);
  return hwCompleteRule.judge({
    model: new TraceModel([]),
    observations: [],
    profile: "linux",
    ...(hw ? { hw } : {}),
  });
}

t.test("owed and written: unsignaled successes owe nothing, receives and errors always do", async (t) => {
  const hw = [
    wqe(3, "sq", 0, WcStatus.SUCCESS, false),
    wqe(3, "sq", 1, WcStatus.SUCCESS, true),
    cqe(3, "sq", 1, WcStatus.SUCCESS),
    wqe(3, "rq", 0, WcStatus.SUCCESS),
    cqe(3, "rq", 0, WcStatus.SUCCESS),
    wqe(3, "sq", 2, WcStatus.SEND_WQE_FORMAT_ERR, false),
    cqe(3, "sq", 2, WcStatus.SEND_WQE_FORMAT_ERR),
    // the flush event follows its completions
    cqe(3, "rq", 1, WcStatus.FLUSH_ERR),
    cqe(3, "rq", 2, WcStatus.FLUSH_ERR),
    flush(3, "rq", [1, 2]),
  ];
  const r = judge(hw);
  t.equal(r.verdict, "PASS", r.reason);
  t.equal(r.judged, 5);
  t.same(
    completionAccounts(hw).map((a) => [a.key, a.owed, a.written]),
    [
      ["erdma/3/sq/1", 1, 1],
      ["erdma/3/rq/0", 1, 1],
      ["erdma/3/sq/2", 1, 1],
      ["erdma/3/rq/1", 1, 1],
      ["erdma/3/rq/2", 1, 1],
    ],
  );
});

t.test("a flush completion never written is a WR lost; one written twice a duplicate", async (t) => {
  const lost = judge([cqe(7, "rq", 33, WcStatus.FLUSH_ERR), flush(7, "rq", [33, 34])]);
  t.equal(lost.verdict, "FAIL");
  t.equal(lost.reason, "QP 7 rq WQE 34 (flushed): 1 completion(s) owed and never written (a WR lost)");
  t.same(lost.problems?.[0]?.wrs, [{ qp: "QP 7", queue: "rq", wrId: 34 }], "the WR as the device knows it");
  const twice = judge([wqe(2, "sq", 5, WcStatus.SUCCESS, true), cqe(2, "sq", 5, 0), cqe(2, "sq", 5, 0)]);
  t.equal(twice.verdict, "FAIL");
  t.match(twice.reason, /QP 2 sq WQE 5 \(SEND\): 1 completion\(s\) more than owed/);
  const unowed = judge([cqe(2, "sq", 9, WcStatus.SUCCESS)]);
  t.match(
    unowed.reason,
    /QP 2 sq WQE 9: 1 completion\(s\) more than owed \(a duplicate, or a WQE the device did not take\)/,
  );
});

t.test("no hardware trace: not judged here; no data completion: nothing to judge", async (t) => {
  const none = judge(undefined);
  t.equal(none.verdict, "SKIP");
  t.equal(none.applies, false, "siw: the rule does not apply, so a covered rule is no MISS");
  const empty = judge([wqe(1, "sq", 0, WcStatus.SUCCESS, false)]);
  t.equal(empty.verdict, "SKIP");
  t.equal(empty.applies, true);
});

t.test("a completion fault with a syndrome hits only completions of that status", async (t) => {
  const events: unknown[] = [];
  const plan = new FaultPlan({ emit: (e: unknown) => events.push(e), warn: () => {} } as never);
  plan.add(FaultSpec.parse({ kind: "drop-cqe", queue: "rq", syndrome: WcStatus.FLUSH_ERR }));
  t.notOk(plan.fire("drop-cqe", { qpn: 4, queue: "rq", syndrome: WcStatus.SUCCESS }), "a success is not hit");
  t.ok(
    plan.fire("drop-cqe", { qpn: 4, queue: "rq", syndrome: WcStatus.FLUSH_ERR }, { index: 34 }),
    "a flush is",
  );
  t.notOk(plan.fire("drop-cqe", { qpn: 4, queue: "rq", syndrome: WcStatus.FLUSH_ERR }), "once");
  t.match(events.at(-1), { kind: "fault", action: "fired", context: { qpn: 4, queue: "rq", index: 34 } });
});

t.test(
  "two devices on one fabric: the same QP number on each is two QPs, named with their device",
  async (t) => {
    const on = (dev: string, e: ErdmaTraceEvent) => ({ ...e, dev }) as ErdmaTraceEvent;
    const r = judge([
      on("erdma0", cqe(2, "rq", 5, WcStatus.FLUSH_ERR)),
      on("erdma0", flush(2, "rq", [5])),
      on("erdma1", flush(2, "rq", [5])),
    ]);
    t.equal(r.verdict, "FAIL");
    t.equal(r.reason, "erdma1 QP 2 rq WQE 5 (flushed): 1 completion(s) owed and never written (a WR lost)");
    t.same(r.problems?.[0]?.wrs, [{ qp: "erdma1 QP 2", queue: "rq", wrId: 5 }]);
  },
);
