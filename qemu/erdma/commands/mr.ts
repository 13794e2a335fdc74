/**
 * REG_MR / DEREG_MR: the MPT. Three kinds (erdma_verbs.h:72-74): DMA MRs (no translation; the
 * driver sends stale stack bytes in every field past cfg1, erdma_verbs.c:135-165, and valid = 0),
 * FRMRs (a level-1 table of max_num_sg entries the REG_MR WQE fills later) and normal MRs (user
 * memory: up to 4 pages inline, else a level 1-3 table; levels > 1 set VERSION = 1 and send the
 * high bits of size and count, erdma_verbs.c:172-178).
 */
import { get32, hex } from "../bits.ts";
import { MR_MAX_MTT_CNT, MrType, RegMrReq } from "../hw.ts";
import { MemoryRegion, rightsNames } from "../mr.ts";
import type { MttDescriptor } from "../mtt.ts";
import { CmdStatus, fail } from "../status.ts";
import { rdmaCommand } from "./define.ts";
import type { Command } from "./types.ts";

/** struct erdma_cmdq_reg_mr_req (hw.h:265-280): cfg0 8, cfg1 12, start_va 16, size 24, cfg2 28, phy_addr 32.. */
export const regMr = rdmaCommand("REG_MR", {
  run(s, req) {
    const cfg0 = req.u32(8, "cfg0");
    const cfg1 = req.u32(12, "cfg1");
    const mpt = get32(cfg0, RegMrReq.MPT);
    const key = get32(cfg0, RegMrReq.KEY);
    const type = get32(cfg1, RegMrReq.TYPE);
    const pd = get32(cfg1, RegMrReq.PD);
    const rights = (get32(cfg1, RegMrReq.RIGHTS) << 1) >>> 0;
    const detail: Record<string, unknown> = {
      stag: hex(((mpt << 8) | key) >>> 0),
      pd,
      type,
      rights: rightsNames(rights),
    };
    if (!s.mrs.inRange(mpt)) fail(CmdStatus.BAD_PARAM, `MPT index ${mpt} >= ${s.mrs.limit}`);
    if (s.mrs.has(mpt))
      fail(CmdStatus.EXISTS, `MPT index ${mpt} in use`, { kind: "mr", id: s.mrs.get(mpt)?.stag ?? mpt << 8 });
    let mr: MemoryRegion;
    if (type === MrType.DMA) {
      mr = new MemoryRegion(mpt, key, pd, "dma", rights, true, 0n, 0n, undefined, s.dma);
    } else if (type === MrType.FRMR) {
      const cfg2 = req.u32(28, "cfg2");
      const count = get32(cfg2, RegMrReq.MTT_CNT);
      const level = get32(cfg2, RegMrReq.MTT_LEVEL);
      const pageShift = get32(cfg2, RegMrReq.PAGESIZE);
      const table = req.u64(32, "phy_addr[0]");
      if (level !== 1) fail(CmdStatus.BAD_PARAM, `FRMR MTT level ${level}`);
      if (count === 0 || count > MR_MAX_MTT_CNT) fail(CmdStatus.BAD_PARAM, `FRMR MTT count ${count}`);
      if (pageShift < 12 || pageShift > 31) fail(CmdStatus.BAD_PARAM, `page size 2^${pageShift}`);
      if (!s.dma.mapped(table, count * 8, "read"))
        fail(CmdStatus.DMA_FAULT, `FRMR MTT ${hex(table)} unmapped`);
      const mtt: MttDescriptor = { pageShift, level, count, offset: 0, entries: [table] };
      mr = new MemoryRegion(
        mpt,
        key,
        pd,
        "frmr",
        rights,
        get32(cfg0, RegMrReq.VALID) === 1,
        0n,
        0n,
        mtt,
        s.dma,
      );
      Object.assign(detail, { level, count, table: hex(table) });
    } else if (type === MrType.NORMAL) {
      mr = normalMr(s, req, cfg0, { mpt, key, pd, rights }, detail);
    } else {
      fail(CmdStatus.BAD_PARAM, `MR type ${type}`);
    }
    s.mrs.set(mpt, mr);
    s.tracer.emit({
      kind: "state",
      object: "mr",
      id: mr.stag,
      from: "none",
      to: mr.valid ? "valid" : "registered",
    });
    return { detail };
  },
});

