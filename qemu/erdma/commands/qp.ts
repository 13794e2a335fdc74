/**
 * QP commands: CREATE_QP, DESTROY_QP, MODIFY_QP (iWARP and RoCEv2 layouts), REFLUSH, QUERY_QP.
 * Kernel QPs pass each queue as one 1 MiB "page" (erdma_verbs.c:58-80); user QPs pass their pages
 * inline (up to 4: sq_buf_addr plus mtt_entry[0..2]) or through a level-1 table
 * (erdma_verbs.c:22-37, :81-120). Linux 6.1 always used the table for user QPs.
 */
import { get32, hex, put64 } from "../bits.ts";
import {
  CreateQpReq,
  HW_PAGE_SHIFT,
  IwarpState,
  MAX_INLINE_MTT_ENTRIES,
  MAX_SEND_WR,
  MAX_WQEBB_PER_SQE,
  QpType,
  RQE_SIZE,
  SQEBB_SIZE,
  WQ_INDEX_BITS,
} from "../hw.ts";
import { type MttDescriptor, resolveQueueBuffer } from "../mtt.ts";
import { errorState, isValidState, QueuePair, stateName, transitionAllowed, type WorkQueue } from "../qp.ts";
import type { Req } from "../req.ts";
import { distance } from "../ring.ts";
import type { DeviceState } from "../state.ts";
import { CmdStatus, fail } from "../status.ts";
import { rdmaCommand } from "./define.ts";
import { checkNewId, existing } from "./object-ids.ts";

const PAGE_OFFSET_MASK = 0xffff_f000; // hw.h:318 GENMASK(31, 12), the offset itself (4 KiB aligned)

interface QueueFields {
  name: "SQ" | "RQ";
  cqnCfg: number;
  bufAddr: bigint;
  mttCfg: number;
  dbrec: bigint;
  /** offset of this queue's mtt_entry[3] */
  entriesAt: number;
}

async function buildQueue(
  s: DeviceState,
  req: Req,
  qpn: number,
  q: QueueFields,
  depth: number,
  elem: number,
) {
  const cqn = get32(q.cqnCfg, CreateQpReq.CQN);
  existing(s.cqs, cqn, `${q.name} cqn`);
  const count = get32(q.mttCfg, CreateQpReq.MTT_CNT);
  const level = get32(q.mttCfg, CreateQpReq.MTT_LEVEL);
  const mtt: MttDescriptor = {
    pageShift: get32(q.cqnCfg, CreateQpReq.PAGE_SIZE) + HW_PAGE_SHIFT,
    level,
    count,
    offset: (q.mttCfg & PAGE_OFFSET_MASK) >>> 0,
    entries: [q.bufAddr],
  };
  if (count === 0) fail(CmdStatus.BAD_PARAM, `${q.name} MTT count 0`);
  if (level === 0) {
    if (count > MAX_INLINE_MTT_ENTRIES) fail(CmdStatus.BAD_PARAM, `${q.name}: ${count} inline MTT entries`);
    for (let i = 1; i < count; i++)
      mtt.entries.push(req.u64(q.entriesAt + (i - 1) * 8, `${q.name} mtt_entry`));
  }
  if (!s.dma.mapped(q.dbrec, 8, "read"))
    fail(CmdStatus.DMA_FAULT, `${q.name} doorbell record ${hex(q.dbrec)} unmapped`);
  const buffer = await resolveQueueBuffer(s.dma, mtt, depth * elem, "read", `QP ${qpn} ${q.name}`);
  const wq: WorkQueue = { depth, buffer, dbrec: q.dbrec, cqn, pi: 0, ci: 0, doorbells: 0 };
  return wq;
}

