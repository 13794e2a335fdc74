// hil bisect's search over a series' prefixes (harness/workflows/bisect/bisect.ts), judged by a table
// instead of real runs: the first bad patch found in ceil(log2(n)) steps wherever it sits, skipped
// prefixes stepped around as git bisect skip does, and a step's word from its verdicts.
import t from "tap";
import type { CheckResult } from "../../harness/verdict.ts";
import {
  nextPrefix,
  type StepWord,
  searchPrefixes,
  stepWord,
} from "../../harness/workflows/bisect/bisect.ts";

t.test("the first bad patch of n in ceil(log2(n)) steps, wherever it is", async (t) => {
  for (let n = 1; n <= 33; n++) {
    for (let culprit = 1; culprit <= n; culprit++) {
      const judged: number[] = [];
      const r = await searchPrefixes(n, async (k) => {
        judged.push(k);
        return k >= culprit ? "bad" : "good";
      });
      if (r.bad !== culprit || r.good !== culprit - 1)
        t.fail(`n ${n}, culprit ${culprit}: found good ${r.good}, bad ${r.bad}`);
      if (r.searchSteps > Math.ceil(Math.log2(n)))
        t.fail(`n ${n}, culprit ${culprit}: ${r.searchSteps} steps (${judged.join(",")})`);
      if (new Set(judged).size !== judged.length) t.fail(`n ${n}: a prefix judged twice`);
    }
  }
  t.pass("every culprit of every series of 1 to 33 patches");
  const four = await searchPrefixes(4, async (k) => (k >= 3 ? "bad" : "good"));
  t.same(four, { good: 2, bad: 3, searchSteps: 2 }, "four patches, the third bad: two steps");
});

t.test("skipped prefixes are stepped around; a gap stays when they decide", async (t) => {
  t.equal(nextPrefix(0, 8, new Set()), 4, "the middle first");
  t.equal(nextPrefix(0, 8, new Set([4])), 5, "then the nearest beside it");
  t.equal(nextPrefix(0, 8, new Set([4, 5])), 3);
  t.equal(nextPrefix(0, 1, new Set()), undefined, "adjacent ends: nothing between");
  t.equal(nextPrefix(2, 5, new Set([3, 4])), undefined, "every prefix between skipped");
  const words: Record<number, StepWord> = { 1: "good", 2: "skip", 3: "bad", 4: "bad" };
  const r = await searchPrefixes(4, async (k) => words[k] ?? "bad");
  t.same({ good: r.good, bad: r.bad }, { good: 1, bad: 3 }, "the culprit is 2 or 3: prefix 2 could not tell");
  const culpritAfterSkip = await searchPrefixes(8, async (k) => (k === 4 ? "skip" : k >= 6 ? "bad" : "good"));
  t.same(
    { good: culpritAfterSkip.good, bad: culpritAfterSkip.bad },
    { good: 5, bad: 6 },
    "a skip beside the middle does not hide the culprit",
  );
});

t.test("a step's word: any FAIL is bad, else an ERROR or MISS is a skip", async (t) => {
  const r = (id: string, verdict: CheckResult["verdict"], reason = "r"): CheckResult =>
    ({ id, verdict, reason }) as CheckResult;
  t.same(stepWord([r("a[ib]", "PASS"), r("b[ib]", "XFAIL")]), { word: "good", why: [] }, "an XFAIL is good");
  t.same(stepWord([r("a[ib]", "PASS"), r("b[ib]", "FAIL", "rule 1")]), {
    word: "bad",
    why: ["b[ib]: rule 1"],
  });
  t.same(stepWord([r("a[ib]", "ERROR", "QEMU died"), r("b[ib]", "FAIL", "x")]).word, "bad", "a FAIL wins");
  t.same(stepWord([r("a[ib]", "MISS", "not run")]), { word: "skip", why: ["a[ib]: MISS not run"] });
});
