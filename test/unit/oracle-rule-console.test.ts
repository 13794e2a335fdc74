// The console rule on hand-built observations: a clean slice passes, each kernel warning is a
// problem with the first lines of its call trace, and a slice whose end is uncertain (no barrier
// mark) cannot vouch for a clean console: ERROR, unless a warning already failed it. And the real
// reports of the debug kernel's checkers (test/fixtures/console/, captured from guests): each a FAIL
// named by its kind, with the stack of the function that broke the rule and, for KASAN, where the
// object was freed.
import t from "tap";
import { parseConsole } from "../../harness/console/parse.ts";
import type {
  ConsoleCutObservation,
  ConsoleObservation,
  StuckObservation,
} from "../../harness/protocol/observations.ts";
import { readGolden } from "../support/console-golden.ts";
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
/** A golden console log's events as the console observations a run records (harness/suite/judge-run.ts). */
const observationsOf = (golden: string): ConsoleObservation[] =>
  parseConsole(readGolden(golden).log).map((e) => ({
    ev: "console",
    kind: e.kind,
    text: e.text,
    trace: e.trace,
    ...(e.memoryStacks ? { memoryStacks: e.memoryStacks } : {}),
  }));
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

t.test(
  "real checker reports of a debug kernel fail the rule with their kind, stack and, for a use-after-free, the free",
  async (t) => {
    const cases: Array<[string, string, RegExp, string]> = [
      [
        "kasan-uaf-6.12-debug",
        "kasan",
        /^BUG: KASAN: slab-use-after-free in read_after_free\+/,
        "read_after_free",
      ],
      [
        "sleep-in-atomic-6.12-debug",
        "sleep-in-atomic",
        /^BUG: sleeping function called from invalid context/,
        "sleep_in_atomic",
      ],
      [
        "lockdep-6.12-debug",
        "lockdep",
        /WARNING: possible circular locking dependency detected/,
        "inverted_lock_order",
      ],
      ["refcount-6.12", "warn", /^WARNING: CPU: \d+ PID: \d+ at lib\/refcount\.c/, "refcount_from_zero"],
    ];
    for (const [golden, kind, text, fn] of cases) {
      const v = verdictOf(b, "console", "linux", observationsOf(golden));
      t.equal(v.verdict, "FAIL", golden);
      t.equal(v.problems?.length, 1, `${golden}: one report`);
      t.match(
        v.problems?.[0]?.reason,
        new RegExp(`^${kind}: ${text.source.replace(/^\^/, "")}`),
        `${golden}: its kind and text`,
      );
      t.match(
        v.problems?.[0]?.evidence?.join("\n"),
        new RegExp(`\\b${fn}\\+`),
        `${golden}: the stack names ${fn}`,
      );
    }
    const uaf = verdictOf(b, "console", "linux", observationsOf("kasan-uaf-6.12-debug"));
    const evidence = uaf.problems?.[0]?.evidence ?? [];
    t.ok(
      evidence.some((l) => /^Freed by task \d+:$/.test(l)),
      "KASAN's free stack is evidence",
    );
    t.ok(
      evidence
        .slice(evidence.findIndex((l) => l.startsWith("Freed by task")))
        .some((l) => l.startsWith("kfree+")),
      "with the kfree that freed the object",
    );
  },
);

t.test(
  "a KASAN report's verdict evidence (what verdicts.json and hil validate show) holds its access, allocation and free stacks within the evidence limit",
  async (t) => {
    const v = verdictOf(b, "console", "linux", observationsOf("kasan-uaf-6.12-debug"));
    t.equal(v.verdict, "FAIL");
    t.same(v.evidence, [
      "- kasan: BUG: KASAN: slab-use-after-free in read_after_free+0x40/0x53 [hil_oops]",
      // the access: its calls, without KASAN's own frames and the unwinder's stale "? " words
      "  read_after_free+0x40/0x53 [hil_oops]",
      "  hil_oops_init+0xc0/0x1000 [hil_oops]",
      "  do_one_initcall+0x147/0x2dc",
      "  Allocated by task 87:",
      "  read_after_free+0x27/0x53 [hil_oops]",
      "  hil_oops_init+0xc0/0x1000 [hil_oops]",
      "  do_one_initcall+0x147/0x2dc",
      "  Freed by task 87:",
      "  kfree+0x203/0x26e",
      "  read_after_free+0x37/0x53 [hil_oops]",
      "  hil_oops_init+0xc0/0x1000 [hil_oops]",
    ]);
  },
);
