/**
 * Device-wide commands: QUERY_DEVICE, QUERY_FW_INFO, CONF_MTU, CONF_DEVICE, GET_STATS, ALLOC_DB,
 * FREE_DB. Request layouts from hw.h (6.12) structs; offsets are from the start of the SQE.
 */
import { get32, hex, put64 } from "../bits.ts";
import { CapFlag, DevCap0, DevCap1, HW_RESP_MAGIC, HW_RESP_SIZE, STATS_RESP_LEN } from "../hw.ts";
import { STAT_NAMES } from "../state.ts";
import { CmdStatus, fail } from "../status.ts";
import { commonCommand, rdmaCommand } from "./define.ts";

/** erdma_main.c:384-406 reads these; 7.2 adds max_gid and max_ah (erdma_main.c (7.2):394-395). */
export const queryDevice = rdmaCommand("QUERY_DEVICE", {
  run(s) {
    const c = s.profile.caps;
    const flags =
      (c.atomic ? CapFlag.ATOMIC : 0) | (c.mttVa ? CapFlag.MTT_VA : 0) | (c.extendDb ? CapFlag.EXTEND_DB : 0);
    const resp0 =
      put64(c.maxGidLog2, DevCap0.MAX_GID) |
      put64(c.maxCqeLog2, DevCap0.MAX_CQE) |
      put64(flags, DevCap0.FLAGS) |
      put64(c.maxRecvWrLog2, DevCap0.MAX_RECV_WR) |
      put64(c.maxAhLog2, DevCap0.MAX_AH) |
      put64(c.maxMrSizeLog2, DevCap0.MAX_MR_SIZE);
    const resp1 =
      put64(c.localDmaKey, DevCap1.DMA_LOCAL_KEY) |
      put64(c.defaultCc, DevCap1.DEFAULT_CC) |
      put64(c.qblock, DevCap1.QBLOCK) |
      put64(c.maxMwLog2, DevCap1.MAX_MW);
    return { resp0, resp1, detail: { flags } };
  },
});

/** erdma_main.c:419-426: cap0 bits 31:0 are the firmware version (hw.h:417). */
export const queryFwInfo = commonCommand("QUERY_FW_INFO", {
  run(s) {
    return { resp0: BigInt(s.profile.fwVersion >>> 0), resp1: 0n };
  },
});

/** struct erdma_cmdq_config_mtu_req (hw.h:198-201): u32 mtu at 8. Sent on NETDEV_CHANGEMTU. */
export const confMtu = commonCommand("CONF_MTU", {
  run(s, req) {
    const mtu = req.u32(8, "mtu");
    if (mtu < 68 || mtu > 65535) fail(CmdStatus.BAD_PARAM, `MTU ${mtu}`);
    s.mtu = mtu;
    return { detail: { mtu } };
  },
});

/** struct erdma_cmdq_config_device_req (hw.h:188-196): cfg at 8, PS_EN bit 31, PGSHIFT 4:0. */
export const confDevice = commonCommand("CONF_DEVICE", {
  available: (p) => p.confDeviceCommand,
  run(s, req) {
    const cfg = req.u32(8, "cfg");
    const enable = get32(cfg, [31, 31]) === 1;
    const shift = get32(cfg, [4, 0]);
    if (enable && (shift < 12 || shift > 16)) fail(CmdStatus.BAD_PARAM, `page shift ${shift}`);
    s.hostPageShift = enable ? shift : undefined;
    return { detail: { pageShiftEnabled: enable, pageShift: shift } };
  },
});

/**
 * struct erdma_cmdq_query_req (hw.h:361-368): index at 12, target_addr at 16, target_length at 24.
 * The device writes struct erdma_cmdq_query_stats_resp there (magic 0x5566, hw.h:370-395).
 */
export const getStats = commonCommand("GET_STATS", {
  available: (p) => p.statsCommand,
  async run(s, req) {
    const index = req.u32(12, "index");
    const target = req.u64(16, "target_addr");
    const length = req.u32(24, "target_length");
    if (length < STATS_RESP_LEN || length > HW_RESP_SIZE)
      fail(CmdStatus.BAD_LENGTH, `target_length ${length}`);
    if (!s.dma.mapped(target, STATS_RESP_LEN, "write"))
      fail(CmdStatus.DMA_FAULT, `stats target ${hex(target)} unmapped`);
    const out = new Uint8Array(STATS_RESP_LEN);
    const dv = new DataView(out.buffer);
    dv.setUint16(0, HW_RESP_MAGIC, true);
    dv.setUint8(2, 0);
    dv.setUint8(3, STATS_RESP_LEN);
    dv.setUint32(4, index, true);
    STAT_NAMES.forEach((name, i) => {
      dv.setBigUint64(16 + i * 8, s.stats.get(name) ?? 0n, true);
    });
    await s.dma.write(target, out, "GET_STATS response");
    return { detail: { target: hex(target), length } };
  },
});

/** ALLOC_DB/FREE_DB cfg bits (hw.h:203-206); struct erdma_cmdq_ext_db_req (hw.h:208-216). */
const ALL = (1 << 0) | (1 << 1) | (1 << 2);

/** Response qword 0: SDB 15:0, CDB 47:32, RDB 63:48 (hw.h:218-221; erdma_verbs.c:1393-1395). */
export const allocDb = commonCommand("ALLOC_DB", {
  available: (p) => p.caps.extendDb,
  run(s, req) {
    const cfg = req.u32(8, "cfg");
    // the driver always asks for all three (erdma_verbs.c:1384-1386); so does this device
    if ((cfg & ALL) !== ALL)
      fail(CmdStatus.BAD_PARAM, `cfg ${hex(cfg)} does not enable SQ, RQ and CQ doorbells`);
    const a = s.extDb.alloc();
    if (!a) fail(CmdStatus.NO_RESOURCE, "no doorbell pages left");
    const resp0 = put64(a.sdb, [15, 0]) | put64(a.cdb, [47, 32]) | put64(a.rdb, [63, 48]);
    return { resp0, resp1: 0n, detail: { ...a } };
  },
});

export const freeDb = commonCommand("FREE_DB", {
  available: (p) => p.caps.extendDb,
  run(s, req) {
    const a = { rdb: req.u16(12, "rdb_off"), sdb: req.u16(14, "sdb_off"), cdb: req.u16(18, "cdb_off") };
    if (!s.extDb.release(a))
      fail(CmdStatus.NOT_FOUND, `doorbell pages ${JSON.stringify(a)} not allocated`, {
        kind: "db",
        id: a.sdb,
      });
    return { detail: a };
  },
});
