/**
 * Rule 7: the fields a completion defines are right; for an error completion only wr_id, status,
 * qp_num and vendor_err are defined, so its opcode is never judged.
 */
import type { PostOp } from "../../protocol/commands.ts";
import { WC_SUCCESS } from "../../protocol/trace.ts";
import { completionsOfPostedWrs, cqeRefs, quote, ref } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

/** The IB_WC opcode names a successful completion of each posted op may carry. */
const SUCCESS_OPCODES: Record<PostOp, readonly string[]> = {
  send: ["SEND"],
  send_imm: ["SEND"],
  write: ["RDMA_WRITE"],
  write_imm: ["RDMA_WRITE"],
  read: ["RDMA_READ"],
  recv: ["RECV", "RECV_RDMA_WITH_IMM"],
  reg_mr: ["REG_MR"],
  local_inv: ["LOCAL_INV"],
  send_inv: ["SEND"],
};

export const rule7: Rule = {
  id: "7",
  title: "defined completion fields are right; an error completion's opcode is not judged",
  citation:
    "IBTA Vol 1 11.4.2.1 Poll for Completion; ibv_poll_cq(3): if the status is not success only wr_id, status, qp_num and vendor_err are valid",
  judge({ model }) {
    const known = completionsOfPostedWrs(model);
    if (known.length === 0) return skip("no completions of posted WRs");
    const problems: Problem[] = [];
    for (const c of known) {
      const w = c.wr;
      const qpNum = model.qps.get(w.qp)?.qpNum;
      if (qpNum !== undefined && c.rec.qp_num !== qpNum)
        problems.push({
          reason: `completion of ${w.qp} WR ${w.wrId} carries qp_num ${c.rec.qp_num}, ${w.qp} is ${qpNum}`,
          evidence: [quote(model.records, c.at)],
          wrs: [ref(w)],
          cqes: cqeRefs([c]),
        });
      if (c.rec.status_name === "UNKNOWN")
        problems.push({
          reason: `completion of ${w.qp} WR ${w.wrId} has status ${c.rec.status}, not an IB_WC status`,
          evidence: [quote(model.records, c.at)],
          wrs: [ref(w)],
          cqes: cqeRefs([c]),
        });
      if (c.rec.status !== WC_SUCCESS) continue;
      if (!SUCCESS_OPCODES[w.op].includes(c.rec.opcode_name))
        problems.push({
          reason: `successful completion of ${w.op} WR ${w.wrId} on ${w.qp} has opcode ${c.rec.opcode_name}`,
          evidence: [quote(model.records, w.at), quote(model.records, c.at)],
          wrs: [ref(w)],
          cqes: cqeRefs([c]),
        });
    }
    if (problems.length > 0) return fail(problems, known.length);
    const errors = known.filter((c) => c.rec.status !== WC_SUCCESS).length;
    return pass(
      `${known.length} completion(s) with the right qp_num and status; ${errors} error completion(s), opcode not judged`,
      known.length,
    );
  },
};
