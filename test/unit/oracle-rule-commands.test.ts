// The commands rule (harness/oracle/run-commands.ts) on hand-built traces: every command sent shows
// in the trace in order with a result; a failure the scenario did not allow is an ERROR naming the
// step; posts, drains, settling polls and barriers are other rules' business; a poll short of
// completions a refused post or an owed flush explains is too; a stuck step may end the trace.
import t from "tap";
import { TraceModel } from "../../harness/oracle/model.ts";
import { commandsRule, rcAllowed } from "../../harness/oracle/run-commands.ts";
import type { Observation } from "../../harness/protocol/observations.ts";
import type { SentCommand } from "../../harness/scenario/sent-command.ts";
import { pair, TraceBuilder } from "../support/oracle-trace.ts";

const judge = (b: TraceBuilder, commands: SentCommand[] | undefined, observations: Observation[] = []) =>
  commandsRule.judge({
    model: new TraceModel(b.records),
    observations,
    profile: "linux",
    ...(commands ? { commands } : {}),
  });

const step = (line: string, step: number, more: Partial<SentCommand> = {}): SentCommand => ({
  line,
  phase: "step",
  step,
  stepLine: 10 + step,
  ...more,
});
const STUCK: Observation = {
  ev: "stuck",
  step: 1,
  op: "drain",
  ms: 9000,
  stack: "",
  state: "D (disk sleep)",
};

t.test("no command list: the rule does not apply", (t) => {
  t.same(judge(new TraceBuilder(), undefined), {
    verdict: "SKIP",
    reason: "no command list given",
    judged: 0,
    applies: false,
  });
  t.end();
});

t.test("every command ran as sent: PASS counting them", (t) => {
  const b = new TraceBuilder().cmd("create_qp qp").cmd("modify qp RTS");
  t.same(judge(b, [{ line: "create_qp qp", phase: "setup" }, step("modify qp RTS", 0)]), {
    verdict: "PASS",
    reason: "2 command(s) ran as sent; none failed unexpectedly",
    judged: 2,
    applies: true,
  });
  t.same(judge(new TraceBuilder(), []).verdict, "PASS", "nothing sent, nothing ran");
  t.end();
});

t.test("an empty trace for the commands sent is an ERROR quoting the first", (t) => {
  t.same(judge(new TraceBuilder(), [step("modify qp RTS", 0), step("drain qp", 1)]), {
    verdict: "ERROR",
    reason: "the executor's trace is empty: none of the 2 command(s) sent shows in it",
    evidence: ["first command: modify qp RTS"],
    judged: 0,
    applies: true,
  });
  t.end();
});

t.test("a command not sent, or another than sent, is an ERROR naming it", (t) => {
  const extra = judge(new TraceBuilder().cmd("a").cmd("b"), [{ line: "a", phase: "setup" }]);
  t.equal(extra.verdict, "ERROR");
  t.equal(extra.reason, "the trace shows a command that was not sent: #2 b");
  t.equal(extra.judged, 2);
  const other = judge(new TraceBuilder().cmd("a").cmd("c"), [{ line: "a", phase: "setup" }, step("b", 0)]);
  t.equal(other.reason, 'command #2 in the trace is "c"; the executor was sent "b"');
  t.end();
});

t.test("a command that never finished is an ERROR unless it is the last and a step was stuck", (t) => {
  const b = new TraceBuilder().cmd("a").cmd("drain qp", null);
  const cmds = [{ line: "a", phase: "setup" as const }, step("drain qp", 1)];
  t.equal(judge(b, cmds).reason, 'step 2 (line 11): "drain qp" started and never finished');
  t.same(judge(b, cmds, [STUCK]), {
    verdict: "PASS",
    reason: "2 command(s) ran as sent until the stuck one; none failed unexpectedly",
    judged: 2,
    applies: true,
  });
  t.equal(
    judge(
      b.raw({
        ev: "hang",
        call: 9,
        qp: "qp",
        op: "drain",
        which: "qp",
        queue: "sq",
        cq: "cq",
        waited_ms: 5000,
      }),
      cmds,
    ).verdict,
    "PASS",
    "the executor's hang record",
  );
  const early = new TraceBuilder().cmd("a", null).cmd("b");
  t.equal(
    judge(early, [{ line: "a", phase: "setup" }, step("b", 0)], [STUCK]).reason,
    'setup: "a" started and never finished',
    "stuck or not, only the last may be unfinished",
  );
  t.end();
});

