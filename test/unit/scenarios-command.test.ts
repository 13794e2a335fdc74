// hil scenarios: the listing, --check and --show rendered from the fixture scenarios and from files
// written here; a bad file is its file:line:col error and exit 2, a pattern matching nothing is an
// error; and the real command through bin/hil.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  entriesJson,
  exitCodeOf,
  loadEntries,
  registerScenariosCommand,
  renderCheck,
  renderList,
  renderShow,
  scenarioNotes,
  targetPlans,
} from "../../harness/cli/scenarios-command.ts";
import { matchScenarioFiles, SCENARIO_DIR } from "../../harness/scenario/select.ts";
import { HilError } from "../../util/errors.ts";
import { hil, REPO_ROOT } from "../support/cli.ts";
import { runInProcess } from "../support/in-process.ts";

const BAD = "test/fixtures/scenarios-bad";
const at = { cwd: REPO_ROOT };

function write(dir: string, name: string, lines: string[]): string {
  const file = join(dir, name);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

t.test("the listing: a row a fixture scenario, its whole description below it", async (t) => {
  const entries = await loadEntries(undefined, at);
  t.ok(entries.length >= 25, `${entries.length} scenarios`);
  t.equal(exitCodeOf(entries), 0, "every fixture loads and compiles");
  const text = renderList(entries, 100);
  const lines = text.trimEnd().split("\n");
  t.match(lines[0], /^scenario\s+covers\s+drivers\s+executors\s+device profiles\s+xfail$/);
  t.match(
    text,
    /\ndrain-qp-idle +9 +siw,erdma,rxe +kernel,user +any +-\n {4}ib_drain_qp on a connected QP with/,
    "the shared records of fixtures/known-bugs.yaml apply to it, but are not named in it",
  );
  t.match(text, /\nstorage-pattern-reg-mr +1,4,6 +siw,erdma,rxe +kernel +any/, "executors it is meant for");
  t.match(text, /\nfault-drop-flush-cqe +5,9 +erdma .*expect_fail 5,9/, "expected failures");
  t.match(
    text,
    /\npartial-post-sq-overflow +3,4,5 +siw,erdma,rxe +kernel,user +any +1 known bug\n/,
    "a bug named in the file",
  );
  const described = lines.filter((l) => l.startsWith("    ")).map((l) => l.length);
  t.ok(Math.max(...described) <= 100, "descriptions wrap to the width");
  for (const e of entries) {
    const s = e.scenario;
    if (!s) continue;
    const flat = s.description.trim().split(/\s+/).join(" ");
    t.ok(text.replace(/\n {4}/g, " ").includes(flat), `${s.name}: the whole description, never cut`);
  }
});

t.test("the same selection syntax as hil run --scenario", async (t) => {
  const drains = await loadEntries("drain-*", at);
  t.ok(drains.length > 3);
  t.ok(drains.every((e) => e.scenario?.name.startsWith("drain-")));
  const two = await loadEntries("drain-qp-idle, fixtures/scenarios/post-send-in-error.yaml", at);
  t.same(
    two.map((e) => [e.scenario?.name, e.file]),
    [
      ["drain-qp-idle", "fixtures/scenarios/drain-qp-idle.yaml"],
      ["post-send-in-error", "fixtures/scenarios/post-send-in-error.yaml"],
    ],
    "names and paths, comma-separated; files named as the user reads them",
  );
  const err = await loadEntries("no-such-scenario-*", at).catch((e: unknown) => e);
  t.ok(err instanceof HilError);
  t.match((err as HilError).message, /no scenario matches "no-such-scenario-\*"/);
  t.equal((err as HilError).exitCode, 2);
});

t.test("--check: ok, or the loader's file:line:col error; exit 2 when one is bad", async (t) => {
  const entries = await loadEntries(`${BAD}/bad-enum.yaml,drain-qp-idle`, at);
  t.equal(exitCodeOf(entries), 2);
  const text = renderCheck(entries, []);
  t.equal(
    text,
    [
      `bad  ${BAD}/bad-enum.yaml:4:15: steps[0].modify.state: Invalid option: expected one of "RESET"|"INIT"|"RTR"|"RTS"|"SQD"|"SQE"|"ERR"`,
      "ok   drain-qp-idle  fixtures/scenarios/drain-qp-idle.yaml",
      "",
    ].join("\n"),
  );
  const all = await loadEntries(`${BAD}/*.yaml`, at);
  t.ok(all.length >= 8);
  for (const e of all) t.match(e.error?.where, new RegExp(`^${BAD}/[a-z-]+\\.yaml(:\\d+:\\d+)?$`), e.file);
  t.match(
    renderCheck(all),
    /bad {2}test\/fixtures\/scenarios-bad\/unknown-field\.yaml:5:3: qp\.rq_depth: unknown field/,
  );
  t.same(entriesJson(entries, "check")[0], {
    file: `${BAD}/bad-enum.yaml`,
    ok: false,
    error: {
      message: `steps[0].modify.state: Invalid option: expected one of "RESET"|"INIT"|"RTR"|"RTS"|"SQD"|"SQE"|"ERR"`,
      where: `${BAD}/bad-enum.yaml:4:15`,
    },
  });
  const missing = await loadEntries("./no/such/file.yaml", at);
  t.match(renderCheck(missing), /^bad {2}no\/such\/file\.yaml: cannot read the scenario file\n/);
});

t.test("--check: notes where the suite would not run it, a name used twice is an error", async (t) => {
  const dir = t.testdir({});
  write(dir, "a.yaml", [
    "name: twin",
    "description: softirq CQ and an unknown device profile",
    "covers: [9]",
    "device_profiles: [erdma-2022, my-profile]",
    "qp: { poll: softirq }",
    "steps:",
    "  - fault: { kind: error-wqe, queue: rq, status: RETRY_EXC_ERR }",
    "  - drain: {}",
  ]);
  write(dir, "b.yaml", ["name: twin", "description: d", "covers: [9]", "steps: [ { drain: {} } ]"]);
  const entries = await loadEntries(`${dir}/*.yaml`, at);
  const [a, b] = entries;
  t.equal(b?.error?.message, `scenario name "twin" is also the name of ${a?.file}`);
  const notes = scenarioNotes(a?.compiled as NonNullable<typeof a>["compiled"] & object, [
    "erdma-2022",
    "erdma-reflush",
  ]);
  t.match(notes, [
    /^on siw\/kernel: SKIP: step 1 \(line 7\): fault error-wqe needs the device model's fault injection/,
    /^on siw\/user: SKIP: written for the kernel's softirq CQ poll context/,
    /^on erdma\/kernel: MISS: step 1 \(line 7\): error-wqe status RETRY_EXC_ERR: erdma cannot report it on the rq/,
    /^on erdma\/user: SKIP: written for the kernel's softirq/,
    /^on rxe\/kernel: SKIP: step 1 \(line 7\): fault error-wqe needs the device model's fault injection; rxe has no device model/,
    /^on rxe\/user: SKIP: written for the kernel's softirq/,
    /^device_profiles: "my-profile" is not a device profile of fixtures\/profiles \(erdma-2022, erdma-reflush\)/,
  ]);
  t.equal(notes.length, 7);
  t.match(renderCheck(entries, ["erdma-2022"]), /^ok {3}twin {2}.*a\.yaml\n {5}note: on siw\/kernel: SKIP/);
});

t.test("--show: a sleep until the device is idle says the host waits on the device model", async (t) => {
  const dir = t.testdir({});
  const file = write(dir, "idle.yaml", [
    "description: d",
    "covers: [9]",
    "steps:",
    "  - sleep: { ms: 300, until: device_idle }",
    "  - drain: {}",
  ]);
  const lines = renderShow(await loadEntries(file, at)).split("\n");
  const at2 = lines.indexOf("    sleep ms=300");
  t.ok(at2 > 0, "the guest's sleep, for where the device cannot be asked");
  t.equal(
    lines[at2 - 1],
    "    (on the device model the host waits instead, until the device is idle, 300 ms at most; elsewhere:)",
  );
});

t.test("--show: the command lines of each stage, the watchdogs, the wr_ids, where it runs", async (t) => {
  const dir = t.testdir({});
  const file = write(dir, "show-me.yaml", [
    "description: a worked example",
    "covers: [1, 9]",
    "executors: [kernel]",
    "qp: { sq: 16, cq: separate }",
    "steps:",
    "  - post_recv: { on: peer, count: 4 }",
    "  - modify: { state: ERR }",
    "  - post_send: { count: 4, signal: last }",
    "  - poll: { cq: send, min: 4, wait_ms: 8000 }",
    "  - fault: { kind: drop-cqe, queue: sq, wr_id: 1003 }",
    "  - drain: { which: sq }",
    "    timeout_ms: 3000",
  ]);
  const entries = await loadEntries(file, at);
  const text = renderShow(entries);
  const expected = [
    `show-me  (${entries[0]?.file})`,
    "  a worked example",
    "  covers:",
    "    rule 1: a send posted in ERROR/SQE returns 0 and completes with a flush error",
    "    rule 9: ib_drain_* moves the QP to ERR, its marker is accepted and completes last on its queue, and it returns without a warning",
    "  rule sets: ib, iwarp-rdmac, linux",
    "  meant for: drivers siw, erdma, rxe; executors kernel; device profiles any",
    "  shared known bug (siw; kernels 6.1; executors kernel): rules 9 XFAIL; drivers/infiniband/sw/siw/siw_verbs.c:siw_query_qp",
    "  premise (checked on every run; not met: MISS):",
    "    - every device fault the scenario arms fires (the device's hardware trace)",
    "  where it runs:",
    "    siw/kernel: SKIP: step 5 (line 10): fault drop-cqe needs the device model's fault injection; siw has no device model",
    "    erdma/kernel: runs",
    "    rxe/kernel: SKIP: step 5 (line 10): fault drop-cqe needs the device model's fault injection; rxe has no device model",
    "  setup (watchdog 30000 ms):",
    "    device addr=10.0.2.15",
    "    pd name=pd rkey=global",
    "    cq name=scq depth=256 poll=direct",
    "    cq name=rcq depth=256 poll=direct",
    "    cq name=pcq depth=320 poll=softirq",
    "    listen name=lsn addr=10.0.2.15 port=7600 qp=peer pd=pd scq=pcq rcq=pcq sq=64 rq=256 buf=4096",
    "    connect name=qp addr=10.0.2.15 port=7600 pd=pd scq=scq rcq=rcq sq=16 rq=64 buf=4096 sig=req",
    "  step 1, line 6: post_recv (watchdog 10000 ms) wr_ids 4000-4003 on peer rq",
    "    post_recv qp=peer wr_id=4000 count=4",
    "  step 2, line 7: modify (watchdog 10000 ms)",
    "    modify qp=qp state=ERR",
    "  step 3, line 8: post_send, exercises rules 1, 6 (watchdog 10000 ms) wr_ids 1000-1003 on qp sq, signal last",
    "    post_send qp=qp wr_id=1000 op=send count=4 signal=last",
    "  step 4, line 9: poll, exercises rules 4, 5, 7 (watchdog 13000 ms)",
    "    poll cq=scq min=4 timeout=8000",
    "  step 5, line 10: fault (armed on the device's control channel once the steps before it are done; no hil_kverbs command)",
    "    device fault: kind=drop-cqe on=qp queue=sq wr_id=1003",
    "  step 6, line 11: drain, exercises rules 1, 4, 5, 9 (watchdog 3000 ms)",
    "    drain qp=qp which=sq",
    "  settle (kernel executor): a poll per CQ for the completions the trace says it still owes, then reset",
    "    poll cq=scq min=<owed> timeout=<wait>",
    "    poll cq=rcq min=<owed> timeout=<wait>",
    "    poll cq=pcq min=<owed> timeout=<wait>",
    "    reset",
    "  console barrier: the console slice ends at the kernel log line of this mark",
    "    mark id=<n>",
  ];
  t.equal(text, `${expected.join("\n")}\n`);
  const c = entries[0]?.compiled;
  t.ok(c);
  if (c)
    t.same(
      targetPlans(c).map((p) => `${p.driver}/${p.executor} ${p.plan.run}`),
      ["siw/kernel false", "erdma/kernel true", "rxe/kernel false"],
    );
  const json = entriesJson(entries, "show")[0] as Record<string, unknown>;
  t.same((json.setup as { commands: string[] }).commands.length, 7);
  t.match(json.steps, [
    {
      index: 0,
      line: 6,
      kind: "post_recv",
      timeoutMs: 10_000,
      posts: { qp: "peer", queue: "rq", wrId: 4000 },
    },
    { kind: "modify" },
    { kind: "post_send", posts: { signal: "last", count: 4 } },
    { kind: "poll", timeoutMs: 13_000 },
    { kind: "fault", commands: [], fault: { kind: "drop-cqe", wr_id: 1003 } },
    { kind: "drain", timeoutMs: 3000, commands: ["drain qp=qp which=sq"] },
  ]);
  t.match(json.targets, [{ driver: "siw", executor: "kernel", run: false, verdict: "SKIP" }, { run: true }]);
  const bad = renderShow(await loadEntries(`${BAD}/two-kinds.yaml`, at));
  t.equal(
    bad,
    `bad  ${BAD}/two-kinds.yaml:4:5: steps[0]: a step has one kind, this one has drain and query\n`,
  );
});

/** Runs the command in-process with commander, as main.ts would; stdout captured. */
async function inProcess(...args: string[]): Promise<{ stdout: string; exitCode: number }> {
  const { stdout, exitCode, err } = await runInProcess(registerScenariosCommand, ["scenarios", ...args]);
  if (err !== undefined) throw err;
  return { stdout, exitCode };
}

t.test("the command's modes and exit status, in process", async (t) => {
  const list = await inProcess("drain-qp-idle", "drain-rq-idle");
  t.equal(list.exitCode, 0);
  t.match(
    list.stdout,
    /^scenario .*\ndrain-qp-idle .*\n {4}ib_drain_qp .*\ndrain-rq-idle .*\n {4}ib_drain_rq .*\n$/,
  );
  const check = await inProcess(`${BAD}/missing-field.yaml`, "--check");
  t.equal(check.exitCode, 2);
  t.match(check.stdout, /missing-field\.yaml:1:1: description: Invalid input/);
  const json = JSON.parse((await inProcess("post-*", "--json")).stdout) as { name: string; ok: boolean }[];
  t.ok(json.length > 1 && json.every((e) => e.ok && e.name.startsWith("post-")));
  const show = await inProcess("drain-qp-idle", "--show");
  t.match(
    show.stdout,
    /\n {2}step 1, line 4: drain, exercises rules 1, 2, 4, 5, 9 \(watchdog 10000 ms\)\n {4}drain qp=qp which=qp\n/,
  );
});

t.test("hil scenarios through bin/hil", async (t) => {
  const list = await hil(["scenarios"]);
  t.equal(list.exitCode, 0, list.stderr);
  t.match(list.stdout, /\ndrain-qp-idle +9 /);
  t.match(list.stderr, /^hil: \d+ scenario file\(s\), \d+ ok\n$/);
  const bad = await hil(["scenarios", `${BAD}/bad-enum.yaml`, "--check"]);
  t.equal(bad.exitCode, 2);
  t.match(bad.stdout, `bad  ${BAD}/bad-enum.yaml:4:15: steps[0].modify.state:`);
  t.match(bad.stderr, /0 ok, 1 bad/);
  const none = await hil(["scenarios", "no-such-scenario"]);
  t.equal(none.exitCode, 2);
  t.match(none.stderr, /^hil: error: .*no scenario matches "no-such-scenario"/);
  const show = await hil(["scenarios", "drain-sq-idle", "--show", "--json"]);
  t.equal(show.exitCode, 0, show.stderr);
  const [entry] = JSON.parse(show.stdout) as { name: string; steps: { commands: string[] }[] }[];
  t.equal(entry?.name, "drain-sq-idle");
  t.ok(entry?.steps.some((s) => s.commands.includes("drain qp=qp which=sq")));
  const help = await hil(["scenarios", "--help"]);
  t.equal(help.exitCode, 0);
  t.match(help.stdout, /Usage: hil scenarios \[options\] \[patterns\.\.\.\]/);
  t.match(help.stdout, /Exit status: 0 every selected file loads and compiles; 2 bad input/);
});

t.test("a path glob over the scenario folder selects scenario files only, not its README", async (t) => {
  const files = matchScenarioFiles(join(SCENARIO_DIR, "*"));
  t.ok(files.length >= 35, `${files.length} files`);
  t.ok(
    files.every((f) => /\.ya?ml$/.test(f)),
    "only .yaml/.yml files",
  );
  t.notOk(
    files.some((f) => f.endsWith("README.md")),
    "README.md is documentation, not a scenario",
  );
});
