// hil bisect's output (harness/cli/bisect-command.ts renderBisect): the steps in the order they
// ran, the culprit as a patch or as a commit with the FAILs that made its step bad, and an
// inconclusive bisection's reason.
import t from "tap";
import { renderBisect } from "../../harness/cli/bisect-command.ts";
import type { BisectResult, BisectStep } from "../../harness/workflows/bisect/bisect.ts";

const step = (patches: number, word: BisectStep["word"], why: string[] = []): BisectStep => ({
  patches,
  word,
  runDir: `steps/${String(patches).padStart(3, "0")}-patches`,
  counts: word === "bad" ? "6 PASS, 3 FAIL" : "9 PASS",
  why,
  wallMs: 1000,
});

const base: BisectResult = {
  series: {
    path: "/s.mbox",
    patches: [1, 2, 3, 4].map((index) => ({ index, subject: `p${index}`, source: `s.mbox #${index}` })),
  },
  spec: { kernel: "debian:6.12", driver: "erdma", executor: "kernel", scenarios: "post-send-in-error" },
  steps: [
    step(4, "bad", ["a[linux]: rule 1: WR 1000"]),
    step(0, "good"),
    step(2, "good"),
    step(3, "bad", ["a[linux]: rule 1: WR 1000"]),
  ],
  searchSteps: 2,
  wallMs: 61_400,
  exitCode: 0,
};

t.test("a culprit patch, with its step's FAILs", async (t) => {
  const out = renderBisect(
    { ...base, culprit: { index: 3, subject: "p3", source: "s.mbox #3", runDir: "steps/003-patches" } },
    "/r",
  );
  t.match(out, /^ {2}first 4\/4 {6}bad {3}6 PASS, 3 FAIL {2}steps\/004-patches$/m);
  t.match(out, /^ {2}base {11}good {2}9 PASS {2}steps\/000-patches$/m);
  t.match(out, /^first bad patch: 3\/4 "p3" \(s\.mbox #3\)\n {2}a\[linux\]: rule 1: WR 1000\n/m);
  t.match(out, /hil report \/r\/steps\/003-patches --format kcidb/);
  t.match(
    out,
    /^hil bisect: patch 3\/4 is the first bad one \(2 step\(s\) between the ends, 4 run\(s\) in 61s\)$/m,
  );
});

t.test("a culprit commit is named by its hash", async (t) => {
  const sha = "0123456789abcdef0123456789abcdef01234567";
  const out = renderBisect(
    {
      ...base,
      culprit: { index: 3, subject: "p3", source: "range.mbox #3", commit: sha, runDir: "steps/003-patches" },
    },
    "/r",
  );
  t.match(out, new RegExp(`^first bad commit: ${sha} "p3" \\(3/4 of the range\\)$`, "m"));
  t.match(out, /^hil bisect: commit 0123456789ab \(3\/4\) is the first bad one/m);
});

t.test("inconclusive: the reason, no culprit", async (t) => {
  const out = renderBisect(
    { ...base, steps: [step(4, "good")], searchSteps: 0, exitCode: 3, inconclusive: "nothing to bisect" },
    "/r",
  );
  t.match(out, /^no culprit: nothing to bisect$/m);
  t.match(out, /^hil bisect: inconclusive \(0 step\(s\) between the ends, 1 run\(s\)/m);
  t.notMatch(out, /first bad/);
});