/** struct erdma_cmdq_create_qp_req (hw.h:328-345; 6.1 ends after rq_dbrec at 64; 7.2 adds cfg2 at 116). */
export const createQp = rdmaCommand("CREATE_QP", {
  async run(s, req) {
    const cfg0 = req.u32(8, "cfg0");
    const cfg1 = req.u32(12, "cfg1");
    const sqCqnCfg = req.u32(16, "sq_cqn_mtt_cfg");
    const qpn = get32(cfg0, CreateQpReq.QPN);
    const sqDepthLog = get32(cfg0, CreateQpReq.DEPTH);
    const rqDepthLog = get32(cfg1, CreateQpReq.DEPTH);
    const pd = get32(cfg1, CreateQpReq.PD);
    const detail: Record<string, unknown> = { qpn, pd, sqDepthLog, rqDepthLog };
    checkNewId(s.qps, qpn);
    // sq_size = roundup_pow_of_two(max_send_wr * 4) WQEBBs (erdma_verbs.c:968-970)
    if (2 ** sqDepthLog > MAX_SEND_WR * MAX_WQEBB_PER_SQE)
      fail(CmdStatus.BAD_PARAM, `SQ depth 2^${sqDepthLog}`);
    if (rqDepthLog > s.profile.caps.maxRecvWrLog2) fail(CmdStatus.BAD_PARAM, `RQ depth 2^${rqDepthLog}`);
    let type: "rc" | "ud" = "rc";
    if (s.proto === "rocev2" && req.has(116, 4)) {
      const t = get32(req.u32(116, "cfg2"), CreateQpReq.TYPE);
      if (t !== QpType.RC && t !== QpType.UD) fail(CmdStatus.BAD_PARAM, `QP type ${t}`);
      type = t === QpType.UD ? "ud" : "rc";
    }
    let extDb: { sdb: number; rdb: number } | undefined;
    if (get32(sqCqnCfg, CreateQpReq.DB_CFG) === 1) {
      const dbCfg = req.u32(112, "db_cfg");
      extDb = { sdb: get32(dbCfg, CreateQpReq.SQDB), rdb: get32(dbCfg, CreateQpReq.RQDB) };
      if (!s.extDb.isAllocated("sdb", extDb.sdb) || !s.extDb.isAllocated("rdb", extDb.rdb)) {
        fail(CmdStatus.BAD_PARAM, `doorbell pages ${JSON.stringify(extDb)} not allocated`);
      }
      detail.extDb = extDb;
    }
    const sq = await buildQueue(
      s,
      req,
      qpn,
      {
        name: "SQ",
        cqnCfg: sqCqnCfg,
        bufAddr: req.u64(24, "sq_buf_addr"),
        mttCfg: req.u32(40, "sq_mtt_cfg"),
        dbrec: req.u64(48, "sq_dbrec_dma"),
        entriesAt: 64,
      },
      2 ** sqDepthLog,
      SQEBB_SIZE,
    );
    const rq = await buildQueue(
      s,
      req,
      qpn,
      {
        name: "RQ",
        cqnCfg: req.u32(20, "rq_cqn_mtt_cfg"),
        bufAddr: req.u64(32, "rq_buf_addr"),
        mttCfg: req.u32(44, "rq_mtt_cfg"),
        dbrec: req.u64(56, "rq_dbrec_dma"),
        entriesAt: 88,
      },
      2 ** rqDepthLog,
      RQE_SIZE,
    );
    const cookie = s.cookieFor(qpn);
    const qp = new QueuePair(qpn, s.proto, type, pd, cookie, sq, rq, extDb);
    s.qps.set(qpn, qp);
    s.tracer.emit({ kind: "state", object: "qp", id: qpn, from: "none", to: qp.stateName });
    // response qword 0 bits 31:0: the cookie (hw.h:326, erdma_verbs.c:124-126)
    return {
      resp0: BigInt(cookie),
      resp1: 0n,
      detail: { ...detail, type, sqCqn: sq.cqn, rqCqn: rq.cqn, cookie },
    };
  },
});

/** struct erdma_cmdq_destroy_qp_req (hw.h:347-350): qpn at 8. */
export const destroyQp = rdmaCommand("DESTROY_QP", {
  run(s, req) {
    const qpn = req.u32(8, "qpn");
    const qp = existing(s.qps, qpn);
    s.qps.delete(qpn);
    s.tracer.emit({ kind: "state", object: "qp", id: qpn, from: qp.stateName, to: "destroyed" });
    // what the device still had to complete or flush of it: the driver discards those WRs
    const pending = {
      sq: distance(qp.sq.pi, qp.sq.ci, WQ_INDEX_BITS),
      rq: distance(qp.rq.pi, qp.rq.ci, WQ_INDEX_BITS),
    };
    return { detail: { qpn, state: qp.stateName, pending } };
  },
});

const MODIFY = { STATE: [31, 24], CC: [23, 20], QPN: [19, 0] } as const;