t.test("the trace stops short: an ERROR naming the first command that never ran, unless stuck", (t) => {
  const b = new TraceBuilder().cmd("a");
  const cmds = [{ line: "a", phase: "setup" as const }, step("b", 0), step("c", 1)];
  t.same(judge(b, cmds), {
    verdict: "ERROR",
    reason: 'the trace stops after 1 of 3 command(s): step 1 (line 10) "b" never ran',
    evidence: ['the trace stops after 1 of 3 command(s): step 1 (line 10) "b" never ran'],
    judged: 1,
    applies: true,
  });
  t.equal(judge(b, cmds, [STUCK]).verdict, "PASS");
  t.end();
});

t.test("a step's expected return code", (t) => {
  const b = new TraceBuilder().cmd("modify qp RTS", -22).cmd("modify qp ERR", 0).cmd("poll cq 1", -11);
  const judged = judge(b, [
    step("modify qp RTS", 0, { expect: "error" }),
    step("modify qp ERR", 1, { expect: 0 }),
    step("poll cq 1", 2, { expect: "any" }),
  ]);
  t.equal(judged.verdict, "PASS");
  const wrong = judge(new TraceBuilder().cmd("modify qp RTS", 0).cmd("modify qp ERR", -22), [
    step("modify qp RTS", 0, { expect: "error" }),
    step("modify qp ERR", 1, { expect: -95 }),
  ]);
  t.same(wrong.evidence, [
    'step 1 (line 10): "modify qp RTS" returned 0; the scenario expects an error',
    'step 2 (line 11): "modify qp ERR" returned -22; the scenario expects -95',
  ]);
  t.equal(
    wrong.reason,
    'step 1 (line 10): "modify qp RTS" returned 0; the scenario expects an error (and 1 more)',
  );
  const expectedFail = judge(new TraceBuilder().cmd("post_send qp 1", -22), [
    step("post_send qp 1", 0, { kind: "post_send", expect: 0 }),
  ]);
  t.equal(expectedFail.verdict, "ERROR", "a post whose step says what it must return is judged here");
  t.same(
    [
      rcAllowed(0, "any"),
      rcAllowed(-1, "any"),
      rcAllowed(-1, "error"),
      rcAllowed(0, "error"),
      rcAllowed(-5, -5),
      rcAllowed(0, -5),
    ],
    [true, true, true, false, true, false],
  );
  t.end();
});

