// The device model's numbers (qemu/erdma/hw.ts) against the erdma driver's own header, read from
// the Debian kernel sources hil unpacks (drivers/infiniband/hw/erdma/erdma_hw.h of 6.1, 6.12 and
// 7.2): every register offset, opcode, size and bit field the model names is checked against the
// header of each version that defines it, and each one is defined by at least one. The driver
// doubles of the unit tests take their numbers from hw.ts, so this is where a wrong one is caught.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import * as hw from "../../qemu/erdma/hw.ts";
import { unpackedKernelSource } from "../support/kernel-source.ts";

const VERSIONS = ["debian:6.1", "debian:6.12", "debian:7.2"];

type Value = number | readonly [number, number];

/** `#define NAME value` (numbers, GENMASK, BIT) and `NAME = n` enum members of a header. */
function headerValues(text: string): Map<string, Value> {
  const out = new Map<string, Value>();
  const number = (s: string) => Number(s.replace(/U?L*$/i, ""));
  for (const m of text.matchAll(/^#define\s+(\w+)\s+(.+?)\s*$/gm)) {
    const [, name = "", body = ""] = m;
    const mask = /^GENMASK(?:_ULL)?\((\d+),\s*(\d+)\)$/.exec(body);
    const bit = /^BIT(?:_ULL)?\((\d+)\)$/.exec(body);
    const literal = /^\(?(0x[0-9a-f]+|\d+)U?L*\)?$/i.exec(body);
    const product = /^\((\d+) \* (\d+)\)$/.exec(body);
    if (mask) out.set(name, [Number(mask[1]), Number(mask[2])]);
    else if (bit) out.set(name, [Number(bit[1]), Number(bit[1])]);
    else if (literal?.[1]) out.set(name, number(literal[1]));
    else if (product) out.set(name, Number(product[1]) * Number(product[2]));
  }
  for (const m of text.matchAll(/^\s*(\w+)\s*=\s*(0x[0-9a-f]+|\d+)\s*,?\s*$/gim))
    out.set(m[1] ?? "", Number(m[2]));
  return out;
}

/** Each of an object's keys under the header name `name(key)`; `rename` where the header spells it otherwise. */
function fields(
  model: Record<string, Value>,
  name: (key: string) => string,
  rename: Record<string, string> = {},
): Array<[string, Value]> {
  return Object.entries(model).map(([k, v]) => [name(rename[k] ?? k), v]);
}

const EXPECTED: Array<[string, Value]> = [
  ["ERDMA_FUNC_BAR", hw.FUNC_BAR],
  ["ERDMA_MISX_BAR", hw.MSIX_BAR],
  ["ERDMA_NUM_MSIX_VEC", hw.NUM_MSIX_VEC],
  ["ERDMA_MSIX_VECTOR_CMDQ", hw.MSIX_VECTOR_CMDQ],
  ["ERDMA_BAR_DB_SPACE_BASE", hw.DB_SPACE_BASE],
  ["ERDMA_BAR_SQDB_SPACE_SIZE", hw.SQDB_SPACE_SIZE],
  ["ERDMA_BAR_RQDB_SPACE_SIZE", hw.RQDB_SPACE_SIZE],
  ["ERDMA_SDB_SHARED_PAGE_INDEX", hw.SDB_SHARED_PAGE_INDEX],
  ["ERDMA_DB_SIZE", hw.DB_SIZE],
  ["ERDMA_HW_PAGE_SHIFT", hw.HW_PAGE_SHIFT],
  ["ERDMA_HW_PAGE_SIZE", hw.HW_PAGE_SIZE],
  ["EQE_SIZE", hw.EQE_SIZE],
  ["RQE_SIZE", hw.RQE_SIZE],
  ["CQE_SIZE", hw.CQE_SIZE],
  ["SQEBB_SIZE", hw.SQEBB_SIZE],
  ["ERDMA_MAX_SQE_SIZE", hw.MAX_SQE_SIZE],
  ["ERDMA_CMDQ_MAX_OUTSTANDING", hw.CMDQ_MAX_OUTSTANDING],
  ["ERDMA_REG_DEV_CTRL_RESET_MASK", hw.DEV_CTRL_RESET],
  ["ERDMA_REG_DEV_CTRL_INIT_MASK", hw.DEV_CTRL_INIT],
  ["ERDMA_REG_DEV_ST_RESET_DONE_MASK", hw.DEV_ST_RESET_DONE],
  ["ERDMA_REG_DEV_ST_INIT_DONE_MASK", hw.DEV_ST_INIT_DONE],
  ["CMDQ_SUBMOD_RDMA", hw.SubMod.RDMA],
  ["CMDQ_SUBMOD_COMMON", hw.SubMod.COMMON],
  ["ERDMA_EQ_TYPE_AEQ", hw.EqType.AEQ],
  ["ERDMA_EQ_TYPE_CEQ", hw.EqType.CEQ],
  ...fields(hw.Reg, (k) =>
    /_HOST_ADDR$|^CMDQ_(SQ|CQ)DB$/.test(k) ? `ERDMA_${k}_REG` : `ERDMA_REGS_${k}_REG`,
  ),
  ...fields(hw.RdmaOp, (k) => `CMDQ_OPCODE_${k}`),
  ...fields(hw.CommonOp, (k) => `CMDQ_OPCODE_${k}`),
  ...fields(hw.CqDb, (k) => `ERDMA_CQDB_${k}_MASK`),
  ...fields(hw.EqDb, (k) => `ERDMA_EQDB_${k}_MASK`),
  ...fields(hw.CmdHdr, (k) => `ERDMA_CMD_HDR_${k}_MASK`, { COOKIE: "CONTEXT_COOKIE" }),
  ...fields(hw.CreateCqReq, (k) => `ERDMA_CMD_CREATE_CQ_${k}_MASK`),
  ...fields(hw.RegMrReq, (k) =>
    ["VALID", "VERSION", "KEY", "MPT"].includes(k)
      ? `ERDMA_CMD_MR_${k === "MPT" ? "MPT_IDX" : k}_MASK`
      : `ERDMA_CMD_REGMR_${k === "RIGHTS" ? "RIGHT" : k}_MASK`,
  ),
  ...fields(hw.CreateQpReq, (k) => `ERDMA_CMD_CREATE_QP_${k}_MASK`, {
    DEPTH: "SQ_DEPTH",
    SQDB: "SQDB_CFG",
    RQDB: "RQDB_CFG",
  }),
  ...fields(hw.AeType, (k) =>
    k.endsWith("ERROR") || k === "CQ_ERR" ? `ERDMA_AE_TYPE_${k}` : `ERDMA_AE_TYPE_${k}_EVENT`,
  ),
  ...fields(hw.CqeHdr, (k) => `ERDMA_CQE_HDR_${k}_MASK`),
  ...fields(hw.CqeQtype, (k) => `ERDMA_CQE_QTYPE_${k}`),
  ...fields(hw.Ceqe, (k) => `ERDMA_CEQE_HDR_${k}_MASK`, { OWNER: "O" }),
  ...fields(hw.Aeqe, (k) => `ERDMA_AEQE_HDR_${k}_MASK`, { OWNER: "O" }),
];

/**
 * Where a version's header differs from hw.ts on purpose. 6.1's access rights are GENMASK(5, 2)
 * (erdma_verbs.h (6.1):77-80, LR LW RR RW at bits 2-5 of cfg1); 6.12 adds remote atomic below them
 * at bit 1 (erdma_verbs.h:79-83): the model reads the wider field, which holds 6.1's bits alike.
 */
const VERSION_DIFFERS: Record<string, Record<string, Value>> = {
  ERDMA_CMD_REGMR_RIGHT_MASK: { "debian:6.1": [5, 2] },
};

t.test("hw.ts carries the driver header's numbers, in every version that defines them", async (t) => {
  const headers = new Map<string, Map<string, Value>>();
  for (const v of VERSIONS) {
    const src = await unpackedKernelSource(v);
    headers.set(v, headerValues(readFileSync(join(src, "drivers/infiniband/hw/erdma/erdma_hw.h"), "utf8")));
  }
  t.ok((headers.get("debian:6.12")?.size ?? 0) > 150, "the 6.12 header parsed into its definitions");
  for (const [name, value] of EXPECTED) {
    const found = VERSIONS.filter((v) => headers.get(v)?.has(name));
    t.ok(found.length > 0, `${name} is defined by ${found.join(", ") || "no version's header"}`);
    for (const v of found)
      t.same(headers.get(v)?.get(name), VERSION_DIFFERS[name]?.[v] ?? value, `${name} in ${v}'s erdma_hw.h`);
  }
});
