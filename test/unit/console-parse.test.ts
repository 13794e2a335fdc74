// The console parser on REAL console logs captured from real guests by test/support/console-capture.ts
// (each fixture's first line says how), plus a labelled hand-written one for the kinds no run here
// has produced (BUG, Oops, panic) and one-line checks of the remaining table rows.
import { readFileSync } from "node:fs";
import t from "tap";
import { parseBlockedTasks, parseConsole, parseFrame } from "../../harness/console/parse.ts";
import { excerpt, fixtureHeader } from "../support/console-capture.ts";

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/console/${name}`, import.meta.url), "utf8");

const HUNG = fixture("hung-task-6.1-erdma-2022.log");
const WARN = fixture("drain-warn-6.12-siw.log");
const HAND = fixture("hand-written-bug-oops.log");

const fnNames = (frames: { fn: string }[]) => frames.map((f) => f.fn);

t.test("fixtures say where they come from", async (t) => {
  t.match(
    HUNG.split("\n")[0],
    /^# REAL console log \(hung-task\): Linux 6\.1\.\d+ \(debian:6\.1\).*drain qp=b which=qp/,
  );
  t.match(WARN.split("\n")[0], /^# REAL console log \(drain-warn\): Linux 6\.12\.\d+ \(debian:6\.12\).*rq=0/);
  t.match(HAND.split("\n")[0], /^# HAND-WRITTEN, not captured/);
});

t.test("real hung task (Linux 6.1, erdma-2022): the stuck drain, its task and its stack", async (t) => {
  const events = parseConsole(HUNG);
  t.same(
    events.map((e) => e.kind),
    ["hung-task"],
    "one event: the sysrq-w dump after it is not a problem report",
  );
  const hung = events[0];
  t.equal(hung?.text, "INFO: task hil_kverbs:74 blocked for more than 10 seconds.");
  t.equal(hung?.line, 2, "the line after the header");
  t.same(hung?.process, { comm: "hil_kverbs", pid: 74 });
  t.same(
    fnNames(hung?.frames ?? []).slice(0, 8),
    [
      "__schedule",
      "schedule",
      "schedule_timeout",
      "usleep_range_state",
      "__wait_for_common",
      "__ib_drain_sq",
      "ib_sg_to_pages",
      "ib_drain_qp",
    ],
    "the frames in order, up from the scheduler",
  );
  t.equal(hung?.frames.length, 17);
  t.same(
    hung?.frames.find((f) => f.fn === "__ib_drain_sq"),
    { fn: "__ib_drain_sq", offset: 0x11a, size: 0x124, module: "ib_core", reliable: false },
    "no frame pointers: every frame is a '?' guess",
  );
  t.equal(hung?.frames.at(-1)?.fn, "ret_from_fork");
  t.equal(hung?.trace[0], "? __schedule+0x2f0/0x321", "trace keeps the raw lines");
  t.equal(HUNG.split("\n")[(hung?.endLine ?? 0) - 1]?.trim().endsWith("</TASK>"), true, "ends at </TASK>");
});

t.test("real sysrq-w dump: the blocked task with the same stack", async (t) => {
  const tasks = parseBlockedTasks(HUNG);
  t.equal(tasks.length, 1);
  t.same(tasks[0]?.process, { comm: "hil_kverbs", pid: 74 });
  t.equal(tasks[0]?.state, "D");
  t.same(fnNames(tasks[0]?.frames ?? []), fnNames(parseConsole(HUNG)[0]?.frames ?? []));
  t.same(parseBlockedTasks(WARN), [], "no sysrq-w in the WARN log");
});

t.test("real WARN (Linux 6.12, siw): __ib_drain_rq's WARN_ONCE with its message", async (t) => {
  const events = parseConsole(WARN);
  t.same(
    events.map((e) => e.kind),
    ["warn"],
  );
  const w = events[0];
  t.equal(
    w?.text,
    "WARNING: CPU: 0 PID: 84 at drivers/infiniband/core/verbs.c:2888 __ib_drain_rq+0xd3/0x114 [ib_core]",
  );
  t.equal(w?.at, "drivers/infiniband/core/verbs.c:2888");
  t.equal(w?.rip, "__ib_drain_rq+0xd3/0x114 [ib_core]");
  t.equal(w?.message, "failed to drain recv queue: -22", "the WARN_ONCE text before the WARNING line");
  t.same(w?.process, { comm: "hil_kverbs", pid: 84 }, "from the 6.12 CPU line (with UID:)");
  t.same(fnNames(w?.frames ?? []), [
    "__ib_qp_event_handler",
    "kv_op_drain",
    "kv_execute",
    "kv_execute",
    "kv_execute",
    "kv_worker",
    "sched_feat_write",
    "kthread",
    "kthread_park",
    "ret_from_fork",
    "kthread_park",
    "ret_from_fork_asm",
  ]);
  t.equal(w?.frames[1]?.module, "hil_kverbs");
  t.match(
    WARN.split("\n")[(w?.endLine ?? 0) - 1] ?? "",
    /---\[ end trace/,
    "the report ends at its end marker",
  );
});

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