function normalMr(
  s: Parameters<Command["run"]>[0],
  req: Parameters<Command["run"]>[1],
  cfg0: number,
  id: { mpt: number; key: number; pd: number; rights: number },
  detail: Record<string, unknown>,
): MemoryRegion {
  const va = req.u64(16, "start_va");
  const cfg2 = req.u32(28, "cfg2");
  const version = get32(cfg0, RegMrReq.VERSION);
  const pageShift = get32(cfg2, RegMrReq.PAGESIZE);
  const level = get32(cfg2, RegMrReq.MTT_LEVEL);
  let size = BigInt(req.u32(24, "size"));
  let count = get32(cfg2, RegMrReq.MTT_CNT);
  if (version === 1) {
    size |= BigInt(req.u32(40, "size_h")) << 32n;
    count += req.u32(44, "mtt_cnt_h") * 2 ** 20;
  }
  Object.assign(detail, { va: hex(va), size: hex(size), pageShift, level, count, version });
  if (pageShift < 12 || pageShift > 31) fail(CmdStatus.BAD_PARAM, `page size 2^${pageShift}`);
  if (size === 0n || size > 1n << BigInt(s.profile.caps.maxMrSizeLog2))
    fail(CmdStatus.BAD_PARAM, `size ${hex(size)}`);
  const pageSize = 1n << BigInt(pageShift);
  const offset = va & (pageSize - 1n);
  const needed = (offset + size + pageSize - 1n) / pageSize;
  if (BigInt(count) < needed)
    fail(CmdStatus.BAD_PARAM, `${count} pages of 2^${pageShift} cannot hold ${hex(size)} bytes`);
  const mtt: MttDescriptor = { pageShift, level, count, offset: Number(offset), entries: [] };
  if (level === 0) {
    if (count > 4) fail(CmdStatus.BAD_PARAM, `${count} inline MTT entries`);
    for (let i = 0; i < count; i++) mtt.entries.push(req.u64(32 + i * 8, "phy_addr"));
  } else if (level <= 3) {
    if (level > 1 && version !== 1) fail(CmdStatus.BAD_PARAM, `MTT level ${level} needs version 1`);
    const top = req.u64(32, "phy_addr[0]");
    mtt.entries.push(top);
    const tps = 4096 * 2 ** get32(cfg2, RegMrReq.MTT_PAGESIZE);
    mtt.tablePageSize = tps;
    const perPage = tps / 8;
    if (count > perPage ** level && level > 1)
      fail(CmdStatus.BAD_PARAM, `${count} entries exceed a ${level}-level MTT`);
    const topBytes = level === 1 ? count * 8 : Math.min(tps, Math.ceil(count / perPage ** (level - 1)) * 8);
    if (!s.dma.mapped(top, topBytes, "read")) fail(CmdStatus.DMA_FAULT, `MTT ${hex(top)} unmapped`);
    detail.table = hex(top);
  } else {
    fail(CmdStatus.BAD_PARAM, `MTT level ${level}`);
  }
  return new MemoryRegion(
    id.mpt,
    id.key,
    id.pd,
    "normal",
    id.rights,
    get32(cfg0, RegMrReq.VALID) === 1,
    va,
    size,
    mtt,
    s.dma,
  );
}

function stag(mpt: number, key: number): number {
  return ((mpt << 8) | key) >>> 0;
}

/** struct erdma_cmdq_dereg_mr_req (hw.h:282-285): cfg at 8, MPT index 19:0 and key 27:20. */
export const deregMr = rdmaCommand("DEREG_MR", {
  run(s, req) {
    const cfg = req.u32(8, "cfg");
    const mpt = get32(cfg, RegMrReq.MPT);
    const key = get32(cfg, RegMrReq.KEY);
    const mr = s.mrs.get(mpt);
    if (!mr) fail(CmdStatus.NOT_FOUND, `MPT index ${mpt} not registered`, { kind: "mr", id: stag(mpt, key) });
    if (mr.key !== key)
      fail(
        CmdStatus.BAD_PARAM,
        `key ${key} does not match ${mr.key} (MPT index ${mpt}, stag ${hex(mr.stag)})`,
        { kind: "mr", id: mr.stag },
      );
    s.mrs.delete(mpt);
    s.tracer.emit({
      kind: "state",
      object: "mr",
      id: mr.stag,
      from: mr.valid ? "valid" : "registered",
      to: "deregistered",
    });
    return { detail: { stag: hex(mr.stag) } };
  },
});
