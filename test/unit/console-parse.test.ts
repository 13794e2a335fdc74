// The console parser on what the golden files (test/unit/console-golden.test.ts: real captured logs
// and their expected parse) do not hold: reliable frames alone (the guest kernels, built with ORC, print them mixed with "?" ones),
// one-line checks of the table rows no guest here can produce (RCU stalls: Tiny RCU has no stall
// detector; lockdep's real report is a golden file of the debug kernel), and the capture tool's helpers.
import t from "tap";
import { parseConsole, parseFrame } from "../../harness/console/parse.ts";
import { excerpt, fixtureHeader, parseCaptureArgs } from "../support/console-capture.ts";

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
  t.equal(parseFrame("? 0xffffffffa0085000"), undefined, "an address without a symbol is no frame");
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
    "# REAL console log (drain-warn): Linux 6.12.95 (debian:6.12), produced by `node --import tsx test/support/console-capture.ts drain-warn --kernel debian:6.12` running: a; b",
  );
});

t.test("capture tool command line", async (t) => {
  t.same(parseCaptureArgs(["oops", "x.log"]), { kind: "oops", out: "x.log" });
  t.same(parseCaptureArgs(["hung-task", "x.log", "--kernel", "debian:6.12", "--full", "/tmp/f"]), {
    kind: "hung-task",
    out: "x.log",
    kernel: "debian:6.12",
    full: "/tmp/f",
  });
  t.equal(parseCaptureArgs(["rcu-stall", "x.log"]), "not a capture kind: rcu-stall");
  t.equal(parseCaptureArgs(["oops", "x.txt"]), "one output file <out>.log");
  t.equal(parseCaptureArgs(["oops", "x.log", "y.log"]), "one output file <out>.log");
  t.equal(parseCaptureArgs(["oops", "x.log", "--kernel"]), "--kernel needs a value");
  t.equal(parseCaptureArgs(["oops", "x.log", "--update"]), "unknown option --update");
});
