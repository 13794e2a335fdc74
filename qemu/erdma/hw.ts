/**
 * The erdma hardware interface as the upstream driver sees it: BAR0 registers, doorbell spaces,
 * CMDQ opcodes, queue element sizes and bit fields. Facts carried over from the driver sources,
 * each with its origin; "hw.h" is drivers/infiniband/hw/erdma/erdma_hw.h. Line numbers are Linux
 * 6.12 unless another version is named. No code is copied; only numbers.
 */

/** PCI identity. hw.h (6.1):14 PCI_VENDOR_ID_ALIBABA 0x1ded; erdma_main.c (6.12):243 device 0x107f. */
export const PCI_VENDOR_ALIBABA = 0x1ded;
export const PCI_DEVICE_ERDMA = 0x107f;

/** hw.h:15-16 ERDMA_FUNC_BAR 0, ERDMA_MISX_BAR 2; erdma_main.c:274 requires exactly these two. */
export const FUNC_BAR = 0;
export const MSIX_BAR = 2;
/** hw.h:21 ERDMA_NUM_MSIX_VEC 32; hw.h:22 vector 0 is the CMDQ/AEQ ("common") vector. */
export const NUM_MSIX_VEC = 32;
export const MSIX_VECTOR_CMDQ = 0;

/** BAR0 registers. hw.h:25-60; DEV_PROTO is hw.h (7.2):39. */
export const Reg = {
  VERSION: 0x00,
  DEV_PROTO: 0x0c,
  DEV_CTRL: 0x10,
  DEV_ST: 0x14,
  NETDEV_MAC_L: 0x18,
  NETDEV_MAC_H: 0x1c,
  CMDQ_SQ_ADDR_L: 0x20,
  CMDQ_SQ_ADDR_H: 0x24,
  CMDQ_CQ_ADDR_L: 0x28,
  CMDQ_CQ_ADDR_H: 0x2c,
  CMDQ_DEPTH: 0x30,
  CMDQ_EQ_DEPTH: 0x34,
  CMDQ_EQ_ADDR_L: 0x38,
  CMDQ_EQ_ADDR_H: 0x3c,
  AEQ_ADDR_L: 0x40,
  AEQ_ADDR_H: 0x44,
  AEQ_DEPTH: 0x48,
  GRP_NUM: 0x4c,
  AEQ_DB: 0x50,
  CMDQ_SQ_DB_HOST_ADDR: 0x60,
  CMDQ_CQ_DB_HOST_ADDR: 0x68,
  CMDQ_EQ_DB_HOST_ADDR: 0x70,
  AEQ_DB_HOST_ADDR: 0x78,
  STATS_TSO_IN_PKTS: 0x80,
  STATS_TSO_OUT_PKTS: 0x88,
  STATS_TSO_OUT_BYTES: 0x90,
  STATS_TX_DROP_PKTS: 0x98,
  STATS_TX_BPS_METER_DROP_PKTS: 0xa0,
  STATS_TX_PPS_METER_DROP_PKTS: 0xa8,
  STATS_RX_PKTS: 0xc0,
  STATS_RX_BYTES: 0xc8,
  STATS_RX_DROP_PKTS: 0xd0,
  STATS_RX_BPS_METER_DROP_PKTS: 0xd8,
  STATS_RX_PPS_METER_DROP_PKTS: 0xe0,
  /** CEQ doorbells: 0x100 + 8 * eqn; eqn 0 is the CMDQ EQ (erdma_cmdq.c:167, erdma_eq.c:251). */
  CEQ_DB_BASE: 0x100,
  CMDQ_SQDB: 0x200,
  CMDQ_CQDB: 0x300,
} as const;

/** hw.h:63-68 DEV_CTRL and DEV_ST bits. */
export const DEV_CTRL_RESET = 0x1;
export const DEV_CTRL_INIT = 0x2;
export const DEV_ST_RESET_DONE = 0x1;
export const DEV_ST_INIT_DONE = 0x2;

