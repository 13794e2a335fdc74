// The oracle's rules on hand-built traces: for each rule a trace that keeps it and traces that
// break it (the verdict quotes the offending records), and where the profiles differ (rule 1/2
// under iwarp-rdmac, rule 8 under iwarp-rdmac, rule 9 outside linux). Every trace is checked
// against hil_kverbs's trace schema first, so the rules see what the module can really write.
import t from "tap";
import { combineVerdicts, judgeTrace, RULES } from "../../harness/oracle/judge.ts";
import type { Observation } from "../../harness/protocol/observations.ts";
import type { SentCommand } from "../../harness/scenario/sent-command.ts";
import { LOC_PROT_ERR, pair, SUCCESS, TraceBuilder, verdictOf } from "../support/oracle-trace.ts";
import { drainedReceives } from "../support/unit-drain-trace.ts";

t.test("every rule has a citation and a title", async (t) => {
  t.same(
    RULES.map((r) => r.id),
    ["hang", "hw-protocol", "1", "2", "3", "4", "5", "6", "7", "9", "console", "commands"],
  );
  for (const r of RULES) t.ok(r.citation.length > 20 && r.title.length > 10, `rule ${r.id}: ${r.citation}`);
  t.match(RULES[1]?.citation, /erdma_flush_worker/);
  t.match(RULES[2]?.citation, /11\.4\.1\.1/);
  t.match(RULES[9]?.citation, /__ib_drain_sq/);
});

t.test("rule 1: sends posted in ERROR", async (t) => {
  const ok = pair().modify("qp", "ERR").post("qp", "sq", 10, 3).flush("qp", "sq", 10, 3);
  t.equal(verdictOf(ok, "1").verdict, "PASS", verdictOf(ok, "1").reason);

  const immediate = pair().modify("qp", "ERR").post("qp", "sq", 10, 2, { rc: -22, bad: 0 });
  const linux = verdictOf(immediate, "1", "linux");
  t.equal(linux.verdict, "FAIL", "linux: an immediate error is a FAIL");
  t.match(linux.reason, /returned -22, not 0/);
  t.match(linux.evidence?.join("\n"), /"ev":"post_ret","call":2,"rc":-22/, "quotes the post_ret record");
  t.equal(verdictOf(immediate, "1", "ib").verdict, "FAIL", "ib: a FAIL too (11.4.1.1)");
  const rdmac = verdictOf(immediate, "1", "iwarp-rdmac");
  t.equal(rdmac.verdict, "PASS", "iwarp-rdmac tolerates the immediate error (6.2.4)");
  t.match(rdmac.reason, /1 immediate error\(s\) tolerated/);

  const success = pair().modify("qp", "ERR").post("qp", "sq", 10, 1).cqe("qp", "sq", 10, { status: SUCCESS });
  t.match(verdictOf(success, "1").reason, /completed with SUCCESS, not WR_FLUSH_ERR/);
  t.equal(
    verdictOf(success, "1", "iwarp-rdmac").verdict,
    "FAIL",
    "a WR accepted in ERROR is flushed under every profile",
  );

  const lost = pair().modify("qp", "ERR").post("qp", "sq", 10, 2).flush("qp", "sq", 10, 1);
  t.match(verdictOf(lost, "1").reason, /WR 11 .* never completed/);

  t.equal(verdictOf(pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: 0 }), "1").verdict, "SKIP");
});

t.test("rule 2: receives posted in ERROR", async (t) => {
  const ok = pair()
    .drain("qp", "qp")
    .markerDone()
    .markerDone()
    .drained()
    .post("qp", "rq", 20, 4)
    .flush("qp", "rq", 20, 4);
  t.equal(verdictOf(ok, "2").verdict, "PASS", "a drain leaves the QP in ERR: posts after it are judged");
  t.equal(verdictOf(ok, "2").judged, 5, "the drain's RQ marker and the four receives after it");
  const refused = pair().modify("qp", "ERR").post("qp", "rq", 20, 4, { rc: -5, bad: 0 });
  t.equal(verdictOf(refused, "2").verdict, "FAIL");
  t.equal(verdictOf(refused, "2", "iwarp-rdmac").verdict, "PASS");
  t.equal(verdictOf(refused, "1").verdict, "SKIP", "rule 1 is about the send queue");
});

