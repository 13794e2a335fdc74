// The drain on a ULP's connect error paths, on real debian:6.12 guests: drain-qp-unconnected (a QP
// made by rdma_create_qp after route resolution and never connected, in INIT) and
// drain-qp-connect-refused (rdma_connect to a port nobody listens on, the QP kept), on the
// emulated erdma and on siw with the kernel executor. The receives posted on each are flushed,
// the drain returns, the premise is read off the verbs trace, and the two drivers' refusals come
// the two ways they do: erdma's as a REJECTED event, siw's from rdma_connect itself (siw connects
// its TCP socket inside the call). A copy whose drain is left out is a MISS naming the condition.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(15 * 60 * 1000);

const SCENARIOS = "drain-qp-unconnected,drain-qp-connect-refused";

function traceOf(dir: string, scenario: string): Array<Record<string, unknown>> {
  return readFileSync(join(dir, "traces", `${scenario}.jsonl`), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

for (const [driver, refusedBy] of [
  ["erdma", "REJECTED"],
  ["siw", "rdma_connect"],
] as const) {
  t.test(`${driver}: drained unconnected and after a refused connect`, async (t) => {
    const iso = isolate();
    const root = t.testdir({});
    const dir = join(root, "run");
    const r = await hil(
      ["run", "--kernel", "debian:6.12", "--driver", driver, "--scenario", SCENARIOS, "--run-dir", dir],
      iso.env,
    );
    const out = `${r.stdout}${r.stderr}`.slice(-6000);
    t.equal(r.exitCode, 0, out);
    for (const name of SCENARIOS.split(",")) {
      const s = scenarioOf(dir, name);
      t.same(verdictsOf(s), ["ib PASS", "iwarp-rdmac PASS", "linux PASS"], `${name}\n${out}`);
      t.match(s.premise, { held: true }, `${name}: its premise held`);
      const trace = traceOf(dir, name);
      t.notOk(
        trace.some((x) => x.ev === "cm" && x.id === "qp" && x.event === "ESTABLISHED"),
        `${name}: the QP never established`,
      );
      const flushed = trace.filter(
        (x) => x.ev === "cqe" && x.qp === "qp" && x.queue === "rq" && x.status_name === "WR_FLUSH_ERR",
      );
      t.same(
        flushed.map((x) => x.wr_id).filter((id) => Number(id) < 2016),
        Array.from({ length: 16 }, (_, i) => 2000 + i),
        `${name}: its 16 receives flushed, in order`,
      );
      t.ok(
        trace.some((x) => x.ev === "drain_ret"),
        `${name}: the drain returned`,
      );
    }
    const refusal = traceOf(dir, "drain-qp-connect-refused").find((x) => x.ev === "refused");
    t.match(refusal, { qp: "qp", by: refusedBy }, `${driver} refuses by ${refusedBy}`);
    t.notOk(
      traceOf(dir, "drain-qp-unconnected").some((x) => x.ev === "refused"),
      "no connect was tried on the never-connected QP",
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  });
}

t.test("without its drain, the refused QP's scenario is a MISS naming its premise", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const written = readFileSync(join(REPO_ROOT, "fixtures/scenarios/drain-qp-connect-refused.yaml"), "utf8");
  const noDrain = written.replace(/^ {2}- drain: \{ which: qp \}\n/m, "");
  t.not(noDrain, written, "the copy has no drain");
  const copy = join(root, "refused-not-drained.yaml");
  writeFileSync(copy, noDrain);
  const dir = join(root, "run");
  const r = await hil(["run", "--kernel", "debian:6.12", "--scenario", copy, "--run-dir", dir], iso.env);
  t.equal(r.exitCode, 3, `${r.stdout}${r.stderr}`.slice(-4000));
  const s = scenarioOf(dir, "refused-not-drained");
  t.same(verdictsOf(s), ["ib MISS", "iwarp-rdmac MISS", "linux MISS"]);
  t.match(s.premise, {
    held: false,
    conditions: [
      { held: false, reason: /^no drain or modify to ERR of the QP; rdma_cm events of the QP: .*REJECTED/ },
    ],
  });
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
