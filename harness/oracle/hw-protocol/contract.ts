/**
 * The checks of rule hw-protocol: how erdma's driver must use the device, each with the driver and
 * device code it comes from (Linux 6.12.95 as Debian ships it, drivers/infiniband/hw/erdma; the
 * device model in qemu/erdma). A problem names its check, so a verdict says which contract broke.
 */

export type HwCheck =
  | "lifetime"
  | "doorbell"
  | "reflush"
  | "cq-doorbell"
  | "dma"
  | "qp-state"
  | "wqe-format"
  | "status";

export interface HwContract {
  /** the letter of the check in the README's rule 10 */
  label: string;
  what: string;
  citation: string;
}

export const HW_CONTRACT: Readonly<Record<HwCheck, HwContract>> = {
  lifetime: {
    label: "a",
    what: "no command or completion for an object that does not exist or was destroyed",
    citation:
      "erdma_verbs.c:1269-1301 erdma_destroy_qp cancels the QP's reflush work (cancel_delayed_work_sync, :1284) before DESTROY_QP, so nothing names the QP after it; " +
      "drivers/infiniband/core/verbs.c:2187 ib_destroy_cq_user refuses a CQ still in use (usecnt); erdma_main.c:626-630 erdma_remove tears the IB device down before the EQs; " +
      "erdma_verbs.c:1222-1223 erdma_dereg_mr names the MR by ibmr->lkey (MPT index and key, erdma_hw.h:282-285)",
  },
  doorbell: {
    label: "b",
    what: "no doorbell beyond what can have been written: a QP's SQ/RQ producer index at most a queue's depth past the device's consumer index, and only for queues that exist",
    citation:
      "erdma_qp.c:515 erdma_post_send refuses a WR once (u16)(sq_pi - sq_ci) >= sq_size and kick_sq_db (:490-497) rings the new sq_pi; erdma_qp.c:540-566 erdma_post_recv_one rings qe_idx = rq_pi + 1; " +
      "the device's consumer index never passes a WQE the driver has not completed, so a producer index more than the depth ahead of it overwrote WQEs the device had not read; erdma_cmdq.c:23-30 kick_cmdq_db",
  },
  reflush: {
    label: "c",
    what: "REFLUSH carries the producer indexes the driver rang: each of its sq_pi/rq_pi is a value that queue's doorbell carried (0 before any), never going back, and one older than a doorbell the device saw is followed by another REFLUSH or the QP's DESTROY_QP",
    citation:
      "erdma_verbs.c:429-442 erdma_flush_worker sends req.sq_pi = kern_qp.sq_pi and req.rq_pi = kern_qp.rq_pi (u16, erdma_verbs.h:151-155; layout erdma_hw.h:352-357), read without qp->lock; " +
      "erdma_post_send stores sq_pi then rings it (erdma_qp.c:525-526), erdma_post_recv_one rings rq_pi + 1 then stores it (:559-566), so a REFLUSH may be one in-flight doorbell ahead or one post behind; " +
      "every post while ERDMA_QP_IN_FLUSHING re-arms the worker (erdma_qp.c:533-535, :591-593), which runs again after a stale read, unless erdma_destroy_qp cancels it (erdma_verbs.c:1284)",
  },
  "cq-doorbell": {
    label: "d",
    what: "a CQ doorbell's consumer index is within the CQ: not past the CQEs the device wrote, and not more than the CQ's depth behind them (CQEs overwritten unread)",
    citation:
      "erdma_cq.c:19-30 notify_cq reports kern_cq.ci (ERDMA_CQDB_CI_MASK, erdma_hw.h CQ doorbell) and only when it arms; erdma_cq.c:9-17 get_next_valid_cqe consumes a CQE only once its owner bit says the device wrote it",
  },
  dma: {
    label: "e",
    what: "no DMA to memory the guest did not map: every address the driver gives the device (queues, doorbell records, MTTs, buffers) is mapped",
    citation:
      "the driver hands the device DMA addresses of its own coherent buffers and pinned pages (erdma_verbs.c create_qp_cmd, create_cq_cmd, regmr_cmd; erdma_cmdq.c erdma_cmdq_init); qemu/erdma/dma.ts refuses and traces every access outside what the guest mapped",
  },
  "qp-state": {
    label: "f",
    what: "MODIFY_QP asks for a transition the device accepts; the one refusal the driver's design makes: stopping a QP the device moved to ERROR itself",
    citation:
      "erdma_eq.c:30-80 erdma_aeq_event_handler reports a QP the device failed as IB_EVENT_QP_FATAL and leaves qp->attrs.state, so erdma_qp.c:147-158 erdma_modify_qp_internal still stops it from RTS (CLOSING/TERMINATE); " +
      "a device whose ERROR leads only to ERROR refuses that (qemu/erdma/profile.ts closeInError: refuse) and the driver then arms no REFLUSH (erdma_qp.c:180)",
  },
  "wqe-format": {
    label: "g",
    what: "every send WQE the driver writes is one the device can parse: its opcode, its WQEBB count and the blocks its opcode needs (a READ's source SGE, a WRITE's sink)",
    citation:
      "erdma_qp.c erdma_push_one_sqe builds each SQE (header: erdma_hw.h ERDMA_SQE_HDR_OPCODE_MASK, ERDMA_SQE_HDR_WQEBB_CNT_MASK; erdma_readreq_sqe with its sink SGE in the next WQEBB) and the hardware completes one it cannot parse with ERDMA_WC_SEND_WQE_FORMAT_ERR (erdma_hw.h erdma_wc_status), reported as IB_WC_LOC_QP_OP_ERR (erdma_cq.c map_cqe_status)",
  },
  status: {
    label: "f",
    what: "every command the device refused, and every warning or internal error of the device, is explained by a check above or by the scenario's injected fault: never silently a PASS",
    citation:
      "erdma_cmdq.c:310, :441-442 turn any non-zero completion status into -EIO: a refused command is a failed verb the driver may ignore (erdma_flush_worker does); qemu/erdma/status.ts lists the statuses the device answers",
  },
};

/** The contract line a problem's evidence opens with. */
export function contractLine(check: HwCheck): string {
  const c = HW_CONTRACT[check];
  return `contract (${c.label}, ${check}): ${c.what} [${c.citation}]`;
}
