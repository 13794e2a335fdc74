/**
 * RoCEv2-only commands (Linux 6.10+, hw.h (7.2):154-156): SET_GID, CREATE_AH, DESTROY_AH. Recorded,
 * not used yet: the data path models iWARP. Unknown opcodes on an iWARP device.
 */
import { get32, hex } from "../bits.ts";
import type { ErdmaProfile } from "../profile.ts";
import { CmdStatus, fail } from "../status.ts";
import { rdmaCommand } from "./define.ts";

const rocev2 = (p: ErdmaProfile) => p.protocol === "rocev2";

/** struct erdma_cmdq_set_gid_req (hw.h (7.2):494-498): cfg 8 (index 15:0, ntype 16, op 31), gid 12. */
export const setGid = rdmaCommand("SET_GID", {
  available: rocev2,
  run(s, req) {
    const cfg = req.u32(8, "cfg");
    const index = get32(cfg, [15, 0]);
    const del = get32(cfg, [31, 31]) === 1;
    if (!s.gids.inRange(index)) fail(CmdStatus.BAD_PARAM, `GID index ${index} >= ${s.gids.limit}`);
    if (del) {
      if (!s.gids.delete(index))
        fail(CmdStatus.NOT_FOUND, `GID index ${index} empty`, { kind: "gid", id: index });
      return { detail: { index, op: "del" } };
    }
    const gid = Buffer.from(req.bytesAt(12, 16, "gid")).toString("hex");
    s.gids.set(index, { index, ntype: get32(cfg, [16, 16]), gid });
    return { detail: { index, op: "add", gid } };
  },
});

/** struct erdma_cmdq_create_ah_req (hw.h (7.2):322-327): pdn 8, ahn 12, av_cfg 16 (36 bytes). */
export const createAh = rdmaCommand("CREATE_AH", {
  available: rocev2,
  run(s, req) {
    const pdn = req.u32(8, "pdn");
    const ahn = req.u32(12, "ahn");
    const av = req.bytesAt(16, 36, "av_cfg");
    if (!s.ahs.inRange(ahn)) fail(CmdStatus.BAD_PARAM, `ahn ${ahn} >= ${s.ahs.limit}`);
    if (s.ahs.has(ahn)) fail(CmdStatus.EXISTS, `ahn ${ahn} exists`, { kind: "ah", id: ahn });
    const dv = new DataView(av.buffer, av.byteOffset, av.byteLength);
    const entry = {
      ahn,
      pdn,
      av: {
        flowLabel: get32(dv.getUint32(0, true), [19, 0]),
        ntype: get32(dv.getUint32(0, true), [20, 20]),
        trafficClass: dv.getUint8(4),
        hopLimit: dv.getUint8(5),
        sl: dv.getUint8(6),
        udpSport: dv.getUint16(8, true),
        sgidIndex: dv.getUint16(10, true),
        dmac: Buffer.from(av.subarray(12, 18)).toString("hex"),
        dgid: Buffer.from(av.subarray(20, 36)).toString("hex"),
      },
    };
    s.ahs.set(ahn, entry);
    return { detail: { ...entry, pdn: hex(pdn) } };
  },
});

/** struct erdma_cmdq_destroy_ah_req (hw.h (7.2):329-333). */
export const destroyAh = rdmaCommand("DESTROY_AH", {
  available: rocev2,
  run(s, req) {
    const ahn = req.u32(12, "ahn");
    if (!s.ahs.delete(ahn)) fail(CmdStatus.NOT_FOUND, `ahn ${ahn} does not exist`, { kind: "ah", id: ahn });
    return { detail: { ahn } };
  },
});
