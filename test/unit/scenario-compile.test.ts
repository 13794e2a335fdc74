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
    const s = scenario(["qp: { poll: softirq }", "steps:", "  - drain: {}"]);
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
  const s = scenario([
    "steps:",
    "  - post_send: { count: { siw: 15, erdma: 63, rxe: 30 } }",
    "  - post_send: { count: 2 }",
  ]);
  const on = (driver: "siw" | "erdma" | "rxe") =>
    compileScenario(s, { addr: "10.0.2.15", port: 7600, driver }).steps.map((x) => x.commands[0]);
  t.same(on("erdma"), [
    "post_send qp=qp wr_id=1000 op=send count=63 signal=all",
    "post_send qp=qp wr_id=1063 op=send count=2 signal=all",
  ]);
  t.same(on("siw"), [
    "post_send qp=qp wr_id=1000 op=send count=15 signal=all",
    "post_send qp=qp wr_id=1015 op=send count=2 signal=all",
  ]);
  t.same(on("rxe"), [
    "post_send qp=qp wr_id=1000 op=send count=30 signal=all",
    "post_send qp=qp wr_id=1030 op=send count=2 signal=all",
  ]);
  t.throws(() => scenario(["steps:", "  - post_send: { count: { siw: 15 } }"]), {
    message: /steps\[0\]\.post_send\.count: no count for erdma, a driver the scenario runs on/,
  });
});

t.test("a fanout: more connected pairs, a CQ per QP sized for its queues, posts on every pair", async (t) => {
  const c = compileScenario(
    scenario([
      "fanout: { pairs: 2, sq: 4, rq: 6 }",
      "steps:",
      "  - post_recv: { on: fanout, count: 3 }",
      "  - post_send: { on: fanout, count: 2, len: 8 }",
      "  - post_send: { on: fanout }",
      "  - post_send: { count: 1 }",
      "  - drain: {}",
    ]),
    OPTS,
  );
  t.same(c.setup.slice(6), [
    "cq name=fcq0 depth=10 poll=softirq",
    "cq name=fpcq0 depth=10 poll=softirq",
    "listen name=fl0 addr=10.0.2.15 port=23200 qp=fp0 pd=pd scq=fpcq0 rcq=fpcq0 sq=4 rq=6 buf=4096",
    "connect name=f0 addr=10.0.2.15 port=23200 pd=pd scq=fcq0 rcq=fcq0 sq=4 rq=6 buf=4096 sig=req",
    "cq name=fcq1 depth=10 poll=softirq",
    "cq name=fpcq1 depth=10 poll=softirq",
    "listen name=fl1 addr=10.0.2.15 port=23201 qp=fp1 pd=pd scq=fpcq1 rcq=fpcq1 sq=4 rq=6 buf=4096",
    "connect name=f1 addr=10.0.2.15 port=23201 pd=pd scq=fcq1 rcq=fcq1 sq=4 rq=6 buf=4096 sig=req",
  ]);
  t.same(c.cqs, ["cq", "pcq", "fcq0", "fpcq0", "fcq1", "fpcq1"], "settled and torn down with the rest");
  t.same(c.steps[0]?.commands, [
    "post_recv qp=fp0 wr_id=6000 count=3",
    "post_recv qp=fp1 wr_id=6000 count=3",
  ]);
  t.same(c.steps[1]?.commands, [
    "post_send qp=f0 wr_id=5000 op=send count=2 len=8 signal=all",
    "post_send qp=f1 wr_id=5000 op=send count=2 len=8 signal=all",
  ]);
  t.match(c.steps[2]?.commands, [/^post_send qp=f0 wr_id=5002 /, /^post_send qp=f1 wr_id=5002 /]);
  t.match(c.steps[3]?.commands, [/^post_send qp=qp wr_id=1000 /], "the pair's own ranges are untouched");
  t.equal(c.steps[1]?.posts, undefined, "no fault names a fanout WR");
  t.ok(c.setupTimeoutMs > compileScenario(scenario(["steps: [ { drain: {} } ]"]), OPTS).setupTimeoutMs);
  const user = compileScenario(scenario(["fanout: { pairs: 1, poll: direct }", "steps: [ { drain: {} } ]"]), {
    ...OPTS,
    executor: "user",
  });
  t.match(user.setup.slice(6, 8), ["cq name=fcq0 depth=32", "cq name=fpcq0 depth=32"]);
});

