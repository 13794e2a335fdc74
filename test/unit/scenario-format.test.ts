// The scenario file format: a valid file with its defaults filled in, every fixture scenario
// valid, and for each kind of mistake one clear error naming the file, the line and the field
// (the bad files are in test/fixtures/scenarios-bad).
import { fileURLToPath } from "node:url";
import t from "tap";
import { loadScenarioFile, parseScenario } from "../../harness/scenario/load.ts";
import { selectScenarios } from "../../harness/scenario/select.ts";
import type { HilError } from "../../util/errors.ts";
import { hilErrorOf } from "../support/hil-error.ts";

const BAD = fileURLToPath(new URL("../fixtures/scenarios-bad/", import.meta.url));

const errorOf = (file: string) =>
  hilErrorOf(() => loadScenarioFile(`${BAD}${file}`), `${file} loaded without an error`);

t.test("a scenario with its defaults", async (t) => {
  const s = parseScenario(
    [
      "description: receives flushed by a drain",
      "covers: [2, 9]",
      "qp: { cq: separate }",
      "steps:",
      "  - post_recv: { count: 3 }",
      "  - drain: {}",
      "  - poll: { cq: recv, min: 3 }",
      "    timeout_ms: 2000",
    ].join("\n"),
    "dir/recv-drain.yaml",
  );
  t.equal(s.name, "recv-drain", "the name is the file's");
  t.same(s.profiles, ["ib", "iwarp-rdmac", "linux"]);
  t.same(s.drivers, ["siw", "erdma", "rxe"]);
  t.same(s.qp, {
    type: "rc",
    sq: 64,
    rq: 64,
    cq: "separate",
    cq_depth: 256,
    poll: "direct",
    sig_all: false,
    buf: 4096,
    inline: 0,
    connect: "established",
  });
  t.same(s.peer, { sq: 64, rq: 256, poll: "softirq", cq: "own" });
  t.same(s.steps[1], { drain: { on: "qp", which: "qp" } });
  t.same(s.steps[2], { poll: { cq: "recv", min: 3, wait_ms: 1000 }, timeout_ms: 2000 });
  t.same(s.stepLines, [5, 6, 7], "each step's line");
  t.equal(s.timeout_ms, 10_000);
});

t.test("every fixture scenario is valid, names unique", async (t) => {
  const all = await selectScenarios(undefined);
  t.ok(all.length >= 25, `${all.length} scenarios`);
  const covered = new Set(all.flatMap((s) => s.covers));
  for (const rule of [1, 2, 3, 4, 5, 6, 7, 9]) t.ok(covered.has(rule), `rule ${rule} has a scenario`);
});

/** Each mistake of test/fixtures/scenarios-bad: where its error points (the file's line:column, or a
 * pattern for the whole place) and its message (a string is the whole message, a pattern a part). */
