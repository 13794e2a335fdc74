/**
 * CREATE_EQ / DESTROY_EQ for completion EQs. The driver creates one CEQ per extra MSI-X vector,
 * eqn = vector = ceq index + 1 (eqn 0 is the CMDQ EQ), depth 4096, in CMDQ polling mode
 * (erdma_eq.c:224-264, 288-314). The AEQ is set up through registers, never by command.
 */
import { hex } from "../bits.ts";
import { EventQueue } from "../eq.ts";
import { EQE_SIZE, EqType } from "../hw.ts";
import { CmdStatus, fail } from "../status.ts";
import { commonCommand } from "./define.ts";
import { checkNewId, existing } from "./object-ids.ts";

/** struct erdma_cmdq_create_eq_req (hw.h:168-177). */
export const createEq = commonCommand("CREATE_EQ", {
  run(s, req) {
    const base = req.u64(8, "qbuf_addr");
    const vector = req.u8(16, "vector_idx");
    const eqn = req.u8(17, "eqn");
    const depthLog = req.u8(18, "depth");
    const qtype = req.u8(19, "qtype");
    const dbrec = BigInt(req.u32(20, "db_dma_addr_l")) | (BigInt(req.u32(24, "db_dma_addr_h")) << 32n);
    const detail = { eqn, vector, depthLog, qtype, base: hex(base), dbrec: hex(dbrec) };
    if (qtype !== EqType.CEQ) fail(CmdStatus.BAD_PARAM, `qtype ${qtype}: only CEQs are created by command`);
    checkNewId(s.ceqs, eqn);
    if (vector >= s.profile.msixVectors)
      fail(CmdStatus.BAD_PARAM, `vector ${vector} >= ${s.profile.msixVectors}`);
    if (depthLog > s.profile.maxEqDepthLog2) fail(CmdStatus.BAD_PARAM, `depth 2^${depthLog}`);
    const depth = 2 ** depthLog;
    if (!s.dma.mapped(base, depth * EQE_SIZE, "write"))
      fail(CmdStatus.DMA_FAULT, `EQ buffer ${hex(base)} unmapped`);
    if (!s.dma.mapped(dbrec, 8, "read"))
      fail(CmdStatus.DMA_FAULT, `EQ doorbell record ${hex(dbrec)} unmapped`);
    s.ceqs.set(eqn, new EventQueue("ceq", eqn, vector, base, depth, dbrec, s.eqEnv));
    s.tracer.emit({ kind: "state", object: "eq", id: eqn, from: "none", to: "created" });
    return { detail: { ...detail, depth } };
  },
});

/** struct erdma_cmdq_destroy_eq_req (hw.h:179-186): vector_idx at 16, eqn 17, qtype 19. */
export const destroyEq = commonCommand("DESTROY_EQ", {
  run(s, req) {
    const vector = req.u8(16, "vector_idx");
    const eqn = req.u8(17, "eqn");
    const qtype = req.u8(19, "qtype");
    if (qtype !== EqType.CEQ) fail(CmdStatus.BAD_PARAM, `qtype ${qtype}`);
    existing(s.ceqs, eqn);
    const users = [...s.cqs.values()].filter((cq) => cq.eqn === eqn).map((cq) => cq.cqn);
    if (users.length > 0) s.tracer.warn("EQ destroyed while CQs still use it", { eqn, cqs: users });
    s.ceqs.delete(eqn);
    s.tracer.emit({ kind: "state", object: "eq", id: eqn, from: "created", to: "destroyed" });
    return { detail: { eqn, vector } };
  },
});