/** hw.h (7.2):31-33 enum erdma_proto_type, the value of DEV_PROTO. */
export const Proto = { IWARP: 0, ROCEV2: 1 } as const;

/** Doorbell spaces in BAR0. hw.h:71-83. */
export const DB_SPACE_BASE = 4096;
export const SQDB_SPACE_OFFSET = DB_SPACE_BASE;
export const SQDB_SPACE_SIZE = 384 * 1024;
export const RQDB_SPACE_OFFSET = SQDB_SPACE_OFFSET + SQDB_SPACE_SIZE;
export const RQDB_SPACE_SIZE = 96 * 1024;
export const CQDB_SPACE_OFFSET = RQDB_SPACE_OFFSET + RQDB_SPACE_SIZE;
/** the shared SQ doorbell page kernel QPs ring (hw.h:83, erdma_verbs.c:515-516) */
export const SDB_SHARED_PAGE_INDEX = 95;
/** BAR0 size: the doorbell spaces need 0x79000 + one CQ doorbell page; 1 MiB leaves room for ext-db pages. */
export const BAR0_SIZE = 1 << 20;
export const HW_PAGE_SHIFT = 12;
export const HW_PAGE_SIZE = 4096;

/** hw.h:86-96 doorbell layouts (64-bit values). */
export const DB_SIZE = 8;
export const CqDb = {
  IDX: [63, 56],
  CQN: [55, 32],
  ARM: [31, 31],
  SOL: [30, 30],
  CMDSN: [29, 28],
  CI: [23, 0],
} as const;
export const EqDb = { ARM: [31, 31], CI: [23, 0] } as const;

/** Queue element sizes. hw.h:105-118. */
export const EQE_SIZE = 16;
export const RQE_SIZE = 32;
export const CQE_SIZE = 32;
export const SQEBB_SIZE = 32;
export const MAX_SQE_SIZE = 128;

/** hw.h:121-122 (6.12: 128-byte CMDQ SQEs; hw.h (6.1):137 had 64). */
export const CMDQ_MAX_OUTSTANDING = 128;

export const SubMod = { RDMA: 0, COMMON: 1 } as const;

/** hw.h:130-140; REFLUSH since 6.2; SET_GID..QUERY_QP hw.h (7.2):154-157 (RoCEv2 only). */
export const RdmaOp = {
  QUERY_DEVICE: 0,
  CREATE_QP: 1,
  DESTROY_QP: 2,
  MODIFY_QP: 3,
  CREATE_CQ: 4,
  DESTROY_CQ: 5,
  REFLUSH: 6,
  REG_MR: 8,
  DEREG_MR: 9,
  SET_GID: 14,
  CREATE_AH: 15,
  DESTROY_AH: 16,
  QUERY_QP: 17,
} as const;

/** hw.h:142-151; GET_STATS, CONF_DEVICE, ALLOC_DB, FREE_DB appeared after 6.1. */
export const CommonOp = {
  CREATE_EQ: 0,
  DESTROY_EQ: 1,
  QUERY_FW_INFO: 2,
  CONF_MTU: 3,
  GET_STATS: 4,
  CONF_DEVICE: 5,
  ALLOC_DB: 8,
  FREE_DB: 9,
} as const;

/** CMDQ SQE header (u64 LE). hw.h:154-158. */
export const CmdHdr = {
  WQEBB_CNT: [54, 52],
  COOKIE: [47, 32],
  SUB_MOD: [25, 24],
  OPCODE: [23, 16],
  WQEBB_INDEX: [15, 0],
} as const;

/** struct erdma_cmdq_create_cq_req cfg0/cfg1/cfg2 fields (hw.h:223-235) */
export const CreateCqReq = {
  DEPTH: [31, 24],
  PAGESIZE: [23, 20],
  CQN: [19, 0],
  MTT_CNT: [31, 16],
  MTT_LEVEL: [15, 15],
  MTT_DB_CFG: [11, 11],
  EQN: [9, 0],
  DB_CFG: [15, 0],
} as const;

