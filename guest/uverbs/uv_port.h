/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hil-uverbs' side of the executor core (guest/common/core.h includes it): the libibverbs types
 * the core stores, the parts of its objects only the user executor has, its constants.
 */
#ifndef HIL_UV_PORT_H
#define HIL_UV_PORT_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

typedef struct ibv_context hil_verbs_device;
typedef struct ibv_pd hil_verbs_pd;
typedef struct ibv_cq hil_verbs_cq;
typedef struct ibv_qp hil_verbs_qp;
typedef struct ibv_qp_init_attr hil_verbs_qp_init_attr;
typedef struct ibv_wc hil_verbs_wc;

#define HIL_WC_SUCCESS IBV_WC_SUCCESS
#define HIL_WC_RECV IBV_WC_RECV
#define HIL_ACCESS_LOCAL_WRITE IBV_ACCESS_LOCAL_WRITE
#define HIL_ACCESS_REMOTE_READ IBV_ACCESS_REMOTE_READ
#define HIL_ACCESS_REMOTE_WRITE IBV_ACCESS_REMOTE_WRITE

/* the device sees a WR's index in its pool as its wr_id: nothing more to a context */
struct hil_ctx_port {};

/* What a drain marker's completion said (drain.c waits for `seen`). */
struct uv_marker {
	bool seen;
	uint64_t call;
};

/* A QP's buffers: one allocation (a slot per WQE, SQ slots first) registered as one MR. */
struct hil_pool_port {
	uint8_t *buf;
	struct ibv_mr *mr;
	struct uv_marker marker[2];
};

struct hil_cq_port {};
struct hil_cmctx_port {};
struct hil_qp_port {};

#endif
