// shared-cq-destroy-unpolled on a real debian:6.12 guest with the emulated erdma: the peer is
// destroyed while the device's 8 CQEs of its receives are unpolled in the CQ it shares with the
// QP, and the CQ is polled after; erdma skips them (erdma_cq.c erdma_poll_one_cqe,
// ERDMA_POLLCQ_NO_QP), every rule holds and the premise device_destroyed_with_unpolled_cqes is
// read off both traces. A copy that polls the peer's completions before the destroy leaves none
// in the CQ: the same condition does not hold there, and the run is a MISS naming it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { fixtureScenario, hilRuns, leftovers } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(15 * 60 * 1000);

t.test("a destroyed QP's unpolled CQEs in a shared CQ: skipped, and the premise seen", async (t) => {
  const { iso, root, run } = hilRuns(t);
  const written = fixtureScenario("shared-cq-destroy-unpolled");
  // every completion polled before the destroy: 8 of the QP's receives, 8 of the peer's, the send
  const polledFirst = written
    .replace(/^(\s+)- destroy: \{ on: peer \}$/m, "$1- poll: { cq: send, min: 17, wait_ms: 5000 }\n$&")
    .replace(
      /- poll: \{ cq: send, min: 17, wait_ms: 5000 \}(?![\s\S]*- destroy:)/,
      "- poll: { cq: send, min: 8, wait_ms: 5000 }",
    );
  t.match(
    polledFirst,
    /min: 17[\s\S]*- destroy: \{ on: peer \}[\s\S]*min: 8,/,
    "the copy polls before the destroy",
  );
  const copy = join(root, "destroy-after-polling.yaml");
  writeFileSync(copy, polledFirst);
  const scenarios = `shared-cq-destroy-unpolled,${copy}`;
  const { dir, r } = await run("run", ["run", "--kernel", "debian:6.12", "--scenario", scenarios]);
  const out = `${r.stdout}${r.stderr}`.slice(-6000);
  t.equal(r.exitCode, 3, `a MISS: exit 3\n${out}`);

  // the premise device_destroyed_with_unpolled_cqes, held as written and not in the copy
  const unpolled =
    /^8 CQE\(s\) of QP \d+ written before its DESTROY_QP, 0 of its completions polled before the destroy step; cq polled after it$/;
  const polled = /^8 CQE\(s\) of QP \d+ written before its DESTROY_QP, 8 of its completions polled/;
  for (const [name, verdicts, premise] of [
    [
      "shared-cq-destroy-unpolled",
      ["ib PASS", "iwarp-rdmac PASS", "linux PASS"],
      { held: true, conditions: [{ held: true, reason: unpolled }, { held: true }] },
    ],
    [
      "destroy-after-polling",
      ["ib MISS", "iwarp-rdmac MISS", "linux MISS"],
      { held: false, conditions: [{ held: false, reason: polled }] },
    ],
  ] as const) {
    const s = scenarioOf(dir, name);
    t.same(verdictsOf(s), verdicts, out);
    t.match(s.premise, premise);
  }
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