/** struct erdma_cmdq_reg_mr_req cfg0/cfg1/cfg2 (hw.h:248-263) */
export const RegMrReq = {
  VALID: [31, 31],
  VERSION: [30, 28],
  KEY: [27, 20],
  MPT: [19, 0],
  PD: [31, 12],
  TYPE: [7, 6],
  RIGHTS: [5, 1],
  PAGESIZE: [31, 27],
  MTT_PAGESIZE: [26, 24],
  MTT_LEVEL: [21, 20],
  MTT_CNT: [19, 0],
} as const;

/** struct erdma_cmdq_create_qp_req create_qp fields (hw.h:304-324) */
export const CreateQpReq = {
  DEPTH: [31, 20],
  QPN: [19, 0],
  PD: [19, 0],
  PAGE_SIZE: [31, 28],
  DB_CFG: [25, 25],
  CQN: [23, 0],
  MTT_CNT: [11, 1],
  MTT_LEVEL: [0, 0],
  SQDB: [31, 16],
  RQDB: [15, 0],
  TYPE: [3, 0],
} as const;

/** hw.h:165-166 */
export const EqType = { AEQ: 0, CEQ: 1 } as const;

/** CQE header (BE32). hw.h:420-427. */
export const CqeHdr = { OWNER: [31, 31], OPCODE: [23, 16], QTYPE: [15, 8], SYNDROME: [7, 0] } as const;
export const CqeQtype = { SQ: 0, RQ: 1, CMDQ: 2 } as const;

/** CEQE (u64 LE) hw.h:534-537; AEQE header (LE32) hw.h:540-548. */
export const Ceqe = { DB: [63, 63], PI: [55, 32], OWNER: [31, 31], CQN: [19, 0] } as const;
export const Aeqe = { OWNER: [31, 31], TYPE: [23, 16], SUBTYPE: [7, 0] } as const;
export const AeType = { QP_FATAL: 0, QP_ERQ_ERR: 1, ACC_ERR: 2, CQ_ERR: 3, OTHER_ERROR: 4 } as const;

/** hw.h:531 the depth the driver uses for the AEQ and every CEQ. */
export const DEFAULT_EQ_DEPTH = 4096;

/** hw.h:409-415 */
export const NQP_PER_QBLOCK = 1024;
export const CapFlag = { ATOMIC: 1 << 7, MTT_VA: 1 << 5, EXTEND_DB: 1 << 3 } as const;

/** hw.h:359-370 GET_STATS response. */
export const HW_RESP_SIZE = 256;
export const HW_RESP_MAGIC = 0x5566;
/** struct erdma_cmdq_query_stats_resp: a 16-byte header and 11 u64 counters (hw.h:372-395) */
export const STATS_RESP_LEN = 16 + 11 * 8;

/** erdma_verbs.h:67-83 (6.12) MTT and MR facts. */
export const MAX_INLINE_MTT_ENTRIES = 4;
export const MR_MAX_MTT_CNT = 524288;
export const MrType = { NORMAL: 0, FRMR: 1, DMA: 2 } as const;

/**
 * MR access rights as bits of REG_MR cfg1 (absolute positions). 6.12 packs ERDMA_MR_ACC_* (RA=bit0,
 * LR=1, LW=2, RR=3, RW=4; erdma_verbs.h:79-83) into GENMASK(5,1) (hw.h:257); 6.1 packed LR=0..RW=3
 * (erdma_verbs.h (6.1):77-80) into GENMASK(5,2) (hw.h (6.1):231). Both give the same positions.
 */
export const MrRight = {
  REMOTE_ATOMIC: 1 << 1,
  LOCAL_READ: 1 << 2,
  LOCAL_WRITE: 1 << 3,
  REMOTE_READ: 1 << 4,
  REMOTE_WRITE: 1 << 5,
} as const;

/** erdma_verbs.h:179-188 (6.12) iWARP QP states, the MODIFY_QP state values. */
export const IwarpState = { IDLE: 0, RTR: 1, RTS: 2, CLOSING: 3, TERMINATE: 4, ERROR: 5 } as const;
/** erdma_verbs.h (7.2):224-230 RoCEv2 QP states. */
export const Rocev2State = { RESET: 0, INIT: 1, RTR: 2, RTS: 3, SQD: 4, SQE: 5, ERROR: 6 } as const;

