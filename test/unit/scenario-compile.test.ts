// Scenarios to hil_kverbs command lines: the setup that connects the pair (shared or separate
// CQs, poll context, signaling), wr_ids handed out per queue, each step's watchdog, steps an
// executor cannot carry out marked with the reason; and --scenario patterns.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { compileScenario, NAMES } from "../../harness/scenario/compile.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import { globToRegExp, matchScenarioFiles, selectScenarios } from "../../harness/scenario/select.ts";

const OPTS = { addr: "10.0.2.15", port: 7700 };

function scenario(lines: string[]) {
  return parseScenario(["description: d", "covers: [9]", ...lines].join("\n"), "s.yaml");
}

t.test("the setup connects the QP under test to its peer", async (t) => {
  const shared = compileScenario(
    scenario(["qp: { sq: 8, rq: 16, poll: softirq }", "steps: [ { drain: {} } ]"]),
    OPTS,
  );
  t.same(shared.setup, [
    "device addr=10.0.2.15",
    "pd name=pd rkey=global",
    "cq name=cq depth=256 poll=softirq",
    "cq name=pcq depth=320 poll=softirq",
    "listen name=lsn addr=10.0.2.15 port=7700 qp=peer pd=pd scq=pcq rcq=pcq sq=64 rq=256 buf=4096",
    "connect name=qp addr=10.0.2.15 port=7700 pd=pd scq=cq rcq=cq sq=8 rq=16 buf=4096 sig=req",
  ]);
  t.same(shared.cqs, ["cq", "pcq"]);
  const separate = compileScenario(
    scenario(["qp: { cq: separate, sig_all: true }", "steps: [ { drain: {} } ]"]),
    OPTS,
  );
  t.same(
    separate.setup.filter((l) => l.startsWith("cq ")),
    [
      "cq name=scq depth=256 poll=direct",
      "cq name=rcq depth=256 poll=direct",
      "cq name=pcq depth=320 poll=softirq",
    ],
  );
  t.match(separate.setup.at(-1), /scq=scq rcq=rcq .* sig=all$/);
  t.same(separate.cqs, [NAMES.sendCq, NAMES.recvCq, NAMES.peerCq]);
});

