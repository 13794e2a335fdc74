// What a verdict claims, on a real debian:6.12 guest with the emulated erdma device: a step whose
// command fails where the scenario did not say it may is an ERROR naming the step (a modify the
// executor refuses, a poll whose min never arrives); a device that completes the drain's marker
// before an earlier flush FAILs rule 9 and rule 4 from the observed marker; a known-bug record
// whose rule holds is an XPASS that fails the run under --strict only.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { ruleOf, scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(15 * 60 * 1000);

const SCENARIOS: Record<string, string> = {
  "refused-modify": `description: a modify of the QP the scenario destroyed, without saying the step may fail
covers: [hang]
steps:
  - destroy: {}
  - modify: { state: ERR }
`,
  "unmet-poll": `description: a poll waiting for three receive completions nobody sends
covers: [9]
steps:
  - post_recv: { count: 2 }
  - poll: { cq: recv, min: 3, wait_ms: 500 }
  - drain: { which: qp }
`,
  "marker-before-flush": `description: the device writes the last receive's flush after the drain's receive marker
covers: [4, 9]
drivers: [erdma]
qp: { cq: separate }
steps:
  - post_recv: { count: 8 }
  - fault: { kind: reorder-cqe, queue: rq, wr_id: 2007 }
  - drain: { which: qp }
`,
  "stale-record": `description: a drain that works, recorded as broken
covers: [9]
steps:
  - drain: { which: qp }
known_bugs:
  - driver: erdma
    rules: [9]
    failure: "did not return"
    reference: drivers/infiniband/hw/erdma/erdma_verbs.c:erdma_drain_qp
    note: a record of a bug this driver does not have
`,
};

function writeScenarios(dir: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(SCENARIOS).map(([name, text]) => {
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, text);
      return [name, file];
    }),
  );
}

/** `hil run` of these scenario files on debian:6.12, judged under the linux profile. */
function runOn(files: (string | undefined)[], dir: string, env: NodeJS.ProcessEnv, more: string[] = []) {
  const scenarios = files.map((f) => f ?? "").join(",");
  return hil(
    [
      "run",
      "--kernel",
      "debian:6.12",
      "--rules",
      "linux",
      "--scenario",
      scenarios,
      "--run-dir",
      dir,
      ...more,
    ],
    env,
  );
}

t.test(
  "a refused modify and an unmet poll are ERRORs naming their step; a marker before a flush FAILs rules 9 and 4",
  async (t) => {
    const iso = isolate();
    const root = t.testdir({});
    const files = writeScenarios(root);
    const dir = join(root, "run");
    const r = await runOn(
      [files["refused-modify"], files["unmet-poll"], files["marker-before-flush"]],
      dir,
      iso.env,
    );
    const out = `${r.stdout}${r.stderr}`.slice(-6000);
    t.equal(r.exitCode, 3, `an ERROR wins over the FAIL: exit 3\n${out}`);

    const modify = scenarioOf(dir, "refused-modify");
    t.same(verdictsOf(modify), ["linux ERROR"], out);
    t.match(
      ruleOf(modify, "linux", "commands")?.reason,
      /^step 2 \(line 5\): "modify qp=qp state=ERR" failed: rc -2\b/,
      "the step, its line and its command",
    );

    const poll = scenarioOf(dir, "unmet-poll");
    t.same(verdictsOf(poll), ["linux ERROR"], out);
    t.match(
      ruleOf(poll, "linux", "commands")?.reason,
      /^step 2 \(line 5\): "poll cq=\w+ min=3 timeout=500" failed: rc -110 \(0 of 3 completions/,
      "the poll step",
    );

    const marker = scenarioOf(dir, "marker-before-flush");
    t.same(verdictsOf(marker), ["linux FAIL"], out);
    const rule9 = ruleOf(marker, "linux", "9");
    t.equal(rule9?.verdict, "FAIL", rule9?.reason ?? "no rule 9");
    t.match(rule9?.reason, /marker/, "rule 9 speaks of the observed marker");
    t.match(rule9?.reason, /2007/, "and of the WR that completed after it");
    t.equal(
      ruleOf(marker, "linux", "4")?.verdict,
      "FAIL",
      ruleOf(marker, "linux", "4")?.reason ?? "no rule 4",
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);

t.test("a stale known-bug record: XPASS, exit 0; under --strict exit 1", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const files = writeScenarios(root);
  for (const strict of [false, true]) {
    const dir = join(root, strict ? "strict" : "lenient");
    const r = await runOn([files["stale-record"]], dir, iso.env, strict ? ["--strict"] : []);
    const out = `${r.stdout}${r.stderr}`.slice(-4000);
    t.equal(r.exitCode, strict ? 1 : 0, `strict ${strict}\n${out}`);
    t.same(verdictsOf(scenarioOf(dir, "stale-record")), ["linux XPASS"]);
    t.match(r.stdout, /^stale-record\s+XPASS\s+9:[1-9]\d*\s+rule 9: holds though a known bug is recorded/m);
  }
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