t.test("rule 3: partial posts", async (t) => {
  const ok = pair().modify("qp", "ERR").post("qp", "rq", 30, 4, { rc: -12, bad: 2 }).flush("qp", "rq", 30, 2);
  t.equal(verdictOf(ok, "3").verdict, "PASS", verdictOf(ok, "3").reason);

  const ghost = pair()
    .modify("qp", "ERR")
    .post("qp", "rq", 30, 4, { rc: -12, bad: 2 })
    .flush("qp", "rq", 30, 4);
  const v = verdictOf(ghost, "3");
  t.equal(v.verdict, "FAIL");
  t.match(v.reason, /WR 32 at or after \*bad_wr \(index 2\) .* was not posted but completed/);

  const noBad = pair().post("qp", "sq", 1, 2, { rc: -12, bad: null });
  t.match(verdictOf(noBad, "3").reason, /returned -12 without \*bad_wr/);

  const lost = pair().post("qp", "sq", 1, 4, { rc: -12, bad: 3 }).flush("qp", "sq", 1, 2).modify("qp", "ERR");
  t.match(verdictOf(lost, "3").reason, /WR 3 before \*bad_wr .* never completed/);

  const contradicted = pair().post("qp", "sq", 1, 4, { rc: 0, bad: 2 }).flush("qp", "sq", 1, 2);
  const c = verdictOf(contradicted, "3");
  t.equal(c.verdict, "FAIL", "a call that returns 0 yet hands back *bad_wr");
  t.match(c.reason, /post call \d+ on qp returned 0 with \*bad_wr at index 2/);
  t.same(
    c.problems?.[0]?.wrs?.map((w) => w.wrId),
    [3, 4],
    "it names the WRs the return code claims",
  );
  t.equal(verdictOf(pair().post("qp", "sq", 1, 2, { rc: 0, bad: null }), "3").verdict, "SKIP");
  t.equal(verdictOf(pair(), "3").verdict, "SKIP");
});

t.test("rule 4: posting order per work queue", async (t) => {
  const ok = pair()
    .post("qp", "sq", 1, 4, { signal: "2" })
    .cqe("qp", "sq", 2, { status: SUCCESS })
    .modify("qp", "ERR")
    .cqe("qp", "sq", 4)
    .post("qp", "rq", 10, 2)
    .flush("qp", "rq", 10, 2);
  t.equal(verdictOf(ok, "4").verdict, "PASS", "gaps (unsignaled WRs) are not swaps");

  const swapped = pair()
    .post("qp", "rq", 10, 3)
    .modify("qp", "ERR")
    .cqe("qp", "rq", 10)
    .cqe("qp", "rq", 12)
    .cqe("qp", "rq", 11);
  const v = verdictOf(swapped, "4");
  t.equal(v.verdict, "FAIL");
  t.match(v.reason, /qp rq: WR 11 completed after WR 12, which was posted later/);
  t.same(
    v.problems?.[0]?.wrs?.map((w) => w.wrId),
    [11, 12],
    "the problem names both WRs",
  );
  t.match(v.evidence?.join("\n"), /"wr_id":12[\s\S]*"wr_id":11/, "quotes both completions, in trace order");

  const interleaved = pair().post("qp", "rq", 10, 2).post("qp", "sq", 1, 2).modify("qp", "ERR");
  interleaved.cqe("qp", "sq", 1).cqe("qp", "rq", 10).cqe("qp", "sq", 2).cqe("qp", "rq", 11);
  t.equal(verdictOf(interleaved, "4").verdict, "PASS", "order is per queue, not across queues");
});

