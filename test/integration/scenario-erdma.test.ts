// The drain suite on the emulated erdma device with the real Linux 6.12 driver, through `hil run`
// as a user types it: the device probes stage, a scenario that passes, the erdma RQ-overflow bug
// recorded as a known bug (XFAIL, exit 0), and the device's faults armed at their steps: a
// duplicated flush completion is the rule 5 FAIL the scenario expects (XFAIL), quoting the fault
// in the hardware trace, an
// injected WQE error is a hardware-initiated ERROR whose flushes pass, and a fault the model has
// no equivalent for is a MISS that says so. Each scenario's hardware trace is cut out beside its
// verbs trace, and nothing is left running.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { parseTrace } from "../../harness/protocol/trace.ts";
import { hilWithRunDir, leftovers } from "../support/cli.ts";
import { ERROR_WQE_SQ_COMPLETIONS } from "../support/send-recv-checks.ts";
import { ruleOf, type ScenarioVerdict, scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(10 * 60 * 1000);

const verdicts = verdictsOf;
const linuxRule = (s: ScenarioVerdict, rule: string) => ruleOf(s, "linux", rule);

t.test("hil run on erdma, debian:6.12: a PASS and a known bug (XFAIL) exit 0", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--kernel", "debian:6.12", "--scenario", "drain-twice,partial-post-rq-overflow"],
    t,
  );
  t.equal(r.exitCode, 0, `only a known bug fails: exit 0\n${r.stdout}${r.stderr}`);
  t.match(
    r.stdout,
    /^the device probes: kernel-release PASS, erdma-module PASS, rdma-core PASS, erdma-probe PASS, verbs-lifecycle PASS, console-clean PASS$/m,
  );
  t.match(
    r.stdout,
    /^drain-twice\s+PASS\s+PASS\s+PASS\s+\w+:[1-9]\d*(?: \w+:[1-9]\d*)*\s+every rule holds$/m,
  );
  t.match(
    r.stdout,
    /^partial-post-rq-overflow\s+XFAIL\s+XFAIL\s+XFAIL\s+[\w: ]+\s+rule (?:hw-protocol|[45]): known bug \(drivers\/infiniband\/hw\/erdma\/erdma_qp\.c:erdma_post_recv\)/m,
  );
  t.match(r.stdout, /^hil: 9 passed, 0 failed, 3 xfail \(3 known bugs\)$/m);

  const overflow = scenarioOf(dir, "partial-post-rq-overflow");
  const rules = overflow.judgements.flatMap((j) =>
    j.rules.filter((x) => x.verdict === "XFAIL").map((x) => x.rule),
  );
  t.ok(
    rules.length > 0 && rules.every((x) => x === "4" || x === "5" || x === "hw-protocol"),
    `XFAIL only on the recorded rules (${rules})`,
  );
  t.ok(rules.includes("hw-protocol"), "the device saw the RQ doorbells run past the ring (hw-protocol)");
  t.same(
    overflow.knownBugs?.map((b) => b.reference),
    ["drivers/infiniband/hw/erdma/erdma_qp.c:erdma_post_recv"],
  );
  const xfail = overflow.judgements[0]?.rules.find((x) => x.verdict === "XFAIL");
  t.ok(
    xfail?.evidence?.some((e) => /^hw flush .*"qpn":\d+,"queue":"rq","from":0,"to":12,"count":12/.test(e)),
    "the hardware trace shows 12 RQEs flushed on an 8-deep ring",
  );
  for (const s of [overflow, scenarioOf(dir, "drain-twice")]) {
    t.ok(
      s.trace && parseTrace(readFileSync(join(dir, s.trace), "utf8")).length > 10,
      `${s.name}: verbs trace`,
    );
    const hw = readFileSync(join(dir, s.hwTrace ?? "none"), "utf8")
      .trim()
      .split("\n");
    t.ok(
      hw.length > 20 && hw.every((l) => JSON.parse(l).dev === "erdma"),
      `${s.name}: its hardware trace slice`,
    );
  }
  t.ok(existsSync(join(dir, "hw-trace.jsonl")), "the run's whole hardware trace");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("device faults on erdma, debian:6.12", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--scenario", "fault-duplicate-cqe,fault-error-wqe,fault-wrong-cq", "--rules", "linux"],
    t,
  );
  t.equal(r.exitCode, 0, `every verdict PASS or XFAIL\n${r.stdout}${r.stderr}`.slice(0, 4000));
  const wrongCq = scenarioOf(dir, "fault-wrong-cq");
  t.same(verdicts(wrongCq), ["linux XFAIL"], "the oracle caught the misdirected completion");
  t.match(linuxRule(wrongCq, "5")?.reason, /WR 2003/, "rule 5 names the WR");
  const dup = scenarioOf(dir, "fault-duplicate-cqe");
  t.same(verdicts(dup), ["linux XFAIL"], "the oracle caught the duplicate: the expected failure");
  const rule5 = linuxRule(dup, "5");
  t.equal(rule5?.verdict, "XFAIL");
  t.match(rule5?.reason, /qp rq WR 2003 completed 2 times/);
  t.ok(
    rule5?.evidence?.some((e) => /^hw fault .*"action":"fired".*"duplicate-cqe"/.test(e)),
    "the fired fault is quoted from the hardware trace",
  );
  const err = scenarioOf(dir, "fault-error-wqe");
  t.same(verdicts(err), ["linux PASS"], "a hardware-initiated error, flushed as the spec asks");
  t.match(linuxRule(err, "5")?.reason ?? "", /./);
  const hw = readFileSync(join(dir, err.hwTrace ?? "none"), "utf8");
  t.match(hw, /"kind":"fault","action":"fired"/);
  t.match(hw, /"kind":"wqe".*"status":10/, "the WQE completed with the injected status");
  const records = parseTrace(readFileSync(join(dir, err.trace ?? "none"), "utf8"));
  const sq = records.filter((x) => x.ev === "cqe" && x.qp === "qp" && x.queue === "sq");
  t.same(
    sq.map((x) => (x.ev === "cqe" ? `${x.wr_id} ${x.status_name}` : "")).slice(0, 8),
    ERROR_WQE_SQ_COMPLETIONS,
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test(
  "a foreseen hang runs last on its guest: its stuck stack in the verdict, and no reboot for the others",
  async (t) => {
    const { iso, dir, r } = await hilWithRunDir(
      ["run", "--kernel", "debian:6.12", "--scenario", "fault-stall-sq-drain,drain-twice", "--guests", "1"],
      t,
    );
    t.equal(r.exitCode, 0, `the stall is the scenario's expected failure\n${r.stdout}${r.stderr}`);
    const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
    t.equal(record.boots, 1, "one boot: the stalled scenario ran after drain-twice, not before it");
    t.same(
      record.scenarios.map((s: { name: string }) => s.name),
      ["fault-stall-sq-drain", "drain-twice"],
      "reported in the order asked for",
    );
    const stall = scenarioOf(dir, "fault-stall-sq-drain");
    t.same(verdicts(stall), ["ib XFAIL", "iwarp-rdmac XFAIL", "linux XFAIL"]);
    const stuck = stall.observations?.find((o) => o.ev === "stuck") as
      | { step: number; op: string; stack: string }
      | undefined;
    t.equal(stuck?.step, 2, "the stuck step is the drain (third step), batched with the post before it");
    t.equal(stuck?.op, "drain");
    t.match(stuck?.stack, /__ib_drain_sq\+0x/, "with the worker's stack");
    t.same(verdicts(scenarioOf(dir, "drain-twice")), ["ib PASS", "iwarp-rdmac PASS", "linux PASS"]);
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);
