/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hil_kverbs: the in-kernel verbs executor. The command language, the objects, the rdma_cm
 * bookkeeping, posting, completions and the trace records are the executor core it shares with
 * hil-uverbs (guest/common, core.h); these files are its kernel side:
 *   kv_main.c     module init/exit, debugfs files, the ib_client, the worker thread
 *   kv_trace.c    the JSON-lines trace buffer the core's records go to
 *   kv_cmd.c      clear, sleep, mark
 *   kv_objects.c  device, PD, CQ, a QP's DMA-mapped buffers, QP creation and destruction
 *   kv_cm.c       rdma_cm ids, the event handler, waiting for events
 *   kv_wr.c       post building: ib_send_wr/ib_recv_wr and their SGEs, ib_post_send/recv
 *   kv_mr.c       fast-registration MRs (reg_mr, local_inv, send_inv)
 *   kv_cq.c       completions (the ib_cqe handler), poll, modify, query, the drain call
 *   kv_tap.c      the drain marker watch: what a drain does inside (its ERR transition, marker
 *                 post and completion)
 *   kv_bench.c    throughput/latency loops
 */
#ifndef HIL_KV_H
#define HIL_KV_H

#include <linux/mutex.h>
#include <linux/types.h>

#include "core.h"

/* ---- the executor's own state ---- */

struct kv_state {
	/* held by the worker for each command, and by device removal */
	struct mutex exec_lock;
	/* commands that returned non-zero since the trace was last cleared */
	u64 failed;
};

extern struct kv_state kv;

/* ---- trace (kv_trace.c) ---- */

int kv_trace_init(size_t bytes);
void kv_trace_exit(void);
void kv_trace_clear(void);
ssize_t kv_trace_read(char __user *ubuf, size_t count, loff_t *ppos);
size_t kv_trace_bytes(void);
u64 kv_trace_dropped(void);

/* ---- the devices the ib_client has seen (kv_main.c) ---- */

struct ib_device *kv_device_by_name(const char *name);
bool kv_device_known(struct ib_device *dev);

/* ---- verbs callbacks ---- */

/* the completion handler of every WR the executor posts (kv_cq.c) */
void kv_done(struct ib_cq *cq, struct ib_wc *wc);
/* a QP's asynchronous events (kv_cq.c) */
void kv_qp_event(struct ib_event *ev, void *context);
/* the rdma_cm event handler of every id (kv_cm.c) */
int kv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

/* ---- fast-registration MRs (kv_mr.c) ---- */

/* MR `idx` of the QP, allocated on first use; NULL with the command failed */
struct ib_mr *kv_qp_mr(struct hil_cmd *cmd, struct hil_qp *q, u32 idx);
/* maps MR `mr` over `len` bytes of SQ slot `idx` with a fresh key: the REG_MR WR */
int kv_mr_prepare_reg(struct hil_cmd *cmd, struct hil_qp *q, struct ib_mr *mr, u32 idx, u32 len,
		      int access, struct ib_reg_wr *wr);
void kv_trace_mr(struct hil_qp *q, u32 idx, const char *action, struct ib_mr *mr);
void kv_qp_mrs_free(struct hil_qp *q);

/* ---- the drain marker watch (kv_tap.c): the device's ops wrapped while a drain of q runs ---- */

void kv_tap_begin(const struct hil_qp *q, u64 call);
void kv_tap_end(void);

/* ---- bench (kv_bench.c) ---- */

void kv_bench_done(struct hil_ctx *c, struct ib_wc *wc);

#endif