/** hw.h (7.2):386-389 erdma_qp_type, CREATE_QP cfg2 (7.2 only). */
export const QpType = { RC: 0, UD: 1 } as const;

/** erdma_verbs.h:13-20 driver-side limits the model checks requests against. */
export const MAX_SEND_WR = 8192;
export const MAX_WQEBB_PER_SQE = 4;

/** QUERY_DEVICE response. hw.h:397-407; MAX_GID and MAX_AH are hw.h (7.2):501,505 (cap0). */
export const DevCap0 = {
  MAX_GID: [51, 48],
  MAX_CQE: [47, 40],
  FLAGS: [31, 24],
  MAX_RECV_WR: [23, 16],
  MAX_AH: [15, 8],
  MAX_MR_SIZE: [7, 0],
} as const;
export const DevCap1 = {
  DMA_LOCAL_KEY: [63, 32],
  DEFAULT_CC: [31, 28],
  QBLOCK: [27, 16],
  MAX_MW: [7, 0],
} as const;

/** SQE header (u64 LE), hw.h:459-468 (6.12). WQEBB_INDEX is the producer index after this SQE. */
export const SqeHdr = {
  SGL_LEN: [63, 56],
  WQEBB_CNT: [54, 52],
  QPN: [51, 32],
  OPCODE: [31, 27],
  DWQE: [26, 26],
  INLINE: [25, 25],
  FENCE: [24, 24],
  SE: [23, 23],
  CE: [22, 22],
  WQEBB_INDEX: [15, 0],
} as const;

/** REG_MR SQE attrs (hw.h:471-473). */
export const SqeMrAttr = { ACCESS: [5, 1], MTT_TYPE: [7, 6], MTT_CNT: [31, 12] } as const;

/** enum erdma_opcode (hw.h:563-584): SQE opcodes and the CQE opcodes the device reports. */
export const WqeOp = {
  WRITE: 0,
  READ: 1,
  SEND: 2,
  SEND_WITH_IMM: 3,
  RECEIVE: 4,
  RECV_IMM: 5,
  RECV_INV: 6,
  WRITE_WITH_IMM: 9,
  RSP_SEND_IMM: 12,
  SEND_WITH_INV: 13,
  REG_MR: 14,
  LOCAL_INV: 15,
  READ_WITH_INV: 16,
  ATOMIC_CAS: 17,
  ATOMIC_FAA: 18,
} as const;

/** enum erdma_wc_status (hw.h:586-605): the CQE syndrome. */
export const WcStatus = {
  SUCCESS: 0,
  GENERAL_ERR: 1,
  RECV_WQE_FORMAT_ERR: 2,
  RECV_STAG_INVALID_ERR: 3,
  RECV_ADDR_VIOLATION_ERR: 4,
  RECV_RIGHT_VIOLATION_ERR: 5,
  RECV_PDID_ERR: 6,
  RECV_WARRPING_ERR: 7,
  SEND_WQE_FORMAT_ERR: 8,
  SEND_WQE_ORD_EXCEED: 9,
  SEND_STAG_INVALID_ERR: 10,
  SEND_ADDR_VIOLATION_ERR: 11,
  SEND_RIGHT_VIOLATION_ERR: 12,
  SEND_PDID_ERR: 13,
  SEND_WARRPING_ERR: 14,
  FLUSH_ERR: 15,
  RETRY_EXC_ERR: 16,
} as const;

/** ERDMA_MAX_SEND_SGE (erdma_verbs.h:19); inline data is at most 6 SGEs' worth (:21). */
export const MAX_SEND_SGE = 6;
export const MAX_INLINE = 16 * MAX_SEND_SGE;
/** SQ and RQ producer indices are 16 bits (erdma_qp.c:323, :547). */
export const WQ_INDEX_BITS = 16;
