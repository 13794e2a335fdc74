// The default suite's verdicts do not move when the harness changes how it runs them (issue 14:
// batching, barriers, trace slicing, ordering): README command 1 (`hil run`: debian:6.12, the
// emulated erdma with erdma-reflush, the kernel executor, every scenario meant for it) judged
// cell by cell, each scenario and rule set's verdict and every rule's verdict, against
// test/fixtures/verdicts/default-suite.json. A change that is meant to move a verdict (a new rule,
// a new scenario, a fixed model) updates the file in the same commit: HIL_GOLDEN_UPDATE=1 writes
// it from this run, and the diff shows what moved.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";
import { loadVerdicts } from "../support/verdicts.ts";

t.setTimeout(30 * 60 * 1000);

const GOLDEN = join(REPO_ROOT, "test/fixtures/verdicts/default-suite.json");

interface Cell {
  verdict: string;
  rules: Record<string, string>;
}

t.test("the default suite judges every cell as the golden record says", async (t) => {
  const iso = isolate();
  const dir = t.testdir({});
  const r = await hil(["run", "--run-dir", dir], iso.env);
  t.equal(r.exitCode, 0, `README command 1 exits 0\n${r.stdout.slice(-3000)}${r.stderr.slice(-3000)}`);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  const run = loadVerdicts(dir);
  const cells: Record<string, Cell> = {};
  for (const s of run.scenarios)
    for (const j of s.judgements)
      cells[`${s.name}[${j.profile}]`] = {
        verdict: j.verdict,
        rules: Object.fromEntries(j.rules.map((x) => [String(x.rule), x.verdict])),
      };
  const golden = JSON.parse(readFileSync(GOLDEN, "utf8")) as { cells: Record<string, Cell> };
  if (process.env.HIL_GOLDEN_UPDATE) {
    writeFileSync(GOLDEN, `${JSON.stringify({ ...golden, cells }, null, 2)}\n`);
    t.comment(`wrote ${GOLDEN}`);
  }
  t.same(Object.keys(cells).sort(), Object.keys(golden.cells).sort(), "the same scenarios and rule sets");
  for (const [cell, want] of Object.entries(golden.cells)) t.same(cells[cell], want, cell);
  t.ok(
    Object.values(golden.cells).some((c) => c.verdict === "PASS") &&
      Object.values(golden.cells).some((c) => c.verdict === "XFAIL"),
    "the record holds passes and expected failures to compare",
  );
});
