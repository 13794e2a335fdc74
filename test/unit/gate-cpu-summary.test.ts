import t from "tap";
import { parseGateCpuLog, summarizeGateCpu } from "../../harness/bench/gate-cpu-summary.ts";

const ROOT = "/repo";
const line = (file: string, selfS: number, childrenS: number, wallS: number) =>
  JSON.stringify({ file: `${ROOT}/${file}`, selfS, childrenS, wallS });

t.test("files are summed by tier and ranked by their CPU with the children they reaped", async (t) => {
  const text = [
    line("test/unit/a.test.ts", 1, 0, 2),
    line("test/integration/boot.test.ts", 2, 30, 40),
    line("test/integration/small.test.ts", 1, 5, 8),
    line("test/faults/freeze.test.ts", 3, 8, 90),
    "",
  ].join("\n");
  const s = summarizeGateCpu(parseGateCpuLog(text), ROOT, 2);
  t.equal(s.files, 4);
  t.equal(s.cpuS, 50);
  t.equal(s.wallSumS, 140);
  t.same(
    s.byTier.map((x) => [x.tier, x.files, x.cpuS]),
    [
      ["integration", 2, 38],
      ["faults", 1, 11],
      ["unit", 1, 1],
    ],
  );
  t.same(
    s.top.map((r) => [r.file, r.cpuS, r.share]),
    [
      ["test/integration/boot.test.ts", 32, 0.64],
      ["test/faults/freeze.test.ts", 11, 0.22],
    ],
    "the top N only, most first, paths relative to the repository",
  );
});

t.test("a line that is not a test file's record is an error naming its number", async (t) => {
  t.throws(() => parseGateCpuLog(`${line("test/unit/a.test.ts", 1, 0, 1)}\n{"file":"x"}\n`), {
    message: /line 2: not a test file's record/,
  });
  t.throws(() => parseGateCpuLog("not json\n"), SyntaxError);
});

t.test("bench:gate refuses a bad --top or --jobs before it starts tap", async (t) => {
  const { execa } = await import("execa");
  for (const [flag, value] of [
    ["--top", "0"],
    ["--jobs", "two"],
  ] as const) {
    const r = await execa("node", ["--import", "tsx", "harness/bench/gate-cpu.ts", flag, value], {
      reject: false,
      all: true,
    });
    t.not(r.exitCode, 0, `${flag} ${value} fails`);
    t.match(r.all, new RegExp(`${flag} ${value}: a whole number >= 1`), "and says which option and why");
    t.notMatch(r.all, /TAP version|# Subtest/, "no test ran");
  }
});
