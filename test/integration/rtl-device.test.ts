// The RTL queue engine on real guests (issue 32): README command 1 (`hil run`: debian:6.12, the
// erdma-reflush profile, every scenario meant for the kernel executor) on the TypeScript engine
// and with `--device-rtl` (the device server co-simulating qemu/erdma/rtl under Verilator), in one
// session. Both exit 0 with the same verdict per scenario and rule set and every rule's verdict,
// and `hil diff --traces` finds no difference in their completion streams. Then each planted RTL
// bug on the scenarios it breaks: a FAIL on the rule it breaks, naming what was lost, its evidence
// quoting the hardware trace's flush event that names the RTL signal behind it; the same scenario
// PASSes on the RTL as designed.
import { readFileSync } from "node:fs";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { loadVerdicts, ruleCells } from "../support/verdicts.ts";

t.setTimeout(40 * 60 * 1000);

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
    const a = ruleCells(`${root}/ts`);
    const b = ruleCells(`${root}/rtl`);
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

/** The evidence lines of a scenario's failed rules (every rule set). */
function failEvidence(dir: string, scenario: string): string[] {
  const s = loadVerdicts(dir).scenarios.find((x) => x.name === scenario);
  return (s?.judgements ?? []).flatMap((j) =>
    j.rules.filter((r) => r.verdict === "FAIL").flatMap((r) => r.evidence ?? []),
  );
}

for (const [bug, scenario, rule, evidence] of [
  [
    "flush-skip-wrap",
    "cq-wraps-then-drain",
    /^5: qp rq WR \d+ \(posted in RTS\) never completed though qp ended in ERR/,
    /^hw flush @[\d.]+ms .*"skipped":\{"wqes":\[\d+\],"origin":"erdma_flush_step\.complete"\}/,
  ],
  [
    "owner-stuck",
    "cq-wraps-then-drain",
    /^1: the drain's sq marker post to qp in ERR returned -12/,
    undefined,
  ],
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
    if (evidence)
      t.ok(
        failEvidence(dir, scenario).some((e) => evidence.test(e)),
        "the evidence quotes the flush event naming the RTL signal that withheld the completion",
      );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  });
}

t.test(
  "planted RTL bug flush-before-success: a flush completion overtakes a success still on its way, rule 4 FAILs naming the RTL signal; as designed the same scenario PASSes",
  async (t) => {
    const iso = isolate();
    const root = t.testdir({});
    const scenario = "flush-behind-pending-success";
    const started = Date.now();
    const bug = await hil(
      ["run", "--device-rtl=flush-before-success", "--scenario", scenario, "--run-dir", `${root}/bug`],
      iso.env,
    );
    const bugMs = Date.now() - started;
    t.equal(bug.exitCode, 1, `a FAIL: exit 1\n${bug.stdout.slice(-2000)}${bug.stderr.slice(-2000)}`);
    const judged = loadVerdicts(`${root}/bug`).scenarios.find((x) => x.name === scenario);
    t.same(
      judged?.premise?.held,
      true,
      "the premise held: the delayed success fired, a SEND posted in ERROR",
    );
    for (const j of judged?.judgements ?? []) {
      const rule4 = j.rules.find((r) => r.rule === "4");
      t.equal(rule4?.verdict, "FAIL", `${j.profile}: rule 4 FAILs`);
      t.match(
        rule4?.reason,
        /^qp sq: WR 1001 completed after WR 1002, which was posted later/,
        `${j.profile}: the WRITE's success came after the SEND's flush`,
      );
      t.ok(
        (rule4?.evidence ?? []).some((e) =>
          /^hw flush @[\d.]+ms .*"overtook":\{"wqes":\[\d+\],"pending":\[\d+\],"origin":"erdma_flush_step\.complete"\}/.test(
            e,
          ),
        ),
        `${j.profile}: rule 4's evidence quotes the flush event naming the RTL signal (erdma_flush_step.complete)`,
      );
    }
    t.same(
      loadVerdicts(`${root}/bug`).device?.rtl,
      "rtl+flush-before-success",
      "verdicts.json names the bug",
    );

    const designedStarted = Date.now();
    const ok = await hil(
      ["run", "--device-rtl", "--scenario", scenario, "--run-dir", `${root}/rtl`],
      iso.env,
    );
    const okMs = Date.now() - designedStarted;
    t.equal(ok.exitCode, 0, `as designed: exit 0\n${ok.stdout.slice(-2000)}${ok.stderr.slice(-2000)}`);
    const cells = ruleCells(`${root}/rtl`);
    t.ok(Object.keys(cells).length >= 3, "judged under every rule set");
    for (const [cell, c] of Object.entries(cells)) {
      t.equal(c.verdict, "PASS", `${cell}: PASS`);
      t.equal(c.rules["4"], "PASS", `${cell}: rule 4 PASS`);
    }
    // the situation happened: the flush met the pending success and was held behind it
    const hw = readFileSync(`${root}/rtl/traces/${scenario}.hw.jsonl`, "utf8");
    t.match(
      hw,
      /"kind":"wait",.*"reason":"flush held \(erdma_flush_step\.hold\): the completion of WQE \d+ is not written yet"/,
      "the device's trace: the RTL held the flush behind the pending success",
    );
    t.notMatch(hw, /"overtook"/, "no flush completion overtook it");
    t.comment(
      `wall time: with the bug ${(bugMs / 1000).toFixed(1)} s, as designed ${(okMs / 1000).toFixed(1)} s`,
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  },
);
