// The RTL queue engine on real guests (issue 32): README command 1 (`hil run`: debian:6.12, the
// erdma-reflush profile, every scenario meant for the kernel executor) on the TypeScript engine
// and with `--device-rtl` (the device server co-simulating qemu/erdma/rtl under Verilator), in one
// session. Both exit 0 with the same verdict per scenario and rule set and every rule's verdict,
// and `hil diff --traces` finds no difference in their completion streams. Then each planted RTL
// bug on the scenarios it breaks: a FAIL on the rule it breaks, naming what was lost.
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { loadVerdicts } from "../support/verdicts.ts";

t.setTimeout(40 * 60 * 1000);

type Cells = Record<string, { verdict: string; rules: Record<string, string> }>;

function cellsOf(dir: string): Cells {
  const cells: Cells = {};
  for (const s of loadVerdicts(dir).scenarios)
    for (const j of s.judgements)
      cells[`${s.name}[${j.profile}]`] = {
        verdict: j.verdict,
        rules: Object.fromEntries(j.rules.map((x) => [String(x.rule), x.verdict])),
      };
  return cells;
}

function ruleOf(dir: string, scenario: string) {
  const s = loadVerdicts(dir).scenarios.find((x) => x.name === scenario);
  return s?.judgements.flatMap((j) =>
    j.rules.filter((r) => r.verdict === "FAIL").map((r) => `${r.rule}: ${r.reason ?? ""}`),
  );
}

t.test(
  "the default suite on the TypeScript engine and on the RTL engine: the same verdicts and completions",
  async (t) => {
    const iso = isolate();
    const root = t.testdir({});
    const started = Date.now();
    const ts = await hil(["run", "--run-dir", `${root}/ts`], iso.env);
    const tsMs = Date.now() - started;
    t.equal(ts.exitCode, 0, `hil run exits 0\n${ts.stderr.slice(-3000)}`);
    const rtlStarted = Date.now();
    const rtl = await hil(["run", "--device-rtl", "--run-dir", `${root}/rtl`], iso.env);
    const rtlMs = Date.now() - rtlStarted;
    t.equal(rtl.exitCode, 0, `hil run --device-rtl exits 0\n${rtl.stderr.slice(-3000)}`);
    t.match(
      rtl.stderr,
      /\[device\] erdma \(erdma-reflush, RTL queue engine\)/,
      "the device server ran the RTL engine",
    );
    t.comment(
      `wall time: TypeScript engine ${(tsMs / 1000).toFixed(1)} s, RTL engine ${(rtlMs / 1000).toFixed(1)} s (ratio ${(rtlMs / tsMs).toFixed(2)})`,
    );
    const a = cellsOf(`${root}/ts`);
    const b = cellsOf(`${root}/rtl`);
    t.ok(Object.keys(a).length > 100, `${Object.keys(a).length} cells judged`);
    t.same(Object.keys(b).sort(), Object.keys(a).sort(), "the same scenarios and rule sets");
    for (const [cell, want] of Object.entries(a)) t.same(b[cell], want, cell);
    t.same(
      loadVerdicts(`${root}/rtl`).device,
      { profile: "erdma-reflush", trace: "hw-trace.jsonl", rtl: "rtl" },
      "verdicts.json records the RTL engine",
    );
    const diff = await hil(["diff", "--traces", `${root}/ts`, `${root}/rtl`], iso.env);
    t.equal(diff.exitCode, 0, `hil diff --traces exits 0\n${diff.stdout.slice(-2000)}`);
    t.match(diff.stdout, /no difference \(\d+ scenarios, \d+ WRs and drains compared\)/);
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  },
);

for (const [bug, scenario, rule] of [
  [
    "flush-skip-wrap",
    "cq-wraps-then-drain",
    /^5: qp rq WR \d+ \(posted in RTS\) never completed though qp ended in ERR/,
  ],
  ["owner-stuck", "cq-wraps-then-drain", /^1: the drain's sq marker post to qp in ERR returned -12/],
] as const) {
  t.test(`planted RTL bug ${bug}: ${scenario} FAILs on the rule it breaks`, async (t) => {
    const iso = isolate();
    const dir = t.testdir({});
    const r = await hil(["run", `--device-rtl=${bug}`, "--scenario", scenario, "--run-dir", dir], iso.env);
    t.equal(r.exitCode, 1, `a FAIL: exit 1\n${r.stdout.slice(-2000)}${r.stderr.slice(-2000)}`);
    const fails = ruleOf(dir, scenario) ?? [];
    t.ok(fails.length > 0, `${scenario} has failed rules`);
    t.ok(
      fails.some((f) => rule.test(f)),
      `the rule it breaks: ${fails.join(" | ")}`,
    );
    t.same(loadVerdicts(dir).device?.rtl, `rtl+${bug}`, "verdicts.json names the planted bug");
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  });
}