t.test("steps become commands; wr_ids count up per queue and side", async (t) => {
  const c = compileScenario(
    scenario([
      "qp: { cq: separate }",
      "steps:",
      "  - post_recv: { on: peer, count: 4 }",
      "  - post_send: { count: 3, signal: 2, op: write, len: 100, batch: 2 }",
      "  - post_send: { count: 2, signal: none }",
      "  - post_send: { wr_id: 50 }",
      "  - post_send: {}",
      "  - post_recv: { count: 2 }",
      "  - modify: { state: ERR }",
      "  - drain: { which: sq }",
      "  - poll: { cq: recv, min: 2, wait_ms: 3000 }",
      "  - poll: { cq: peer }",
      "  - query: { on: peer }",
      "  - sleep: 20",
    ]),
    OPTS,
  );
  t.same(
    c.steps.map((s) => s.commands),
    [
      ["post_recv qp=peer wr_id=4000 count=4"],
      ["post_send qp=qp wr_id=1000 op=write count=3 batch=2 len=100 signal=2"],
      ["post_send qp=qp wr_id=1003 op=send count=2 signal=none"],
      ["post_send qp=qp wr_id=50 op=send count=1 signal=all"],
      ["post_send qp=qp wr_id=51 op=send count=1 signal=all"],
      ["post_recv qp=qp wr_id=2000 count=2"],
      ["modify qp=qp state=ERR"],
      ["drain qp=qp which=sq"],
      ["poll cq=rcq min=2 timeout=3000"],
      ["poll cq=pcq min=0 timeout=1000"],
      ["query qp=peer"],
      ["sleep ms=20"],
    ],
  );
  t.same(
    c.steps.map((s) => s.line),
    [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
  );
  t.same(
    c.steps.map((s) => s.kind),
    [
      "post_recv",
      "post_send",
      "post_send",
      "post_send",
      "post_send",
      "post_recv",
      "modify",
      "drain",
      "poll",
      "poll",
      "query",
      "sleep",
    ],
  );
});

t.test("each step's watchdog", async (t) => {
  const c = compileScenario(
    scenario([
      "timeout_ms: 4000",
      "steps:",
      "  - drain: {}",
      "  - drain: {}",
      "    timeout_ms: 900",
      "  - poll: { cq: send, wait_ms: 6000 }",
      "  - sleep: 100",
      "  - sleep: 5000",
      "    timeout_ms: 1000",
    ]),
    OPTS,
  );
  t.same(
    c.steps.map((s) => s.timeoutMs),
    [4000, 900, 11_000, 5100, 1000],
    "the scenario's default, a step's own as written, waits given room unless the step says otherwise",
  );
});

t.test("fast registration compiles; a fault is armed by the suite, not the executor", async (t) => {
  const c = compileScenario(
    scenario([
      "steps:",
      "  - post_send: { op: reg_mr, signal: none }",
      "  - fault: { kind: drop-cqe, queue: rq, wr_id: 3 }",
      "  - post_send: {}",
    ]),
    OPTS,
  );
  t.equal(c.steps[0]?.unsupported, undefined, "hil_kverbs posts IB_WR_REG_MR");
  t.same(c.steps[0]?.commands, ["post_send qp=qp wr_id=1000 op=reg_mr count=1 signal=none"]);
  t.equal(c.steps[1]?.unsupported, undefined, "a fault is no executor command: the suite arms it");
  t.same(c.steps[1]?.commands, []);
  t.match(c.steps[1]?.fault, { kind: "drop-cqe", on: "qp" });
  t.same(c.steps[2]?.commands, ["post_send qp=qp wr_id=1001 op=send count=1 signal=all"]);
  t.equal(c.steps[2]?.unsupported, undefined);
});

t.test("--scenario patterns", async (t) => {
  t.ok(globToRegExp("drain-*").test("drain-qp-idle"));
  t.notOk(globToRegExp("drain-*").test("post-drain"));
  t.ok(globToRegExp("{post,drain}-?q-*").test("drain-rq-full"));
  t.ok(globToRegExp("/a/**/x.yaml").test("/a/b/c/x.yaml"));
  t.throws(() => globToRegExp("{a,b"), /unclosed \{/);

  const drains = await selectScenarios("drain-*");
  t.ok(
    drains.length >= 8 && drains.every((s) => s.name.startsWith("drain-")),
    `${drains.length} drain scenarios`,
  );
  const two = await selectScenarios("drain-qp-idle, post-send-in-error.yaml");
  t.same(
    two.map((s) => s.name),
    ["drain-qp-idle", "post-send-in-error"],
  );
  await t.rejects(selectScenarios("no-such-*"), { message: 'no scenario matches "no-such-*"' });

  const dir = mkdtempSync(join(tmpdir(), "hil-scen-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "a.yaml"), "description: a\ncovers: [9]\nsteps: [ { drain: {} } ]\n");
  writeFileSync(join(dir, "b.yaml"), "name: a\ndescription: b\ncovers: [9]\nsteps: [ { drain: {} } ]\n");
  t.same(matchScenarioFiles(`${dir}/*.yaml`), [join(dir, "a.yaml"), join(dir, "b.yaml")]);
  await t.rejects(selectScenarios(`${dir}/*.yaml`), { message: /scenario name "a" is also the name of/ });
});

t.test(
  "lines are compiled for their executor: the user executor's CQs carry no kernel poll context",
  async (t) => {
    const s = parseScenario(
      ["description: d", "covers: [5]", "qp: { poll: softirq }", "steps:", "  - drain: {}"].join("\n"),
      "p.yaml",
    );
    const kernel = compileScenario(s, { addr: "10.0.2.15", port: 7600 });
    const user = compileScenario(s, { addr: "10.0.2.15", port: 7600, executor: "user" });
    t.same(
      kernel.setup.filter((l) => l.startsWith("cq ")),
      ["cq name=cq depth=256 poll=softirq", "cq name=pcq depth=320 poll=softirq"],
    );
    t.same(
      user.setup.filter((l) => l.startsWith("cq ")),
      ["cq name=cq depth=256", "cq name=pcq depth=320"],
    );
    t.same(user.steps, kernel.steps, "the steps are the same");
  },
);

t.test("a count per driver: compiled for the run's driver, every driver of the scenario given", async (t) => {
  const s = parseScenario(
    [
      "description: d",
      "covers: [4]",
      "steps:",
      "  - post_send: { count: { siw: 15, erdma: 63 } }",
      "  - post_send: { count: 2 }",
    ].join("\n"),
    "c.yaml",
  );
  const on = (driver: "siw" | "erdma") =>
    compileScenario(s, { addr: "10.0.2.15", port: 7600, driver }).steps.map((x) => x.commands[0]);
  t.same(on("erdma"), [
    "post_send qp=qp wr_id=1000 op=send count=63 signal=all",
    "post_send qp=qp wr_id=1063 op=send count=2 signal=all",
  ]);
  t.same(on("siw"), [
    "post_send qp=qp wr_id=1000 op=send count=15 signal=all",
    "post_send qp=qp wr_id=1015 op=send count=2 signal=all",
  ]);
  t.throws(
    () =>
      parseScenario(
        ["description: d", "covers: [4]", "steps:", "  - post_send: { count: { siw: 15 } }"].join("\n"),
        "c.yaml",
      ),
    { message: /steps\[0\]\.post_send\.count: no count for erdma, a driver the scenario runs on/ },
  );
});
