/**
 * CREATE_CQ / DESTROY_CQ. Kernel CQs: one "page" of 32 MiB holding the coherent buffer, level 0
 * (erdma_verbs.c:198-210). User CQs: the pages of the user buffer; one page inline, more through a
 * level-1 table (erdma_verbs.c:211-240). Linux 6.1 marked even a one-page user CQ "indirect" while
 * passing the page itself (erdma_verbs.c (6.1) create_cq_cmd), so a single page is always direct.
 */
import { get32, hex } from "../bits.ts";
import { CompletionQueue } from "../cq.ts";
import { CQE_SIZE, CreateCqReq, HW_PAGE_SHIFT } from "../hw.ts";
import { resolveQueueBuffer } from "../mtt.ts";
import { CmdStatus, fail } from "../status.ts";
import { rdmaCommand } from "./define.ts";
import { checkNewId, existing } from "./object-ids.ts";

/** struct erdma_cmdq_create_cq_req (hw.h:237-246): cfg0 8, qbuf 12/16, cfg1 20, dbrec 24, offset 32, cfg2 36. */
export const createCq = rdmaCommand("CREATE_CQ", {
  async run(s, req) {
    const cfg0 = req.u32(8, "cfg0");
    const qbuf = BigInt(req.u32(12, "qbuf_addr_l")) | (BigInt(req.u32(16, "qbuf_addr_h")) << 32n);
    const cfg1 = req.u32(20, "cfg1");
    const dbrec = req.u64(24, "cq_dbrec_dma");
    const offset = req.u32(32, "first_page_offset");
    const cqn = get32(cfg0, CreateCqReq.CQN);
    const depthLog = get32(cfg0, CreateCqReq.DEPTH);
    const pageShift = get32(cfg0, CreateCqReq.PAGESIZE) + HW_PAGE_SHIFT;
    const count = get32(cfg1, CreateCqReq.MTT_CNT);
    const level = get32(cfg1, CreateCqReq.MTT_LEVEL);
    const eqn = get32(cfg1, CreateCqReq.EQN);
    const detail: Record<string, unknown> = {
      cqn,
      depthLog,
      eqn,
      pageShift,
      count,
      level,
      qbuf: hex(qbuf),
      offset,
    };
    checkNewId(s.cqs, cqn);
    if (depthLog > s.profile.caps.maxCqeLog2) fail(CmdStatus.BAD_PARAM, `depth 2^${depthLog} > max CQE`);
    existing(s.ceqs, eqn);
    if (count === 0) fail(CmdStatus.BAD_PARAM, "MTT count 0");
    const direct = level === 0 || count === 1;
    if (direct && count > 1) fail(CmdStatus.BAD_PARAM, `level 0 with ${count} pages`);
    let cdb: number | undefined;
    if (get32(cfg1, CreateCqReq.MTT_DB_CFG) === 1) {
      cdb = get32(req.u32(36, "cfg2"), CreateCqReq.DB_CFG);
      if (!s.extDb.isAllocated("cdb", cdb))
        fail(CmdStatus.BAD_PARAM, `CQ doorbell page ${cdb} not allocated`);
      detail.cdb = cdb;
    }
    const depth = 2 ** depthLog;
    if (!s.dma.mapped(dbrec, 8, "read"))
      fail(CmdStatus.DMA_FAULT, `CQ doorbell record ${hex(dbrec)} unmapped`);
    const buffer = await resolveQueueBuffer(
      s.dma,
      { pageShift, level: direct ? 0 : 1, count, offset, entries: [qbuf] },
      depth * CQE_SIZE,
      "write",
      `CQ ${cqn}`,
    );
    s.cqs.set(cqn, new CompletionQueue(cqn, depth, buffer, eqn, dbrec, s.cqEnv));
    s.tracer.emit({ kind: "state", object: "cq", id: cqn, from: "none", to: "created" });
    return { detail: { ...detail, depth } };
  },
});

/** struct erdma_cmdq_destroy_cq_req (hw.h:160-163): cqn at 8. */
export const destroyCq = rdmaCommand("DESTROY_CQ", {
  run(s, req) {
    const cqn = req.u32(8, "cqn");
    existing(s.cqs, cqn);
    const users = [...s.qps.values()]
      .filter((qp) => qp.sq.cqn === cqn || qp.rq.cqn === cqn)
      .map((qp) => qp.qpn);
    if (users.length > 0) s.tracer.warn("CQ destroyed while QPs still use it", { cqn, qps: users });
    s.cqs.delete(cqn);
    s.tracer.emit({ kind: "state", object: "cq", id: cqn, from: "created", to: "destroyed" });
    return { detail: { cqn } };
  },
});
