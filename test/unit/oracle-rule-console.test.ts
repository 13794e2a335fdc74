// The console rule on hand-built observations: a clean slice passes, each kernel warning is a
// problem with the first lines of its call trace, and a slice whose end is uncertain (no barrier
// mark) cannot vouch for a clean console: ERROR, unless a warning already failed it.
import t from "tap";
import type {
  ConsoleCutObservation,
  ConsoleObservation,
  StuckObservation,
} from "../../harness/oracle/observations.ts";
import { pair, verdictOf } from "../support/oracle-trace.ts";

const b = pair().modify("qp", "ERR");
const cut: ConsoleCutObservation = { ev: "console-cut", reason: "the barrier mark did not show within 5 s" };
const stuck: StuckObservation = { ev: "stuck", step: 0, op: "poll", ms: 100, stack: "", state: "S" };
const frames = Array.from({ length: 12 }, (_, i) => `frame${i}+0x1/0x2`);
const warn: ConsoleObservation = {
  ev: "console",
  kind: "warn",
  text: "WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2",
  trace: frames,
};
const lockdep: ConsoleObservation = {
  ev: "console",
  kind: "lockdep",
  text: "possible recursive locking",
  trace: [],
};

t.test("no kernel event: PASS", async (t) => {
  for (const observations of [[], [stuck]]) {
    const v = verdictOf(b, "console", "ib", observations);
    t.same([v.verdict, v.reason, v.judged], ["PASS", "no kernel warnings on the console", 1]);
  }
});

t.test("each kernel event is a problem: its kind, its text, ten lines of its trace", async (t) => {
  const v = verdictOf(b, "console", "ib", [warn, stuck, lockdep]);
  t.equal(v.verdict, "FAIL");
  t.equal(v.judged, 1, "the console slice");
  t.same(
    v.problems?.map((p) => p.reason),
    ["warn: WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2", "lockdep: possible recursive locking"],
  );
  t.same(v.problems?.[0]?.evidence, frames.slice(0, 10));
  t.same(v.problems?.[1]?.evidence, []);
});

t.test(
  "a slice without a certain end: ERROR with the cut's reason, unless a warning failed it",
  async (t) => {
    for (const observations of [[cut], [stuck, cut]]) {
      const v = verdictOf(b, "console", "ib", observations);
      t.same(
        [v.verdict, v.reason, v.judged, v.applies],
        [
          "ERROR",
          "the scenario's console slice has no certain end: the barrier mark did not show within 5 s",
          0,
          true,
        ],
      );
    }
    const failed = verdictOf(b, "console", "ib", [cut, warn]);
    t.same([failed.verdict, failed.problems?.length], ["FAIL", 1], "a warning seen is a FAIL all the same");
  },
);
