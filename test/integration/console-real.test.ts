// The console fixtures are real: capture them again from real guests (test/support/console-capture.ts:
// a hung drain on Linux 6.1 with erdma-2022, __ib_drain_rq's WARN on Linux 6.12 with siw) and
// check the parser extracts from the fresh logs what it extracts from the stored ones.
import { readFileSync } from "node:fs";
import t from "tap";
import { parseBlockedTasks, parseConsole } from "../../harness/console/parse.ts";
import { capture } from "../support/console-capture.ts";

t.setTimeout(20 * 60 * 1000);

const stored = (name: string) =>
  readFileSync(new URL(`../fixtures/console/${name}`, import.meta.url), "utf8");
const fns = (frames: { fn: string }[]) => frames.map((f) => f.fn);

t.test("hung task: Linux 6.1, erdma-2022, ib_drain_qp that never returns", async (t) => {
  const fresh = await capture("hung-task");
  const [now] = parseConsole(fresh.excerpt);
  const [then] = parseConsole(stored("hung-task-6.1-erdma-2022.log"));
  t.equal(now?.kind, "hung-task");
  t.match(now?.text ?? "", /^INFO: task hil_kverbs:\d+ blocked for more than 10 seconds\.$/);
  t.equal(now?.process?.comm, "hil_kverbs");
  t.same(fns(now?.frames ?? []), fns(then?.frames ?? []), "the same stack as the stored log");
  t.ok(fns(now?.frames ?? []).includes("__ib_drain_sq"), "stuck in __ib_drain_sq");
  const blocked = parseBlockedTasks(fresh.log);
  t.ok(
    blocked.some((b) => b.process.pid === now?.process?.pid && fns(b.frames).includes("__ib_drain_sq")),
    "sysrq-w lists the same task in the drain",
  );
});

t.test("WARN: Linux 6.12, siw, ib_drain_qp of a QP without a receive queue", async (t) => {
  const fresh = await capture("drain-warn");
  const events = parseConsole(fresh.log);
  t.same(
    events.map((e) => e.kind),
    ["warn"],
    "the whole console has exactly this one report",
  );
  const [then] = parseConsole(stored("drain-warn-6.12-siw.log"));
  t.equal(events[0]?.at, then?.at);
  t.equal(events[0]?.rip, then?.rip);
  t.equal(events[0]?.message, "failed to drain recv queue: -22");
  t.equal(events[0]?.process?.comm, "hil_kverbs");
  t.same(fns(events[0]?.frames ?? []), fns(then?.frames ?? []));
});
