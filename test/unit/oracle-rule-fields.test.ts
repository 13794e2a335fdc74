// Rule 7 (the fields a completion defines) on hand-built traces: the opcode each posted op's
// successful completion may carry (kv_wc_opcode_name's names), qp_num and status judged on every
// completion, an error completion's opcode never, and what each problem quotes.
import t from "tap";
import { pair, quoted, SUCCESS, TraceBuilder, verdictOf } from "../support/oracle-trace.ts";

/** each posted op with the IB_WC opcode names its successful completion may carry */
const SUCCESS_OPCODES: [op: string, queue: "sq" | "rq", opcodes: string[]][] = [
  ["send", "sq", ["SEND"]],
  ["send_imm", "sq", ["SEND"]],
  ["write", "sq", ["RDMA_WRITE"]],
  ["write_imm", "sq", ["RDMA_WRITE"]],
  ["read", "sq", ["RDMA_READ"]],
  ["reg_mr", "sq", ["REG_MR"]],
  ["local_inv", "sq", ["LOCAL_INV"]],
  ["send_inv", "sq", ["SEND"]],
  ["recv", "rq", ["RECV", "RECV_RDMA_WITH_IMM"]],
];

t.test("a successful completion carries its op's opcode", async (t) => {
  for (const [op, queue, opcodes] of SUCCESS_OPCODES) {
    for (const opcodeName of opcodes) {
      const b = pair().post("qp", queue, 1, 1, { op }).cqe("qp", queue, 1, { status: SUCCESS, opcodeName });
      t.equal(verdictOf(b, "7").verdict, "PASS", `${op} completed as ${opcodeName}`);
    }
    const other = opcodes.includes("SEND") ? "RDMA_READ" : "SEND";
    const wrong = pair()
      .post("qp", queue, 1, 1, { op })
      .cqe("qp", queue, 1, { status: SUCCESS, opcodeName: other });
    t.equal(
      verdictOf(wrong, "7").reason,
      `successful completion of ${op} WR 1 on qp has opcode ${other}`,
      `${op} completed as ${other}`,
    );
  }
});

t.test("nothing to judge: SKIP", async (t) => {
  for (const b of [pair().modify("qp", "ERR"), pair().cqe("qp", "rq", 99, { call: 42 })]) {
    const v = verdictOf(b, "7");
    t.same([v.verdict, v.reason, v.judged], ["SKIP", "no completions of posted WRs", 0]);
  }
});

t.test("PASS counts the completions of posted WRs and the error ones", async (t) => {
  const b = pair()
    .post("qp", "sq", 1, 2)
    .cqe("qp", "sq", 1, { status: SUCCESS })
    .post("qp", "rq", 10, 2)
    .modify("qp", "ERR")
    .cqe("qp", "sq", 2, { opcodeName: "LOCAL_INV" })
    .cqe("qp", "rq", 77, { call: 42 })
    .flush("qp", "rq", 10, 2);
  const v = verdictOf(b, "7");
  t.same(
    [v.verdict, v.reason, v.judged],
    ["PASS", "4 completion(s) with the right qp_num and status; 3 error completion(s), opcode not judged", 4],
    "the never-posted WR 77 is rule 5's",
  );
});

t.test("a QP the trace never created: its qp_num cannot be judged", async (t) => {
  const b = new TraceBuilder().post("x", "sq", 1, 1).cqe("x", "sq", 1, { status: SUCCESS, qpNum: 12 });
  const v = verdictOf(b, "7");
  t.same([v.verdict, v.judged], ["PASS", 1]);
});

t.test(
  "each problem quotes its completion (and the post, for an opcode) and names its WR and completion",
  async (t) => {
    const b = pair().post("qp", "sq", 1, 1);
    const post = b.records.length - 1 - 1;
    const ok = b.records.length;
    b.cqe("qp", "sq", 1, { status: SUCCESS, opcodeName: "RDMA_READ", qpNum: 9 });
    b.post("qp", "rq", 10, 1);
    const recv = b.records.length - 2;
    const flushed = b.records.length;
    b.cqe("qp", "rq", 10, { status: 77 });
    const v = verdictOf(b, "7");
    t.equal(v.verdict, "FAIL");
    t.equal(v.judged, 2);
    const sq1 = { qp: "qp", queue: "sq", wrId: 1, post };
    t.same(v.problems, [
      {
        reason: "completion of qp WR 1 carries qp_num 9, qp is 1",
        evidence: [quoted(b, ok)],
        wrs: [sq1],
        cqes: [ok],
      },
      {
        reason: "successful completion of send WR 1 on qp has opcode RDMA_READ",
        evidence: [quoted(b, post), quoted(b, ok)],
        wrs: [sq1],
        cqes: [ok],
      },
      {
        reason: "completion of qp WR 10 has status 77, not an IB_WC status",
        evidence: [quoted(b, flushed)],
        wrs: [{ qp: "qp", queue: "rq", wrId: 10, post: recv }],
        cqes: [flushed],
      },
    ]);
  },
);
