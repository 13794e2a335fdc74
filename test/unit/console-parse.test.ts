import { readFileSync } from "node:fs";
import t from "tap";
import { parseConsole } from "../../harness/console/parse.ts";

const log = readFileSync(new URL("../fixtures/console/warn-and-hung.log", import.meta.url), "utf8");

t.test("finds a WARN with its call trace", async (t) => {
  const events = parseConsole(log);
  const warn = events.find((e) => e.kind === "warn");
  t.ok(warn);
  t.equal(warn?.line, 4);
  t.match(warn?.text ?? "", /^WARNING: CPU: 0 PID: 123 at drivers\/infiniband\/core\/verbs\.c:2770/);
  t.same(warn?.trace, ["? __warn+0x80/0x130", "ib_drain_qp+0x10/0x30 [ib_core]"]);
});

t.test("finds a hung task with the stack that shows where it is stuck", async (t) => {
  const hung = parseConsole(log).find((e) => e.kind === "hung-task");
  t.match(hung?.text ?? "", /INFO: task kworker\/0:1:45 blocked for more than 10 seconds/);
  t.ok(hung?.trace.some((l) => l.startsWith("__ib_drain_sq")));
  t.equal(hung?.trace.length, 4);
});

t.test("finds BUG and Oops lines", async (t) => {
  const kinds = parseConsole(log).map((e) => e.kind);
  t.same(kinds, ["warn", "hung-task", "bug", "oops"]);
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