const MISTAKES: { title: string; file: string; at?: string | RegExp; message: string | RegExp }[] = [
  {
    title: "an unknown field: its line, its path",
    file: "unknown-field.yaml",
    at: "5:3",
    message: "qp.rq_depth: unknown field",
  },
  {
    title: "a value of the wrong type, in a step",
    file: "wrong-type.yaml",
    at: "6:7",
    message:
      /^steps\[1\]\.post_send\.count: a count \(1-4096\) or one per driver \(\{ siw: 15, erdma: 63 \}\): Invalid input: expected number, received string/,
  },
  {
    title: "a required field missing: the mapping it belongs in",
    file: "missing-field.yaml",
    at: "1:1",
    message: /^description: Invalid input: expected string, received undefined/,
  },
  {
    title: "a step of no known kind",
    file: "unknown-step.yaml",
    at: "5:5",
    message: /^steps\[1\]: a step is one of post_send, post_recv, .*, not flush_everything/,
  },
  {
    title: "a step with two kinds",
    file: "two-kinds.yaml",
    at: "4:5",
    message: "steps[0]: a step has one kind, this one has drain and query",
  },
  {
    title: "a value outside its set",
    file: "bad-enum.yaml",
    at: "4:15",
    message: /^steps\[0\]\.modify\.state: Invalid option: expected one of "RESET"\|/,
  },
  {
    title: "a YAML syntax error",
    file: "yaml-syntax.yaml",
    at: /yaml-syntax\.yaml:5:\d+$/,
    message: /^\(yaml\): /,
  },
  {
    title: "a cross-field check: len beyond the QP's buffer",
    file: "len-over-buf.yaml",
    at: "7:7",
    message: "steps[0].post_send.len: len 2048 is more than the QP's buf 1024",
  },
  {
    title: "a cross-field check: the invalid WR of a partial post must fall inside each call",
    file: "bad-past-call.yaml",
    at: "7:7",
    message:
      "steps[0].post_send.bad: bad 4 is past the end of each call (4 WRs a call): no WR would be invalid",
  },
  {
    title: "a cross-field check: a step's own watchdog must outlast its wait",
    file: "watchdog-before-wait.yaml",
    at: "6:5",
    message:
      /^steps\[1\]\.timeout_ms: the step's watchdog \(3000 ms\) ends it before its own wait \(8000 ms\)/,
  },
  { title: "a file that is not there", file: "no-such.yaml", message: "cannot read the scenario file" },
];

for (const { title, file, at, message } of MISTAKES) {
  t.test(title, async (t) => {
    const e = await errorOf(file);
    if (at instanceof RegExp) t.match(e.where, at);
    else t.equal(e.where, at === undefined ? `${BAD}${file}` : `${BAD}${file}:${at}`);
    if (message instanceof RegExp) t.match(e.message, message);
    else t.equal(e.message, message);
  });
}

t.test("a CQ smaller than the completions its queues can hold unpolled is refused", async (t) => {
  const e = await errorOf("cq-overrun.yaml");
  t.equal(e.where, `${BAD}cq-overrun.yaml:3:23`);
  t.equal(
    e.message,
    "qp.cq_depth: cq_depth 16 is smaller than the 34 completions the QP's CQ can hold unpolled " +
      "(its queues: sq 64 + rq 64 = 128; its steps: 34 WRs, drain markers and duplicated CQEs): " +
      "the CQ could overrun and lose completions that would be blamed on the driver",
  );
  const base = ["description: d", "covers: [5]"];
  const steps = ["steps:", "  - post_send: { count: 40 }", "  - drain: { which: sq }"];
  t.doesNotThrow(
    () => parseScenario([...base, "qp: { sq: 8, rq: 8, cq_depth: 16 }", ...steps].join("\n"), "x.yaml"),
    "queues of 8 + 8 cannot overrun 16 entries, whatever the steps post",
  );
  t.throws(
    () =>
      parseScenario([...base, "qp: { sq: 64, cq: separate, cq_depth: 40 }", ...steps].join("\n"), "x.yaml"),
    /the 41 completions the QP's send CQ can hold unpolled/,
    "40 sends and the SQ's drain marker on a separate send CQ of 40",
  );
  t.doesNotThrow(
    () =>
      parseScenario([...base, "qp: { sq: 64, cq: separate, cq_depth: 41 }", ...steps].join("\n"), "x.yaml"),
    "41 entries hold them",
  );
  t.throws(
    () =>
      parseScenario(
        [
          ...base,
          "qp: { cq_depth: 20 }",
          "peer: { cq: qp }",
          "steps:",
          "  - post_recv: { on: peer, count: 12 }",
          "  - post_send: { count: 8 }",
          "  - fault: { kind: duplicate-cqe, queue: sq, count: 1 }",
        ].join("\n"),
        "x.yaml",
      ),
    /the 21 completions the QP's CQ can hold unpolled \(its queues: sq 64 \+ rq 64 \+ peer\.sq 64 \+ peer\.rq 256 = 448/,
    "the peer's completions on the QP's CQ and a duplicated CQE count",
  );
});

