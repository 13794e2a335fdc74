// The hang rule on hand-built traces: it counts the commands the executor ran, and each step that
// did not return within its watchdog is a problem quoting the stuck task's stack line by line.
import t from "tap";
import type { StuckObservation } from "../../harness/protocol/observations.ts";
import { pair, verdictOf } from "../support/oracle-trace.ts";

const stuck = (step: number, op: string, stack: string): StuckObservation => ({
  ev: "stuck",
  step,
  op,
  ms: 5003,
  state: "D (disk sleep)",
  stack,
});

t.test("every command returned: PASS, judged once per command the trace shows", async (t) => {
  const b = pair()
    .cmd("pd name=pd")
    .modify("qp", "ERR")
    .cmd("modify qp=qp state=ERR")
    .cmd("poll cq=cq", null);
  const v = verdictOf(b, "hang", "ib");
  t.same([v.verdict, v.reason, v.judged], ["PASS", "every command returned within its watchdog", 3]);
});

t.test("a stuck step is a FAIL naming the command, its step and the worker's state", async (t) => {
  const b = pair().cmd("pd name=pd").cmd("drain qp=qp which=qp", null);
  const v = verdictOf(b, "hang", "ib", [
    stuck(2, "drain", "[<0>] __wait_for_common+0x8f/0x1b0\n[<0>] __ib_drain_sq+0x8d/0xd0 [ib_core]"),
    stuck(-1, "connect", "[<0>] rdma_connect+0x1/0x2"),
  ]);
  t.equal(v.verdict, "FAIL");
  t.equal(v.judged, 2, "the commands the trace shows");
  t.same(
    v.problems?.map((p) => p.reason),
    [
      "drain (step 3) did not return within 5003 ms; the worker is D (disk sleep)",
      "connect (step 0) did not return within 5003 ms; the worker is D (disk sleep)",
    ],
    "steps counted from 1, setup as step 0",
  );
  t.same(v.problems?.[0]?.evidence, [
    "stack: [<0>] __wait_for_common+0x8f/0x1b0",
    "stack: [<0>] __ib_drain_sq+0x8d/0xd0 [ib_core]",
  ]);
  t.match(
    v.reason,
    /^drain \(step 3\) did not return within 5003 ms; the worker is D \(disk sleep\) \(and 1 more\)$/,
  );
});
