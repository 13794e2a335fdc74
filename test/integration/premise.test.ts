// Scenario premises on a real debian:6.12 guest with the emulated erdma: drain-reads-outstanding
// makes its situation certain (the device holds 8 of its 16 READs until the ERR transition) and
// the executor's trace shows READs completing with a flush error; the same scenario without that
// control leaves no READ outstanding (the model answers a READ at once), and its run is a MISS
// naming the premise, never the PASS it used to be. post-during-flush and destroy-during-flush
// meet theirs through the device's trace (posts and a destroy while a flush is pending); the
// first's stall ends at its resume-queue step, after the posts in ERROR.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { fixtureScenario, hilRuns, leftovers } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(15 * 60 * 1000);

t.test("a premise met is checked and recorded; one not met is a MISS naming it", async (t) => {
  const { iso, root, run } = hilRuns(t);
  const written = fixtureScenario("drain-reads-outstanding");
  const withoutControl = written
    .split("\n")
    .filter((l) => !/^\s+- fault: \{ kind: stall-queue/.test(l))
    .join("\n");
  t.not(withoutControl, written, "the copy lost its control step");
  const copy = join(root, "reads-without-control.yaml");
  writeFileSync(copy, withoutControl);
  const scenarios = `drain-reads-outstanding,post-during-flush,destroy-during-flush,${copy}`;
  const { dir, r } = await run("run", ["run", "--kernel", "debian:6.12", "--scenario", scenarios]);
  const out = `${r.stdout}${r.stderr}`.slice(-6000);
  t.equal(r.exitCode, 3, `a MISS: exit 3\n${out}`);

  const reads = scenarioOf(dir, "drain-reads-outstanding");
  t.same(verdictsOf(reads), ["ib PASS", "iwarp-rdmac PASS", "linux PASS"], out);
  t.match(reads.premise, { held: true, conditions: [{ held: true }, { held: true }] });
  const trace = readFileSync(join(dir, reads.trace ?? ""), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { ev: string; opcode_name?: string; status_name?: string });
  const flushedReads = trace.filter(
    (x) => x.ev === "cqe" && x.opcode_name === "RDMA_READ" && x.status_name === "WR_FLUSH_ERR",
  );
  t.ok(flushedReads.length >= 1, `the trace shows READs flushed (${flushedReads.length})`);

  const without = scenarioOf(dir, "reads-without-control");
  t.same(verdictsOf(without), ["ib MISS", "iwarp-rdmac MISS", "linux MISS"], out);
  t.match(
    r.stdout,
    /^reads-without-control\s+MISS\s+MISS\s+MISS\s+.*premise not met: at least 1 READ WR of the QP's sq outstanding at the ERR transition, then flushed \(0 flushed\)/m,
    "the table names the premise",
  );

  for (const name of ["post-during-flush", "destroy-during-flush"]) {
    const s = scenarioOf(dir, name);
    t.same(verdictsOf(s), ["ib PASS", "iwarp-rdmac PASS", "linux PASS"], `${name}\n${out}`);
    t.match(s.premise, { held: true }, `${name}: its premise held`);
  }
  // post-during-flush's stall ends at its resume-queue step, once the posts in ERROR rang the rq
  const during = scenarioOf(dir, "post-during-flush");
  type Hw = { kind: string; action?: string; db?: string; fault?: { kind: string }; context?: unknown };
  const hw = readFileSync(join(dir, during.hwTrace ?? ""), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Hw);
  const resumed = hw.findIndex(
    (e) => e.kind === "fault" && e.action === "fired" && e.fault?.kind === "resume-queue",
  );
  t.match(hw[resumed], { context: { queue: "rq", stallsEnded: 1 } }, "the resume-queue ended the rq's stall");
  const lastRqDoorbell = hw.map((e) => e.kind === "doorbell" && e.db === "rq").lastIndexOf(true);
  t.ok(lastRqDoorbell >= 0 && lastRqDoorbell < resumed, "after the last rq doorbell");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