function ipv4(v: number): string {
  return [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join(".");
}

function setState(s: DeviceState, qp: QueuePair, to: number): void {
  const from = qp.state;
  if (to === errorState(qp.proto)) qp.enterError();
  else qp.state = to;
  s.tracer.emit({
    kind: "state",
    object: "qp",
    id: qp.qpn,
    from: stateName(qp.proto, from),
    to: qp.stateName,
  });
  s.p.qpEvents?.stateChanged(qp, from);
}

/** RoCEv2 MODIFY_QP attr_mask bits (erdma_verbs.h (7.2):235-240). */
const RoceMask = { STATE: 1, QKEY: 2, AV: 4, SQ_PSN: 8, RQ_PSN: 16, DST_QPN: 32 } as const;

/**
 * iWARP: struct erdma_cmdq_modify_qp_req (hw.h:292-302): cfg 8, cookie 12, dip 16, sip 20 (BE),
 * sport 24, dport 26 (BE), send_nxt 28, recv_nxt 32. RoCEv2: struct erdma_cmdq_mod_qp_req_rocev2
 * (hw.h (7.2):355-363): cfg0 8, cfg1 12 (dst qpn), attr_mask 16, qkey 20, rq_psn 24, sq_psn 28, av 32.
 */
export const modifyQp = rdmaCommand("MODIFY_QP", {
  run(s, req) {
    const cfg = req.u32(8, "cfg");
    const qpn = get32(cfg, MODIFY.QPN);
    const to = get32(cfg, MODIFY.STATE);
    const qp = existing(s.qps, qpn);
    const detail: Record<string, unknown> = { qpn, from: qp.stateName, to: stateName(qp.proto, to) };
    if (qp.proto === "rocev2") {
      const mask = req.u32(16, "attr_mask");
      detail.attrMask = mask;
      if (mask & RoceMask.STATE) {
        if (!isValidState(qp.proto, to)) fail(CmdStatus.BAD_PARAM, `state ${to}`);
        if (!transitionAllowed(qp.proto, qp.state, to)) {
          fail(CmdStatus.BAD_STATE, `${qp.stateName} -> ${stateName(qp.proto, to)}`, { kind: "qp", id: qpn });
        }
      }
      if (mask & RoceMask.DST_QPN) qp.rocev2.dstQpn = get32(req.u32(12, "cfg1"), [19, 0]);
      if (mask & RoceMask.QKEY) qp.rocev2.qkey = req.u32(20, "qkey");
      if (mask & RoceMask.RQ_PSN) qp.rocev2.rqPsn = req.u32(24, "rq_psn") & 0xff_ffff;
      if (mask & RoceMask.SQ_PSN) qp.rocev2.sqPsn = req.u32(28, "sq_psn") & 0xff_ffff;
      if (mask & RoceMask.AV)
        qp.rocev2.av = { raw: Buffer.from(req.bytesAt(32, 36, "av_cfg")).toString("hex") };
      if (mask & RoceMask.STATE) setState(s, qp, to);
      return { detail };
    }
    if (!isValidState(qp.proto, to)) fail(CmdStatus.BAD_PARAM, `state ${to}`);
    // a stop command for a QP the device already failed: the profile decides (profile.ts closeInError)
    const stopping = to === IwarpState.CLOSING || to === IwarpState.TERMINATE;
    if (qp.state === IwarpState.ERROR && stopping && s.profile.closeInError === "accept") {
      detail.to = qp.stateName;
      detail.accepted = `${stateName(qp.proto, to)} in ERROR (closeInError: accept)`;
      return { detail };
    }
    if (!transitionAllowed(qp.proto, qp.state, to))
      fail(CmdStatus.BAD_STATE, `${qp.stateName} -> ${stateName(qp.proto, to)}`, { kind: "qp", id: qpn });
    if (to === 2 /* RTS */) {
      qp.connection = {
        cookie: req.u32(12, "cookie"),
        dip: ipv4(req.be32(16, "dip")),
        sip: ipv4(req.be32(20, "sip")),
        sport: req.be16(24, "sport"),
        dport: req.be16(26, "dport"),
        sendNxt: req.u32(28, "send_nxt"),
        recvNxt: req.u32(32, "recv_nxt"),
        cc: get32(cfg, MODIFY.CC),
      };
      detail.connection = qp.connection;
    }
    setState(s, qp, to);
    return { detail };
  },
});

/**
 * struct erdma_cmdq_reflush_req (hw.h:352-357): qpn 8, sq_pi 12, rq_pi 16. Sent by
 * erdma_flush_worker (erdma_verbs.c:429-442) after the QP entered ERROR and after every post while
 * flushing (erdma_qp.c:533-535, :591-593). The driver ignores the status.
 */
export const reflush = rdmaCommand("REFLUSH", {
  available: (p) => p.reflush !== "unsupported",
  run(s, req) {
    const qpn = req.u32(8, "qpn");
    const sqPi = req.u32(12, "sq_pi");
    const rqPi = req.u32(16, "rq_pi");
    const qp = existing(s.qps, qpn);
    const mode = s.profile.reflush;
    if (mode === "honour") {
      qp.reflushTo = { sqPi, rqPi };
      qp.reflushCount++;
    }
    s.tracer.emit({ kind: "reflush", qpn, sqPi, rqPi, mode });
    if (mode === "honour") s.p.qpEvents?.reflushed(qp);
    return { detail: { qpn, sqPi, rqPi, mode, state: qp.stateName } };
  },
});

/** RoCEv2 only (hw.h (7.2):366-375, erdma_verbs.c (7.2):1894-1912). */
export const queryQp = rdmaCommand("QUERY_QP", {
  available: (p) => p.protocol === "rocev2",
  run(s, req) {
    const qpn = req.u32(8, "qpn");
    const qp = existing(s.qps, qpn);
    const resp0 =
      put64(qp.rocev2.sqPsn ?? 0, [23, 0]) |
      put64(qp.rocev2.rqPsn ?? 0, [47, 24]) |
      put64(qp.state, [55, 48]);
    return { resp0, resp1: 0n, detail: { qpn, state: qp.stateName } };
  },
});