t.test("a fanout's pairs get ports of their own, apart from the scenario ports", async (t) => {
  const ports = (port: number) =>
    compileScenario(scenario(["fanout: { pairs: 16 }", "steps: [ { drain: {} } ]"]), { ...OPTS, port })
      .setup.filter((l) => l.startsWith("listen name=fl"))
      .map((l) => Number(/port=(\d+)/.exec(l)?.[1]));
  const a = ports(7600);
  const b = ports(7601);
  t.equal(new Set([...a, ...b]).size, 32, "no two pairs of two scenarios share a port");
  t.ok([...a, ...b].every((p) => p >= 20_000 && p < 60_000));
});

t.test(
  "a fanout is checked: posts on it need one, within its queues; user SKIP for a kernel poll context",
  async (t) => {
    t.throws(
      () => scenario(["steps: [ { post_send: { on: fanout } } ]"]),
      /steps\[0\]\.post_send\.on: on: fanout posts on the scenario's fanout pairs; this scenario has no fanout/,
    );
    t.throws(
      () => scenario(["fanout: { pairs: 2, rq: 4 }", "steps: [ { post_recv: { on: fanout, count: 5 } } ]"]),
      /steps\[0\]\.post_recv\.count: 5 WRs on each fanout pair's rq, which holds 4 \(fanout\.rq\)/,
    );
    t.throws(() => scenario(["fanout: { pairs: 17 }", "steps: [ { drain: {} } ]"]), /fanout\.pairs/);
    t.throws(() => scenario(["fanout: { pairs: 1 }", "steps: [ { drain: { on: fanout } } ]"]), /drain\.on/);
    const { planScenario } = await import("../../harness/suite/plan.ts");
    const s = scenario(["fanout: { pairs: 1, poll: workqueue }", "steps: [ { drain: {} } ]"]);
    t.match(planScenario(s, { driver: "erdma", executor: "user" }), {
      run: false,
      verdict: "SKIP",
      reason: /kernel's workqueue CQ poll context/,
    });
    t.same(planScenario(s, { driver: "erdma", executor: "kernel" }), { run: true });
  },
);

t.test("coalesce-irq: needs ms, takes a vector, hits no WR", async (t) => {
  t.throws(
    () => scenario(["steps: [ { fault: { kind: coalesce-irq } } ]"]),
    /coalesce-irq needs ms \(how long the interrupt is held\), or a raise-irq at a later step/,
  );
  t.throws(
    () => scenario(["steps: [ { fault: { kind: coalesce-irq, ms: 5, wr_id: 1000 } } ]"]),
    /coalesce-irq takes no wr_id/,
  );
  const s = scenario(["steps: [ { fault: { kind: coalesce-irq, ms: 5, vector: 1 } }, { drain: {} } ]"]);
  const { translateFault } = await import("../../harness/suite/faults.ts");
  const c = compileScenario(s, OPTS);
  t.same(translateFault(c.steps[0] as never, c, []), { kind: "coalesce-irq", vector: 1, ms: 5 });
});

t.test("raise-irq: ends a coalesce-irq without ms before it, on the device at once", async (t) => {
  t.throws(
    () => scenario(["steps: [ { fault: { kind: raise-irq } } ]"]),
    /raise-irq raises what a coalesce-irq without ms holds: none comes before it/,
  );
  t.throws(
    () => scenario(["steps: [ { fault: { kind: coalesce-irq, ms: 5 } }, { fault: { kind: raise-irq } } ]"]),
    /none comes before it/,
    "one with ms ends by itself",
  );
  for (const field of ["queue: sq", "wr_id: 1000", "ms: 5", "count: 2"])
    t.throws(
      () =>
        scenario([`steps: [ { fault: { kind: coalesce-irq } }, { fault: { kind: raise-irq, ${field} } } ]`]),
      new RegExp(`raise-irq takes no ${field.split(":")[0]}`),
    );
  t.throws(
    () =>
      scenario([
        "steps: [ { fault: { kind: coalesce-irq, optional: true } }, { fault: { kind: raise-irq } } ]",
      ]),
    /so is its raise-irq \(optional: true\)/,
  );
  const s = scenario([
    "steps: [ { fault: { kind: coalesce-irq, vector: 1 } }, { drain: {} }, { fault: { kind: raise-irq, vector: 1 } } ]",
  ]);
  const { translateFault, faultTarget } = await import("../../harness/suite/faults.ts");
  const c = compileScenario(s, OPTS);
  t.same(translateFault(c.steps[0] as never, c, []), { kind: "coalesce-irq", vector: 1 });
  t.same(translateFault(c.steps[2] as never, c, []), { kind: "raise-irq", vector: 1 });
  t.equal(faultTarget(c.steps[2] as never, c, []), undefined, "it hits no WR");
});

