// The drain suite end to end on soft-RoCE in a real debian:6.12 guest, as a user runs it:
// `hil run --driver rxe` builds (or finds) the kernel with guest/kconfig/rxe.config, links rdma_rxe
// to the guest NIC as rxe0 and runs every scenario meant for rxe with the kernel executor. What is
// asserted is the shape of the verdicts, not the verdicts themselves: the run exits 0; every
// scenario is judged under ib and linux only (RoCE is an IB transport: no iwarp-rdmac); the QPs
// the scenarios ran on were rxe0's, an IB channel adapter; a PASS judged the rules the scenario
// covers; an XFAIL names a known bug with a kernel reference; a SKIP says why; nothing is left
// running.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { parseTrace } from "../../harness/protocol/trace.ts";
import { hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(40 * 60 * 1000);

/** include/rdma/ib_verbs.h enum rdma_node_type: RDMA_NODE_IB_CA (an RNIC, iWARP, is 4) */
const RDMA_NODE_IB_CA = 1;
/** a known bug's reference: drivers/.../file.c:function, or a URL */
const KERNEL_REFERENCE = /^(drivers|include|net)\/\S+\.[ch]:\w+$|^https?:\/\//;

interface RuleVerdict {
  rule: string;
  verdict: string;
  judged?: number;
  knownBug?: { reference: string; note: string; id?: string };
}
interface ScenarioRecord {
  name: string;
  covers: string[];
  judgements: { profile: string; verdict: string; rules: RuleVerdict[] }[];
  trace?: string;
  outcome?: { verdict: string; reason: string };
}

t.test("hil run --driver rxe on debian:6.12", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(["run", "--driver", "rxe"], t);
  t.comment(r.stdout);
  t.equal(r.exitCode, 0, `hil run --driver rxe exits 0\n${r.stderr.slice(-3000)}`);
  t.match(r.stderr, /--driver rxe: the kernel gets --config rxe \(guest\/kconfig\/rxe\.config\)/);
  t.match(r.stdout, /^scenario +ib +linux +judged/m, "the table's columns: ib and linux");
  t.notMatch(r.stdout, /iwarp-rdmac/, "no iwarp-rdmac column");

  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as {
    driver: string;
    kernel: string;
    job: { spec: { configs?: string[] } };
    scenarios: ScenarioRecord[];
  };
  t.equal(record.driver, "rxe");
  t.same(record.job.spec.configs, ["rxe"], "the job records the fragment it added");
  t.match(record.kernel, /config rxe/);
  t.ok(record.scenarios.length >= 20, `${record.scenarios.length} scenarios meant for rxe`);

  const console1 = readFileSync(join(dir, "console.log"), "utf8");
  t.match(console1, /infiniband rxe0: added eth0/, "rdma_rxe linked to the guest NIC");
  t.notMatch(console1, /WARNING: CPU|BUG: |Oops/, "no kernel warning, bug or oops on the first guest");

  let passes = 0;
  for (const s of record.scenarios) {
    t.same(
      s.judgements.map((j) => j.profile),
      ["ib", "linux"],
      `${s.name}: judged under ib and linux only`,
    );
    const verdicts = new Set(s.judgements.map((j) => j.verdict));
    t.notOk(
      [...verdicts].some((v) => v === "FAIL" || v === "MISS" || v === "ERROR"),
      `${s.name}: no FAIL, MISS or ERROR (${[...verdicts].join(", ")})`,
    );
    if (verdicts.has("SKIP")) {
      t.ok(s.outcome?.reason, `${s.name}: a SKIP says why`);
      continue;
    }
    for (const j of s.judgements)
      for (const rule of j.rules.filter((x) => x.verdict === "XFAIL"))
        t.match(
          rule.knownBug?.reference ?? "",
          KERNEL_REFERENCE,
          `${s.name} [${j.profile}] rule ${rule.rule}: the XFAIL names a known bug with a reference`,
        );
    const linux = s.judgements.find((j) => j.profile === "linux");
    const judged = s.covers.filter((c) =>
      linux?.rules.some((x) => x.rule === c && x.verdict !== "SKIP" && (x.judged ?? 1) > 0),
    );
    t.ok(judged.length > 0, `${s.name}: a rule it covers is judged (${judged.join(", ")})`);
    if (linux?.verdict === "PASS") passes++;
    // the QPs were rxe0's: the executor's device record, in the scenario's trace
    const trace = parseTrace(readFileSync(join(dir, s.trace ?? ""), "utf8"));
    const devices = trace.flatMap((x) => (x.ev === "device" ? [x] : []));
    t.ok(devices.length > 0, `${s.name}: the trace names its device`);
    for (const d of devices) {
      t.equal(d.name, "rxe0", `${s.name}: on rxe0`);
      t.equal(d.node_type, RDMA_NODE_IB_CA, `${s.name}: an IB channel adapter`);
    }
  }
  t.ok(passes > 0, `${passes} scenario(s) PASS under linux`);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
});
