/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hil_kverbs' side of the executor core (guest/common/core.h includes it): the kernel verbs
 * types the core stores, the parts of its objects only the kernel executor has, its constants.
 */
#ifndef HIL_KV_PORT_H
#define HIL_KV_PORT_H

#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

typedef struct ib_device hil_verbs_device;
typedef struct ib_pd hil_verbs_pd;
typedef struct ib_cq hil_verbs_cq;
typedef struct ib_qp hil_verbs_qp;
typedef struct ib_qp_init_attr hil_verbs_qp_init_attr;
typedef struct ib_wc hil_verbs_wc;

#define HIL_WC_SUCCESS IB_WC_SUCCESS
#define HIL_WC_RECV IB_WC_RECV
#define HIL_ACCESS_LOCAL_WRITE IB_ACCESS_LOCAL_WRITE
#define HIL_ACCESS_REMOTE_READ IB_ACCESS_REMOTE_READ
#define HIL_ACCESS_REMOTE_WRITE IB_ACCESS_REMOTE_WRITE

/* A WR's completion is dispatched to its ib_cqe (kv_done). */
struct hil_ctx_port {
	struct ib_cqe cqe;
};

/* A WQE's buffer: kmalloc'd, DMA-mapped for the device. */
struct kv_slot {
	void *va;
	u64 dma;
};

struct hil_ctx;

struct hil_pool_port {
	struct ib_device *dev;
	struct kv_slot *slots[2];
	/* the receives a SEND bench keeps on this QP, one per RQ slot (kv_bench.c) */
	struct hil_ctx **bench_rq;
	struct ib_recv_wr *bench_rwrs;
	struct ib_sge *bench_rsges;
	/*
	 * Set when the QP is destroyed: its ib_qp, then only compared with a completion's wc->qp.
	 * ib_destroy_qp_user (core/verbs.c) frees it, while a driver may still return the QP's
	 * completions (siw: siw_cq.c siw_reap_cqe hands out cqe->base_qp, Linux 6.12).
	 */
	const struct ib_qp *destroyed_qp;
};

struct hil_cq_port {
	enum ib_poll_context poll;
	/* woken by each completion counted (a poll command waits on it) */
	wait_queue_head_t wq;
};

struct hil_cmctx_port {
	/* woken by each event remembered */
	wait_queue_head_t wq;
};

struct hil_qp_port {
	/* fast-registration MRs (post_send op=reg_mr mr=<i>), one per SQ slot, made on first use */
	struct ib_mr **mrs;
	u32 nmrs;
};

#endif