t.test("several problems: the first is the message, the rest the detail", async (t) => {
  try {
    parseScenario("covers: [10]\nbogus: 1\nsteps: []\n", "x.yaml");
    t.fail("no error");
  } catch (err) {
    const e = err as HilError;
    t.equal(e.where, "x.yaml:1:1");
    t.match(e.detail, /x\.yaml:1:\d+: covers\[0\]: /);
    t.match(e.detail, /x\.yaml:2:1: bogus: unknown field/);
    t.match(e.detail, /x\.yaml:3:\d+: steps: /);
  }
});

t.test("folded texts quoted in verdict lines lose YAML's closing newline", async (t) => {
  const s = parseScenario(
    [
      "description: folded texts",
      "covers: [5]",
      "steps:",
      "  - fault: { kind: duplicate-cqe, queue: rq, wr_id: 2000 }",
      "expect_fail:",
      "  rules: [5]",
      "  why: >",
      "    the device writes",
      "    it twice",
      "known_bugs:",
      "  - driver: erdma",
      "    rules: [4]",
      "    failure: x",
      "    reference: drivers/x.c:f",
      "    note: >",
      "      a note",
      "",
    ].join("\n"),
    "folded.yaml",
  );
  t.equal(s.expect_fail?.why, "the device writes it twice");
  t.equal(s.known_bugs?.[0]?.note, "a note");
});

t.test(
  "the language's newer steps and fields: inline needs qp.inline, destroy, a peer on the QP's CQ",
  async (t) => {
    const errorOf = (text: string) => {
      try {
        parseScenario(text, "new.yaml");
      } catch (err) {
        return err as HilError;
      }
      throw new Error("no error");
    };
    const head = "description: d\ncovers: [1]\n";
    const tooLong = errorOf(`${head}steps:\n  - post_send: { count: 2, len: 128, inline: true }\n`);
    t.match(
      tooLong.message,
      /^steps\[0\]\.post_send\.inline: an inline post of 128 bytes needs qp\.inline of at least that \(it is 0\)/,
    );
    t.match(tooLong.where, /^new\.yaml:4:/, "the step's line");
    const ok = parseScenario(
      `${head}qp: { inline: 128 }\npeer: { cq: qp }\nsteps:\n  - post_send: { count: 2, len: 128, inline: true }\n  - destroy: {}\n`,
      "ok.yaml",
    );
    t.equal(ok.qp.inline, 128);
    t.equal(ok.peer.cq, "qp");
    t.same(ok.steps[1], { destroy: { on: "qp" } });
    const badPeerCq = errorOf(`${head}peer: { cq: both }\nsteps:\n  - drain: { which: qp }\n`);
    t.match(badPeerCq.message, /^peer\.cq: /);
    const badDestroy = errorOf(`${head}steps:\n  - destroy: { on: nobody }\n`);
    t.match(badDestroy.message, /^steps\[0\]\.destroy\.on: /);
  },
);

t.test("a QP that is never connected has no peer to act on", async (t) => {
  const e = await hilErrorOf(
    async () =>
      parseScenario(
        [
          "description: d",
          "covers: [9]",
          "qp: { connect: refused }",
          "steps:",
          "  - post_send: { on: peer, count: 1 }",
          "  - drain: {}",
        ].join("\n"),
        "peerless.yaml",
      ),
    "a step on the peer of a refused QP loaded",
  );
  t.equal(
    e.message,
    "steps[0].post_send.on: qp.connect: refused leaves the QP without a peer: a step on: peer has nothing to act on",
  );
  const fanout = await hilErrorOf(
    async () =>
      parseScenario(
        [
          "description: d",
          "covers: [9]",
          "qp: { connect: never }",
          "fanout: { pairs: 2 }",
          "steps: [ { drain: {} } ]",
        ].join("\n"),
        "fanout.yaml",
      ),
    "a fanout beside a never-connected QP loaded",
  );
  t.match(fanout.message, /^fanout: qp\.connect: never leaves the QP without a peer; fanout pairs/);
});