t.test(
  "a failure the scenario did not allow is an ERROR; the rules' steps, settles and barriers are not",
  (t) => {
    const b = new TraceBuilder().cmd("modify qp RTS", -22);
    t.same(judge(b, [step("modify qp RTS", 0, { kind: "modify" })]), {
      verdict: "ERROR",
      reason: 'step 1 (line 10): "modify qp RTS" failed: rc -22',
      evidence: ['step 1 (line 10): "modify qp RTS" failed: rc -22'],
      judged: 1,
      applies: true,
    });
    const withErr = new TraceBuilder().raw({ ev: "cmd", id: 1, line: "connect qp" });
    withErr.raw({ ev: "done", id: 1, op: "connect", rc: -111, us: 5, err: "ECONNREFUSED" });
    t.equal(
      judge(withErr, [{ line: "connect qp", phase: "setup" }]).reason,
      'setup: "connect qp" failed: rc -111 (ECONNREFUSED)',
    );
    t.equal(
      judge(new TraceBuilder().cmd("x", -1), [{ line: "x", phase: "step" }]).reason,
      'step 1 (line ?): "x" failed: rc -1',
      "a step without its number and line",
    );
    for (const kind of ["post_send", "post_recv", "drain"] as const)
      t.equal(
        judge(new TraceBuilder().cmd("x", -22), [step("x", 0, { kind })]).verdict,
        "PASS",
        `${kind}: rules 1-3 and 9 judge it`,
      );
    t.equal(
      judge(new TraceBuilder().cmd("x", -22), [{ line: "x", phase: "setup", kind: "drain" }]).verdict,
      "ERROR",
      "a drain in the setup is no step of the rules",
    );
    t.equal(judge(new TraceBuilder().cmd("x", -22), [step("x", 0)]).verdict, "ERROR", "a step of no kind");
    t.equal(
      judge(new TraceBuilder().cmd("poll cq 4", -11), [{ line: "poll cq 4", phase: "settle" }]).verdict,
      "PASS",
    );
    t.equal(
      judge(new TraceBuilder().cmd("barrier", -1), [{ line: "barrier", phase: "barrier" }]).verdict,
      "PASS",
    );
    t.equal(
      judge(new TraceBuilder().cmd("x", -22), [{ line: "x", phase: "teardown" }]).reason,
      'teardown: "x" failed: rc -22',
    );
    t.end();
  },
);

t.test("a poll short of completions: explained by a refused post before it or an owed completion", (t) => {
  const poll = (b: TraceBuilder) => b.cmd("poll cq 2", -11);
  const sent = [step("poll cq 2", 0, { kind: "poll" })];
  t.equal(judge(poll(pair()), sent).verdict, "ERROR", "nothing explains it");
  t.equal(
    judge(poll(pair().post("qp", "sq", 1, 1, { rc: -12 })), sent).verdict,
    "PASS",
    "a post refused before it",
  );
  const after = pair().cmd("poll cq 2", -11).post("qp", "sq", 1, 1, { rc: -12 });
  t.equal(judge(after, sent).verdict, "ERROR", "a post refused after it explains nothing");
  t.equal(
    judge(poll(pair().post("qp", "sq", 1, 1)), sent).verdict,
    "ERROR",
    "a post accepted explains nothing",
  );
  const owed = pair().post("qp", "sq", 1, 1).modify("qp", "ERR");
  t.equal(judge(poll(owed), sent).verdict, "PASS", "a WR the QP in ERR owes and never delivered");
  const delivered = pair().post("qp", "sq", 1, 1).modify("qp", "ERR").cqe("qp", "sq", 1);
  t.equal(judge(poll(delivered), sent).verdict, "ERROR", "an owed completion that came explains nothing");
  const notInErr = pair().post("qp", "sq", 1, 1);
  t.equal(judge(poll(notInErr), sent).verdict, "ERROR", "a WR not owed by the end");
  t.equal(
    judge(poll(pair().post("qp", "sq", 1, 1, { rc: -12 })), [step("poll cq 2", 0, { kind: "modify" })])
      .verdict,
    "ERROR",
    "only a poll",
  );
  t.end();
});

t.test("the problems are counted and listed, at most 12", (t) => {
  const b = new TraceBuilder();
  const cmds: SentCommand[] = [];
  for (let i = 0; i < 14; i++) {
    b.cmd(`c${i}`, -1);
    cmds.push({ line: `c${i}`, phase: "setup" });
  }
  const judged = judge(b, cmds);
  t.equal(judged.reason, 'setup: "c0" failed: rc -1 (and 13 more)');
  t.equal(judged.evidence?.length, 12);
  t.equal(judged.evidence?.[11], 'setup: "c11" failed: rc -1');
  t.end();
});

t.test("the rule's identity", (t) => {
  t.equal(commandsRule.id, "commands");
  t.match(commandsRule.citation, /^README, What is judged: /);
  t.match(commandsRule.title, /^every command the scenario sent ran/);
  t.end();
});
