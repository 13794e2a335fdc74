/**
 * Device behaviour profiles: what the device reports (capabilities, protocol, versions) and how it
 * behaves where hardware generations differ. The data lives in fixtures/profiles/*.json (loaded and
 * validated by profile-file.ts); the objects here are the same profiles for code and unit tests,
 * and a unit test keeps the two equal.
 */
import { NUM_MSIX_VEC } from "./hw.ts";

export type ReflushMode =
  /** REFLUSH completes and the QP records the new producer indices to flush (erdma since 6.2) */
  | "honour"
  /** REFLUSH completes successfully and changes nothing (2022 hardware behaviour) */
  | "ignore"
  /** REFLUSH is an unknown opcode: error completion */
  | "unsupported";

/**
 * What the data path does with work requests in ERROR (consumed by the data path, part 2):
 * "stop" processes nothing posted after the ERROR transition, "reflush" flushes up to the indices a
 * REFLUSH names, "always" flushes everything posted in ERROR (IB behaviour).
 */
export type ErrorFlushMode = "stop" | "reflush" | "always";

export interface ErdmaCaps {
  /** QUERY_DEVICE cap0 bits 47:40, log2 of max CQEs per CQ (hw.h:398) */
  maxCqeLog2: number;
  /** cap0 bits 23:16, log2 of max receive WRs (hw.h:400) */
  maxRecvWrLog2: number;
  /** cap0 bits 7:0, log2 of the largest MR (hw.h:401) */
  maxMrSizeLog2: number;
  /** cap1 bits 7:0, log2 of max memory windows (hw.h:407) */
  maxMwLog2: number;
  /** cap1 bits 27:16; max_qp = 1024 * qblock, max_cq = max_mr = 2 * max_qp (erdma_main.c:403-405) */
  qblock: number;
  /** cap1 bits 31:28 default congestion control (erdma.h:570-578) */
  defaultCc: number;
  /** cap1 bits 63:32, the local DMA lkey */
  localDmaKey: number;
  /** cap0 bits 31:24 (hw.h:411-415) */
  atomic: boolean;
  mttVa: boolean;
  extendDb: boolean;
  /** RoCEv2 only (hw.h (7.2) cap0 51:48 and 15:8): log2 of GID table and AH table sizes */
  maxGidLog2: number;
  maxAhLog2: number;
}

export interface ErdmaProfile {
  name: string;
  protocol: "iwarp" | "rocev2";
  /** the VERSION register; 0 means "non-functional function" to the driver (erdma_main.c:290-295) */
  version: number;
  /** QUERY_FW_INFO: the firmware version (hw.h:417) */
  fwVersion: number;
  /** GRP_NUM register; Linux 6.1 disables direct WQE below 4 (erdma_main.c (6.1):137-142) */
  grpNum: number;
  /** MSI-X vectors the function exposes (the driver uses min(cpus + 1, 32)) */
  msixVectors: number;
  caps: ErdmaCaps;
  reflush: ReflushMode;
  errorFlush: ErrorFlushMode;
  /** GET_STATS and CONF_DEVICE exist on the device (both absent from 6.1-era firmware) */
  statsCommand: boolean;
  confDeviceCommand: boolean;
  /** largest EQ the device accepts, log2; at most 15 (the driver's EQ index is a u16, erdma.h:29) */
  maxEqDepthLog2: number;
  /** largest CMDQ SQ, in 32-byte WQEBBs */
  maxCmdqDepth: number;
  /**
   * iWARP: what MODIFY_QP to CLOSING or TERMINATE gets when the QP is already in ERROR because the
   * device put it there (a WQE failed). "accept": the command completes and the QP stays in ERROR
   * (erdma, see profileReflush); "refuse": BAD_STATE, ERROR leads only to ERROR (a stricter
   * device, as iw_cxgb4's c4iw_modify_qp is for its QPs: from ERROR only IDLE). erdma's driver
   * never learns that the device moved a QP to ERROR (erdma_eq.c erdma_aeq_event_handler and
   * erdma_cq.c erdma_poll_one_cqe leave qp->attrs.state alone), so a teardown sends its stop
   * command from RTS, and the REFLUSH that lets a later drain complete is armed only when that
   * command succeeds (erdma_qp.c erdma_modify_qp_internal: need_reflush && !ret).
   */
  closeInError: "refuse" | "accept";
  /**
   * A SEND (or WRITE with immediate) whose responder has no receive posted. "terminate" (the
   * default): the data sink's DDP finds no untagged buffer (RFC 5041 section 7.2, error type
   * Untagged Buffer, code 0x01 "Invalid MSN - no buffer available") and terminates the stream: the
   * responder's QP goes to ERROR and the requester's WQE completes with a remote error. "wait": the
   * WQE waits at the head of its queue for a receive, as no iWARP wire does (for experiments).
   */
  recvNotPosted?: "terminate" | "wait";
}

