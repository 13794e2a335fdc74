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
import { hil, hilRuns, hilWithRunDir, leftovers } from "../support/cli.ts";
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
    const { iso, run } = hilRuns(t);
    const ts = await run("ts", ["run"]);
    t.equal(ts.r.exitCode, 0, `hil run exits 0\n${ts.r.stderr.slice(-3000)}`);
    const rtl = await run("rtl", ["run", "--device-rtl"]);
    t.equal(rtl.r.exitCode, 0, `hil run --device-rtl exits 0\n${rtl.r.stderr.slice(-3000)}`);
    t.match(
      rtl.r.stderr,
      /\[device\] erdma \(erdma-reflush, RTL queue engine\)/,
      "the device server ran the RTL engine",
    );
    t.comment(
      `wall time: TypeScript engine ${(ts.ms / 1000).toFixed(1)} s, RTL engine ${(rtl.ms / 1000).toFixed(1)} s (ratio ${(rtl.ms / ts.ms).toFixed(2)})`,
    );
    const a = ruleCells(ts.dir);
    const b = ruleCells(rtl.dir);
    t.ok(Object.keys(a).length > 100, `${Object.keys(a).length} cells judged`);
    t.same(Object.keys(b).sort(), Object.keys(a).sort(), "the same scenarios and rule sets");
    for (const [cell, want] of Object.entries(a)) t.same(b[cell], want, cell);
    t.same(
      loadVerdicts(rtl.dir).device,
      { profile: "erdma-reflush", trace: "hw-trace.jsonl", rtl: "rtl" },
      "verdicts.json records the RTL engine",
    );
    const diff = await hil(["diff", "--traces", ts.dir, rtl.dir], iso.env);
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
    const { iso, dir, r } = await hilWithRunDir(["run", `--device-rtl=${bug}`, "--scenario", scenario], t);
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
    const { iso, run } = hilRuns(t);
    const scenario = "flush-behind-pending-success";
    const bug = await run("bug", ["run", "--device-rtl=flush-before-success", "--scenario", scenario]);
    t.equal(bug.r.exitCode, 1, `a FAIL: exit 1\n${bug.r.stdout.slice(-2000)}${bug.r.stderr.slice(-2000)}`);
    const judged = loadVerdicts(bug.dir).scenarios.find((x) => x.name === scenario);
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
    t.same(loadVerdicts(bug.dir).device?.rtl, "rtl+flush-before-success", "verdicts.json names the bug");

    const ok = await run("rtl", ["run", "--device-rtl", "--scenario", scenario]);
    t.equal(ok.r.exitCode, 0, `as designed: exit 0\n${ok.r.stdout.slice(-2000)}${ok.r.stderr.slice(-2000)}`);
    const cells = ruleCells(ok.dir);
    t.ok(Object.keys(cells).length >= 3, "judged under every rule set");
    for (const [cell, c] of Object.entries(cells)) {
      t.equal(c.verdict, "PASS", `${cell}: PASS`);
      t.equal(c.rules["4"], "PASS", `${cell}: rule 4 PASS`);
    }
    // the situation happened: the flush met the pending success and was held behind it
    const hw = readFileSync(`${ok.dir}/traces/${scenario}.hw.jsonl`, "utf8");
    t.match(
      hw,
      /"kind":"wait",.*"reason":"flush held \(erdma_flush_step\.hold\): the completion of WQE \d+ is not written yet"/,
      "the device's trace: the RTL held the flush behind the pending success",
    );
    t.notMatch(hw, /"overtook"/, "no flush completion overtook it");
    t.comment(
      `wall time: with the bug ${(bug.ms / 1000).toFixed(1)} s, as designed ${(ok.ms / 1000).toFixed(1)} s`,
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  },
);