t.test("until: error for a stall, flush for a delayed completion, nothing else", async (t) => {
  t.throws(
    () => scenario(["steps: [ { fault: { kind: stall-queue, queue: sq, until: flush } } ]"]),
    /a stall lasts ms or until ERROR \(until: error\), not until flush/,
  );
  t.throws(
    () =>
      scenario([
        "steps: [ { post_send: { count: 1 } }, { fault: { kind: delay-cqe, ms: 5, until: error } } ]",
      ]),
    /a delayed completion waits ms or until its queue's flush reaches it \(until: flush\), not until ERROR/,
  );
  t.throws(
    () => scenario(["steps: [ { fault: { kind: drop-cqe, until: flush } } ]"]),
    /drop-cqe takes no until/,
  );
});

t.test("resume-queue: ends a stall of the same QP and queue before it, on the device at once", async (t) => {
  t.throws(
    () => scenario(["steps: [ { fault: { kind: resume-queue, queue: sq } } ]"]),
    /resume-queue ends a stall: no stall-queue of the QP's sq comes before it/,
  );
  t.throws(
    () =>
      scenario([
        "steps: [ { fault: { kind: stall-queue, queue: sq } }, { fault: { kind: resume-queue, queue: rq } } ]",
      ]),
    /no stall-queue of the QP's rq comes before it/,
  );
  t.throws(
    () =>
      scenario([
        "steps: [ { fault: { kind: stall-queue, queue: rq } }, { fault: { kind: resume-queue, queue: rq, on: peer } } ]",
      ]),
    /no stall-queue of the peer's rq comes before it/,
  );
  t.throws(
    () =>
      scenario([
        "steps: [ { fault: { kind: stall-queue, queue: sq } }, { fault: { kind: resume-queue, queue: sq, count: 2 } } ]",
      ]),
    /resume-queue takes no count/,
  );
  t.throws(
    () =>
      scenario([
        "steps: [ { fault: { kind: stall-queue, queue: sq } }, { fault: { kind: resume-queue, queue: sq, ms: 5 } } ]",
      ]),
    /resume-queue takes no ms/,
  );
  t.throws(
    () =>
      scenario(["steps: [ { fault: { kind: stall-queue, queue: sq } }, { fault: { kind: resume-queue } } ]"]),
    /resume-queue needs queue/,
  );
  t.throws(
    () =>
      scenario([
        "steps: [ { fault: { kind: stall-queue, queue: sq, optional: true } }, { fault: { kind: resume-queue, queue: sq } } ]",
      ]),
    /so is its resume-queue \(optional: true\)/,
  );
  const s = scenario([
    "steps: [ { fault: { kind: stall-queue, queue: sq } }, { post_send: { count: 2 } }, { fault: { kind: resume-queue, queue: sq } }, { drain: {} } ]",
  ]);
  const { translateFault, faultTarget } = await import("../../harness/suite/faults.ts");
  const c = compileScenario(s, OPTS);
  const records = [{ ev: "create", kind: "qp", name: "qp", qp_num: 7 }] as never[];
  t.same(translateFault(c.steps[2] as never, c, records), { kind: "resume-queue", qpn: 7, queue: "sq" });
  t.equal(faultTarget(c.steps[2] as never, c, records), undefined, "it hits no WR");
});

t.test("a QP that is never connected, or whose connect is refused: no peer, no listener", async (t) => {
  for (const [connect, stop] of [
    ["never", "route"],
    ["refused", "refused"],
  ] as const) {
    const c = compileScenario(
      scenario([
        `qp: { rq: 16, connect: ${connect} }`,
        "steps: [ { post_recv: { count: 4 } }, { drain: {} } ]",
      ]),
      OPTS,
    );
    t.same(
      c.setup,
      [
        "device addr=10.0.2.15",
        "pd name=pd rkey=global",
        "cq name=cq depth=256 poll=direct",
        `connect name=qp addr=10.0.2.15 port=7700 pd=pd scq=cq rcq=cq sq=64 rq=16 buf=4096 sig=req stop=${stop}`,
      ],
      `${connect}: the QP's CQ and the connect, stop=${stop}`,
    );
    t.same(c.cqs, ["cq"], `${connect}: no peer CQ`);
  }
});