t.test("rule 5: each outstanding WR completes exactly once, on its own CQ", async (t) => {
  const separate = () =>
    new TraceBuilder()
      .qp("qp", { qpNum: 7, scq: "scq", rcq: "rcq" })
      .post("qp", "rq", 10, 3)
      .modify("qp", "ERR");
  t.equal(verdictOf(separate().flush("qp", "rq", 10, 3), "5").verdict, "PASS");

  const twice = separate().flush("qp", "rq", 10, 3).cqe("qp", "rq", 11);
  t.match(verdictOf(twice, "5").reason, /qp rq WR 11 completed 2 times/);

  const wrongCq = separate().cqe("qp", "rq", 10).cqe("qp", "rq", 11, { cq: "scq" }).cqe("qp", "rq", 12);
  const w = verdictOf(wrongCq, "5");
  t.equal(w.verdict, "FAIL");
  t.match(w.reason, /WR 11 completed on scq, its queue's CQ is rcq/);

  const dropped = separate().cqe("qp", "rq", 10).cqe("qp", "rq", 12);
  t.match(verdictOf(dropped, "5").reason, /WR 11 \(posted in RTS\) never completed though qp ended in ERR/);

  const ghost = separate().flush("qp", "rq", 10, 3).cqe("qp", "rq", 99, { call: 42 });
  t.match(verdictOf(ghost, "5").reason, /WR 99 that was never posted/);

  const stillRts = new TraceBuilder().qp("qp", { qpNum: 7 }).post("qp", "rq", 10, 3);
  const rts = verdictOf(stillRts, "5");
  t.same(
    [rts.verdict, rts.judged],
    ["SKIP", 0],
    "receives outstanding on a QP in RTS owe nothing yet: nothing to judge",
  );

  // an RC QP whose WR completes in error (not a flush) is in ERROR: what it still owes is judged
  const remote = new TraceBuilder()
    .qp("qp", { qpNum: 7, scq: "scq", rcq: "rcq" })
    .post("qp", "rq", 10, 3)
    .post("qp", "sq", 1, 2)
    .cqe("qp", "sq", 1, { status: LOC_PROT_ERR, cq: "scq" })
    .cqe("qp", "sq", 2, { cq: "scq" })
    .cqe("qp", "rq", 10)
    .cqe("qp", "rq", 11);
  t.match(
    verdictOf(remote, "5").reason,
    /qp rq WR 12 \(posted in RTS\) never completed though qp ended in ERR/,
  );
});

t.test("rule 6: unsignaled WRs", async (t) => {
  const ok = pair().modify("qp", "ERR").post("qp", "sq", 1, 3, { signal: "none" }).flush("qp", "sq", 1, 3);
  t.equal(verdictOf(ok, "6").verdict, "PASS");

  const silent = pair()
    .modify("qp", "ERR")
    .post("qp", "sq", 1, 3, { signal: "none" })
    .post("qp", "sq", 4, 1)
    .cqe("qp", "sq", 4);
  const v = verdictOf(silent, "6");
  t.equal(v.verdict, "FAIL");
  t.match(v.reason, /unsignaled WR 1 posted to qp in ERR got no error completion/);

  const success = pair().post("qp", "sq", 1, 2, { signal: "none" }).cqe("qp", "sq", 1, { status: SUCCESS });
  t.match(verdictOf(success, "6").reason, /unsignaled WR 1 on qp has a SUCCESS completion/);

  // the storage pattern: an unsignaled WR executed before the error owes nothing, the signaled
  // SEND after the error is flushed
  const storage = pair()
    .post("qp", "sq", 1, 1, { signal: "none", op: "write" })
    .modify("qp", "ERR")
    .post("qp", "sq", 2, 1)
    .cqe("qp", "sq", 2);
  t.equal(verdictOf(storage, "6").verdict, "PASS");
  t.equal(verdictOf(storage, "1").verdict, "PASS");

  const sigAll = new TraceBuilder()
    .qp("qp", { qpNum: 1, sigAll: true })
    .modify("qp", "ERR")
    .post("qp", "sq", 1, 2, { signal: "none" });
  t.equal(verdictOf(sigAll, "6").verdict, "SKIP", "sig_all: no send WR is unsignaled");
  t.match(verdictOf(sigAll, "5").reason, /WR 1 .* never completed/, "and each is owed a completion");
});

t.test("rule 7: defined fields; an error completion's opcode is not judged", async (t) => {
  const oddOpcode = pair()
    .modify("qp", "ERR")
    .post("qp", "rq", 10, 1)
    .cqe("qp", "rq", 10, { opcode: "send" });
  t.equal(verdictOf(oddOpcode, "7").verdict, "PASS", "a flushed RECV reported as SEND is not judged");

  const wrongOp = pair().post("qp", "sq", 1, 1).cqe("qp", "sq", 1, { status: SUCCESS, opcode: "write" });
  const v = verdictOf(wrongOp, "7");
  t.equal(v.verdict, "FAIL");
  t.match(v.reason, /successful completion of send WR 1 on qp has opcode RDMA_WRITE/);

  const wrongQp = pair().modify("qp", "ERR").post("qp", "rq", 10, 1).cqe("qp", "rq", 10, { qpNum: 9 });
  t.match(verdictOf(wrongQp, "7").reason, /carries qp_num 9, qp is 1/);

  const unknownStatus = pair()
    .modify("qp", "ERR")
    .post("qp", "rq", 10, 1)
    .cqe("qp", "rq", 10, { status: 77 });
  t.match(verdictOf(unknownStatus, "7").reason, /status 77, not an IB_WC status/);
});

t.test("rule 9: the Linux drain contract, judged on the observed drain", async (t) => {
  const ok = drainedReceives(10, 2);
  t.equal(verdictOf(ok, "9").verdict, "PASS", verdictOf(ok, "9").reason);
  t.equal(verdictOf(ok, "9").judged, 1);
  const underIb = verdictOf(ok, "9", "ib");
  t.same([underIb.verdict, underIb.applies], ["SKIP", false], "judged under linux only");
  t.equal(verdictOf(ok, "4").verdict, "PASS", "the markers are WRs of their queues: in order");
  t.equal(verdictOf(ok, "2").verdict, "PASS", "the RQ marker is a receive posted in ERR, flushed");

  const hung = pair().post("qp", "rq", 10, 2).drain("qp", "qp").markerDone();
  const stuck: Observation = {
    ev: "stuck",
    step: 1,
    op: "drain",
    ms: 5003,
    state: "D (disk sleep)",
    stack:
      "[<0>] __wait_for_common+0x8f/0x1b0\n[<0>] __ib_drain_rq+0x8d/0xd0 [ib_core]\n[<0>] ib_drain_qp+0x22/0x60 [ib_core]",
  };
  const h = verdictOf(hung, "9", "linux", [stuck]);
  t.equal(h.verdict, "FAIL");
  t.match(
    h.reason,
    /ib_drain_qp on qp did not return within 5003 ms \(worker D \(disk sleep\)\): its rq marker never completed/,
  );
  t.match(h.evidence?.join("\n"), /stack: \[<0>\] __ib_drain_rq/, "the stuck task's stack is the evidence");
  const hang = verdictOf(hung, "hang", "ib", [stuck]);
  t.equal(hang.verdict, "FAIL", "a hang fails under every profile");

  // the marker completes before an earlier WR's flush: the drain returns with a WR outstanding
  const early = pair()
    .post("qp", "sq", 1, 2)
    .drain("qp", "sq")
    .cqe("qp", "sq", 1)
    .markerDone()
    .drained()
    .cqe("qp", "sq", 2);
  const e9 = verdictOf(early, "9");
  t.equal(e9.verdict, "FAIL");
  t.match(e9.reason, /qp sq WR 2 completed after the drain's marker/);
  t.same(
    e9.problems?.[0]?.wrs?.map((w) => w.wrId),
    [2, -1],
    "the problem names the WR and the marker",
  );
  t.match(
    verdictOf(early, "4").reason,
    /qp sq: WR 2 completed after the drain's marker, which was posted later/,
  );

  const missing = pair().post("qp", "sq", 1, 2).drain("qp", "sq").cqe("qp", "sq", 1).markerDone().drained();
  t.match(verdictOf(missing, "9").reason, /qp sq WR 2 had not completed when ib_drain_sq returned/);

  const otherQueue = pair()
    .post("qp", "rq", 10, 2)
    .drain("qp", "sq")
    .markerDone()
    .drained()
    .flush("qp", "rq", 10, 2);
  t.equal(verdictOf(otherQueue, "9").verdict, "PASS", "ib_drain_sq does not wait for receives");

  const refused = pair().drain("qp", "sq", { markerRc: -12 }).drained();
  const r9 = verdictOf(refused, "9");
  t.equal(r9.verdict, "FAIL");
  t.match(r9.reason, /the sq drain marker of qp was refused \(post returned -12\)/);
  t.match(verdictOf(refused, "1").reason, /the drain's sq marker post to qp in ERR returned -12/);

  const noErr = pair().drain("qp", "sq", { modifyRc: -22 }).drained("RTS");
  t.match(verdictOf(noErr, "9").reason, /could not move qp to ERR \(ib_modify_qp returned -22\)/);

  const notErrAfter = pair().drain("qp", "sq").markerDone().drained("RTS");
  t.match(verdictOf(notErrAfter, "9").reason, /qp is in RTS after ib_drain_sq, not ERR/);

  // the executor saw the drain but not its marker: the rule cannot vouch for it
  const unseen = pair()
    .raw({ ev: "drain", call: 50, qp: "qp", which: "sq" })
    .raw({ ev: "drain_ret", call: 50, us: 9, state: "ERR" });
  const u9 = verdictOf(unseen, "9");
  t.equal(u9.verdict, "ERROR");
  t.match(u9.reason, /the sq marker of ib_drain_sq on qp was not observed/);

  const warned: Observation = {
    ev: "console",
    kind: "warn",
    text: "WARNING: CPU: 0 PID: 90 at drivers/infiniband/core/verbs.c:2800 __ib_drain_sq+0x1/0x2",
    trace: ["__ib_drain_sq+0x1/0x2", "ib_drain_qp+0x22/0x60"],
  };
  t.match(verdictOf(ok, "9", "linux", [warned]).reason, /the kernel warned during a drain/);
  t.equal(verdictOf(ok, "console", "ib", [warned]).verdict, "FAIL");
  t.equal(verdictOf(ok, "console").verdict, "PASS");
});

t.test("the commands rule: every command sent ran and returned what the scenario allows", async (t) => {
  const sent: SentCommand[] = [
    { line: "pd name=pd", phase: "setup" },
    { line: "modify qp=qp state=ERR", phase: "step", step: 0, stepLine: 7, kind: "modify" },
    { line: "poll cq=cq min=8 timeout=1000", phase: "step", step: 1, stepLine: 8, kind: "poll" },
    { line: "post_send qp=qp wr_id=1 count=40", phase: "step", step: 2, stepLine: 9, kind: "post_send" },
    { line: "poll cq=cq min=0 timeout=0", phase: "settle" },
  ];
  const judge = (b: TraceBuilder, commands = sent, observations: Observation[] = []) => {
    const [j] = judgeTrace({ records: b.records, observations, commands }, ["linux"]);
    return j?.rules.find((r) => r.rule === "commands");
  };
  const run = (rcs: (number | null)[]) => {
    const b = pair();
    for (const [i, c] of sent.slice(0, rcs.length).entries()) b.cmd(c.line, rcs[i] ?? null);
    return b;
  };
  const ok = judge(run([0, 0, 0, -12, -110]));
  t.same([ok?.verdict, ok?.judged], ["PASS", 5], "a post's error is rule 3's, a settling poll's rule 5's");

  const modify = judge(run([0, -22, 0, 0, 0]));
  t.equal(modify?.verdict, "ERROR");
  t.match(modify?.reason, /^step 1 \(line 7\): "modify qp=qp state=ERR" failed: rc -22/);

  const poll = judge(run([0, 0, -110, 0, 0]));
  t.match(
    poll?.reason,
    /^step 2 \(line 8\): "poll cq=cq min=8 timeout=1000" failed: rc -110/,
    "a poll whose min was not reached",
  );

  const empty = judge(pair());
  t.match(empty?.reason, /the executor's trace is empty: none of the 5 command\(s\) sent shows in it/);

  const short = judge(run([0, 0]));
  t.match(
    short?.reason,
    /the trace stops after 2 of 5 command\(s\): step 2 \(line 8\) "poll cq=cq min=8 timeout=1000" never ran/,
  );
  const stuck: Observation = { ev: "stuck", step: 1, op: "poll", ms: 9000, stack: "", state: "D" };
  t.equal(
    judge(run([0, 0, null]), sent, [stuck])?.verdict,
    "PASS",
    "a stuck step ends the trace there: the hang rule's",
  );

  const other = pair().cmd("pd name=pd").cmd("frob x=1");
  t.match(
    judge(other)?.reason,
    /command #2 in the trace is "frob x=1"; the executor was sent "modify qp=qp state=ERR"/,
  );

  const wantsError: SentCommand[] = sent.map((c) => (c.kind === "post_send" ? { ...c, expect: "error" } : c));
  t.equal(judge(run([0, 0, 0, -12, 0]), wantsError)?.verdict, "PASS", "the partial post the step expects");
  t.match(
    judge(run([0, 0, 0, 0, 0]), wantsError)?.reason,
    /step 3 \(line 9\): "post_send qp=qp wr_id=1 count=40" returned 0; the scenario expects an error/,
    "a chain meant to overflow that fit",
  );
  const exact: SentCommand[] = sent.map((c) => (c.kind === "modify" ? { ...c, expect: -22 } : c));
  t.equal(judge(run([0, -22, 0, 0, 0]), exact)?.verdict, "PASS", "a failure the step expects");
  t.equal(judge(run([0, 0, 0, 0, 0]))?.verdict, "PASS");
  t.equal(
    judge(
      run([0, -22, 0, 0, 0]),
      exact.map((c) => ({ ...c })),
    )?.verdict,
    "PASS",
  );

  const [withFail] = judgeTrace(
    {
      records: run([0, -22, 0, 0, 0]).post("qp", "sq", 1, 1).modify("qp", "ERR").records,
      observations: [],
      commands: sent,
    },
    ["linux"],
  );
  t.equal(withFail?.verdict, "FAIL", "a rule's FAIL wins over the commands rule's ERROR");
});

t.test("a covered rule that judged nothing makes the scenario a MISS, never a PASS", async (t) => {
  const b = pair().post("qp", "sq", 1, 12).flush("qp", "sq", 1, 12).modify("qp", "ERR");
  const [j] = judgeTrace({ records: b.records, observations: [] }, ["linux"], { covers: [3, 5] });
  t.equal(j?.verdict, "MISS");
  const r3 = j?.rules.find((r) => r.rule === "3");
  t.same([r3?.verdict, r3?.judged], ["MISS", 0]);
  t.match(r3?.reason, /^rule 3 not exercised: no post call failed/);
  const [ib] = judgeTrace({ records: b.records, observations: [] }, ["ib"], { covers: [5, 9] });
  t.equal(ib?.verdict, "PASS", "rule 9 is not judged under ib: covering it asks nothing there");
  const [plain] = judgeTrace({ records: b.records, observations: [] }, ["linux"]);
  t.equal(plain?.verdict, "PASS", "rules a scenario does not cover may find nothing");
});

t.test("a trace that lost records cannot be judged: ERROR", async (t) => {
  const b = pair().raw({ ev: "overflow" });
  const [j] = judgeTrace({ records: b.records, observations: [] }, ["linux"]);
  t.equal(j?.verdict, "ERROR");
  t.match(j?.rules[0]?.reason, /lost records/);
  const r = pair().raw({ ev: "reject", line: "frob", why: "unknown operation" });
  t.match(
    judgeTrace({ records: r.records, observations: [] }, ["ib"])[0]?.rules[0]?.reason,
    /refused a command: frob/,
  );
});

t.test("a scenario's verdict per profile", async (t) => {
  t.equal(combineVerdicts(["PASS", "SKIP", "FAIL", "ERROR"]), "FAIL");
  t.equal(combineVerdicts(["PASS", "SKIP", "MISS"]), "MISS");
  t.equal(combineVerdicts(["PASS", "SKIP"]), "PASS");
  t.equal(combineVerdicts(["SKIP"]), "SKIP");
  const b = pair().modify("qp", "ERR").post("qp", "sq", 10, 2, { rc: -22, bad: 0 });
  const js = judgeTrace({ records: b.records, observations: [] }, ["ib", "iwarp-rdmac", "linux"]);
  t.same(
    js.map((j) => [j.profile, j.verdict]),
    [
      ["ib", "FAIL"],
      ["iwarp-rdmac", "PASS"],
      ["linux", "FAIL"],
    ],
  );
});