const baseCaps: ErdmaCaps = {
  maxCqeLog2: 16,
  maxRecvWrLog2: 13,
  maxMrSizeLog2: 37,
  maxMwLog2: 4,
  qblock: 1,
  defaultCc: 0,
  localDmaKey: 0xffff_ffff,
  atomic: false,
  mttVa: true,
  extendDb: false,
  maxGidLog2: 4,
  maxAhLog2: 10,
};

/**
 * erdma as Linux 6.2+ expects it: REFLUSH honoured, a stop command for a QP the device failed
 * accepted. The default (`hil boot --device-profile`).
 *
 * closeInError "accept": the REFLUSH series (Cheng Xu, "[PATCH for-next 0/3] RDMA/erdma: Support
 * flushing all WRs after QP state changed to ERROR", linux-rdma 2022-11-16; rdma.git 35765dccaf34,
 * 54d8fffc2a50, 0edf42cbcc86, Linux 6.2) names "NoF fatal recovery" among the cases it fixes. There
 * the device has failed a WQE and holds the QP in ERROR while the driver still holds RTS;
 * nvme-rdma's recovery (drivers/nvme/host/rdma.c __nvme_rdma_stop_queue: rdma_disconnect, then
 * ib_drain_qp) first sends MODIFY_QP CLOSING (iwcm.c iwcm_modify_qp_sqd: IB_QPS_SQD, which
 * erdma_verbs.c:1512-1520 maps to CLOSING), and only that command's success arms the REFLUSH
 * (6.12 erdma_qp.c:147-161 and :180-184; the driver then holds CLOSING, whose ERROR branch arms
 * nothing, :166-175). On a device that refused it, every such recovery's drain would hang, so the
 * vendor's fix for that recovery relies on the device accepting it. The rule is unchanged in 6.12
 * and in erdma_modify_qp_state_iwarp after Boshi Yu's "RDMA/erdma: Refactor the code of the
 * modify_qp interface" (linux-rdma 2024-12-11).
 */
export const profileReflush: ErdmaProfile = {
  name: "erdma-reflush",
  protocol: "iwarp",
  version: 0x0001_0000,
  fwVersion: 0x0001_0203,
  grpNum: 0,
  msixVectors: NUM_MSIX_VEC,
  caps: baseCaps,
  reflush: "honour",
  errorFlush: "reflush",
  statsCommand: true,
  confDeviceCommand: true,
  maxEqDepthLog2: 15,
  maxCmdqDepth: 4096,
  closeInError: "accept",
};

/** erdma hardware as it behaved in 2022: stops in ERROR and ignores REFLUSH. */
export const profile2022: ErdmaProfile = {
  ...profileReflush,
  name: "erdma-2022",
  reflush: "ignore",
  errorFlush: "stop",
};

/** An IB-compliant device: flushes everything posted in ERROR. */
export const profileIbCompliant: ErdmaProfile = {
  ...profileReflush,
  name: "erdma-ib-compliant",
  errorFlush: "always",
};

export const builtinProfiles: Readonly<Record<string, ErdmaProfile>> = {
  [profileReflush.name]: profileReflush,
  [profile2022.name]: profile2022,
  [profileIbCompliant.name]: profileIbCompliant,
};

/** Throws a RangeError naming the first field out of its hardware range. */
export function checkProfile(p: ErdmaProfile): ErdmaProfile {
  const range = (name: string, v: number, lo: number, hi: number) => {
    if (!Number.isInteger(v) || v < lo || v > hi) {
      throw new RangeError(`profile ${p.name}: ${name} = ${v} is outside ${lo}..${hi}`);
    }
  };
  range("version", p.version, 1, 0xffff_ffff);
  range("fwVersion", p.fwVersion, 0, 0xffff_ffff);
  range("grpNum", p.grpNum, 0, 0xffff_ffff);
  range("msixVectors", p.msixVectors, 1, NUM_MSIX_VEC);
  range("caps.maxCqeLog2", p.caps.maxCqeLog2, 1, 24);
  range("caps.maxRecvWrLog2", p.caps.maxRecvWrLog2, 1, 16);
  range("caps.maxMrSizeLog2", p.caps.maxMrSizeLog2, 12, 63);
  range("caps.maxMwLog2", p.caps.maxMwLog2, 0, 31);
  range("caps.qblock", p.caps.qblock, 1, 0xfff);
  range("caps.defaultCc", p.caps.defaultCc, 0, 15);
  range("caps.localDmaKey", p.caps.localDmaKey, 0, 0xffff_ffff);
  range("caps.maxGidLog2", p.caps.maxGidLog2, 0, 15);
  range("caps.maxAhLog2", p.caps.maxAhLog2, 0, 20);
  range("maxEqDepthLog2", p.maxEqDepthLog2, 1, 15);
  range("maxCmdqDepth", p.maxCmdqDepth, 4, 1 << 16);
  return p;
}
