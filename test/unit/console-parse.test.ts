// The console parser on what the golden files (test/unit/console-golden.test.ts: real captured logs
// and their expected parse) do not hold: a labelled hand-written report for the kinds no run here
// has produced, one-line checks of the remaining table rows, and the capture tool's helpers.
import t from "tap";
import { parseConsole, parseFrame } from "../../harness/console/parse.ts";
import { excerpt, fixtureHeader } from "../support/console-capture.ts";

// No run here has produced a BUG, Oops or panic yet: a labelled hand-written report (x86, Linux
// 6.12's format: CPU line with UID:) until a real capture replaces it.
const HAND = `[    0.000000] Linux version 6.12.95 (root@hil) (gcc (Debian 12.2.0-14) 12.2.0) #1
[  140.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008
[  140.000050] #PF: supervisor read access in kernel mode
[  140.000100] Oops: Oops: 0000 [#1] PREEMPT SMP NOPTI
[  140.000150] CPU: 0 UID: 0 PID: 91 Comm: hil_kverbs Tainted: G           O       6.12.95 #1
[  140.000200] RIP: 0010:erdma_post_send+0x4c/0x2e0 [erdma]
[  140.000250] Call Trace:
[  140.000300]  <TASK>
[  140.000350]  ? ib_drain_qp+0x10/0x30 [ib_core]
[  140.000400]  kv_op_drain+0x131/0x1b8 [hil_kverbs]
[  140.000450]  </TASK>
[  150.000000] Kernel panic - not syncing: Fatal exception
`;

t.test("hand-written BUG/Oops/panic (no real one captured yet)", async (t) => {
  const events = parseConsole(HAND);
  t.same(
    events.map((e) => e.kind),
    ["bug", "oops", "panic"],
  );
  const oops = events[1];
  t.same(oops?.process, { comm: "hil_kverbs", pid: 91 });
  t.equal(oops?.rip, "erdma_post_send+0x4c/0x2e0 [erdma]", "from the RIP line");
  t.same(
    oops?.frames.map((f) => [f.fn, f.reliable]),
    [
      ["ib_drain_qp", false],
      ["kv_op_drain", true],
    ],
  );
  t.equal(events[0]?.message, undefined, "only a WARN has a message");
});

t.test("parseFrame", async (t) => {
  t.same(parseFrame(" ? kthread+0x96/0x9e"), { fn: "kthread", offset: 0x96, size: 0x9e, reliable: false });
  t.same(parseFrame("ib_drain_qp+0xa/0x1a [ib_core]"), {
    fn: "ib_drain_qp",
    offset: 0xa,
    size: 0x1a,
    module: "ib_core",
    reliable: true,
  });
  t.equal(parseFrame("RIP: 0010:foo"), undefined);
  t.equal(parseFrame("<TASK>"), undefined);
});

t.test("a clean boot log has no events", async (t) => {
  t.same(
    parseConsole("[    0.000000] Linux version 6.12.95\n[    1.0] erdma: probe done\nHIL-GUEST-READY\n"),
    [],
  );
});

t.test("lockdep reports are their own kind, not a plain WARN", async (t) => {
  const ev = parseConsole("[ 1.0] WARNING: possible circular locking dependency detected\n");
  t.same(
    ev.map((e) => e.kind),
    ["lockdep"],
  );
});

t.test("panics and RCU stalls are recognised", async (t) => {
  const ev = parseConsole(
    "[ 5.0] Kernel panic - not syncing: Attempted to kill init!\n[ 6.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n",
  );
  t.same(
    ev.map((e) => e.kind),
    ["panic", "rcu-stall"],
  );
});

t.test("capture helpers: excerpt and header", async (t) => {
  const log = "a\nb\n[ 1.0] INFO: task x:1 blocked for more than 10 seconds.\nc\n</TASK>\nd\n\n";
  t.equal(
    excerpt(log, /INFO: task/, /<\/TASK>/),
    "[ 1.0] INFO: task x:1 blocked for more than 10 seconds.\nc\n</TASK>\n",
  );
  t.equal(
    excerpt(log, /INFO: task/, undefined, 1),
    "b\n[ 1.0] INFO: task x:1 blocked for more than 10 seconds.\nc\n</TASK>\nd\n",
  );
  t.throws(() => excerpt(log, /nothing/), { message: /no line matching/ });
  t.equal(
    fixtureHeader({ kind: "drain-warn", base: "debian:6.12", release: "6.12.95", commands: ["a", "b"] }),
    "# REAL console log (drain-warn): Linux 6.12.95 (debian:6.12), produced by `node --import tsx test/support/console-capture.ts drain-warn` running: a; b",
  );
});
