import t from "tap";
import { phaseRows, phasesOf } from "../../harness/bench/warm-split.ts";

const LINES = [
  { ms: 2300, text: "[kernel] debian:6.12: cached (d8a37265dfd9a2b9)" },
  { ms: 3100, text: "[suite] 48 scenario(s) on erdma, kernel executor, 2 guests ..." },
  { ms: 3150, text: "[device] erdma (erdma-reflush) ..." },
  { ms: 3400, text: "[device] erdma (erdma-reflush): server pid 8253 in 0s" },
  { ms: 3600, text: "[device] erdma (erdma-reflush): server pid 8252 in 1s" },
  { ms: 11900, text: "[guest] booting (tcg): SSH on 127.0.0.1:36533 after 8.2 s in 8s" },
  { ms: 11950, text: "[guest] booting (tcg): SSH on 127.0.0.1:37483 after 8.4 s in 8s" },
  {
    ms: 18200,
    text: "[suite] 48 scenario(s) on erdma, kernel executor, 2 guests [#######---]  29% 14/48 fault-wrong-cq (15s)",
  },
  {
    ms: 31000,
    text: "[suite] 48 scenario(s) on erdma, kernel executor, 2 guests: 48 scenario(s), 2 boot(s) in 28s",
  },
  { ms: 31100, text: "[run] run directory: /tmp/ws/r2" },
];

t.test("the phases of a warm run from its progress lines", async (t) => {
  const p = phasesOf(LINES, 31130);
  t.same(p, {
    suiteStart: 3100,
    devicesUp: [3400, 3600],
    guestsUp: [11900, 11950],
    suiteEnd: 31000,
    runDir: 31100,
    exit: 31130,
  });
  t.same(
    phaseRows(p).map((r) => [r.from, r.to]),
    [
      [0, 3100],
      [3100, 3600],
      [3600, 11900],
      [11900, 11950],
      [11900, 31000],
      [31000, 31130],
    ],
  );
});

t.test("a run that stopped early leaves the phases it did not reach open", async (t) => {
  const p = phasesOf(LINES.slice(0, 3), 5000);
  t.same(p, { suiteStart: 3100, devicesUp: [], guestsUp: [], exit: 5000 });
  const rows = phaseRows(p);
  t.equal(rows[1]?.to, undefined);
  t.equal(rows[2]?.from, undefined);
  t.equal(rows.at(-1)?.to, 5000);
});
