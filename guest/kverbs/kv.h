/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hil_kverbs: the in-kernel verbs executor. Shared declarations of its parts:
 *   kv_main.c     module init/exit, debugfs files, the ib_client, the worker thread
 *   kv_cmd.c      the operation table built from guest/common/commands.def, clear, sleep
 *   kv_cmdlang.c  guest/common/cmdlang.c, the command language both executors share
 *   kv_names.c    guest/common/names.c, the names both executors trace
 *   kv_trace.c    the JSON-lines trace buffer
 *   kv_obj.c      device, PD, CQ, QP (with its buffers and work request contexts), teardown
 *   kv_cm.c       rdma_cm: listen, connect (loopback pairs), disconnect, the event handler
 *   kv_post.c     posting, completions, poll, modify, query, drain
 *   kv_bench.c    throughput/latency loops
 *   kv_tap.c      what a drain does inside (its ERR transition, marker post and completion)
 */
#ifndef HIL_KV_H
#define HIL_KV_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "cmdlang.h"

#define KV_MAX_OBJS 48
#define KV_CHUNK 512
#define KV_REC_LEN 640

/* ---- commands (kv_cmd.c; the language is guest/common/commands.def and cmdlang.c) ---- */

/* runs an accepted command's operation */
int kv_run(struct hil_cmd *cmd);

/* ---- trace (kv_trace.c) ---- */

struct kv_rec {
	size_t len;
	bool trunc;
	char buf[KV_REC_LEN];
};

int kv_trace_init(size_t bytes);
void kv_trace_exit(void);
void kv_trace_clear(void);
ssize_t kv_trace_read(char __user *ubuf, size_t count, loff_t *ppos);
size_t kv_trace_bytes(void);
u64 kv_trace_dropped(void);

void kv_rec_begin(struct kv_rec *r, const char *ev);
void kv_rec_str(struct kv_rec *r, const char *key, const char *val);
void kv_rec_int(struct kv_rec *r, const char *key, s64 val);
void kv_rec_uint(struct kv_rec *r, const char *key, u64 val);
void kv_rec_bool(struct kv_rec *r, const char *key, bool val);
void kv_rec_null(struct kv_rec *r, const char *key);
/* raw JSON text after "key": (an object or array the caller built) */
void kv_rec_raw(struct kv_rec *r, const char *key, const char *json);
void kv_rec_printf(struct kv_rec *r, const char *fmt, ...) __printf(2, 3);
/* appends the record; safe in any context */
void kv_rec_commit(struct kv_rec *r);

/* ---- objects (kv_obj.c) ---- */

enum kv_queue { KV_SQ = 0, KV_RQ = 1 };

enum kv_ctx_state { KV_CTX_FREE, KV_CTX_POSTED, KV_CTX_FAILED };

struct kv_pool;

/* One posted work request: the ib_cqe its completion is dispatched to. */
struct kv_ctx {
	struct ib_cqe cqe;
	struct kv_pool *pool;
	u64 wr_id;
	u64 call;
	u64 t_post;
	u32 seq;
	u32 slot;
	u8 queue;
	u8 opcode;
	u8 signaled;
	u8 state;
	u8 bench;
	atomic_t ncqe;
};

struct kv_slot {
	void *va;
	u64 dma;
};

/*
 * A QP's buffers and work request contexts. It outlives the QP: a destroyed QP's pool waits in
 * the graveyard until no CQ is left that could still hand out a completion pointing into it.
 */
struct kv_pool {
	struct list_head node;
	char name[HIL_NAME_LEN];
	struct ib_device *dev;
	u32 qp_num;
	u32 slot_len;
	u32 nslots[2];
	struct kv_slot *slots[2];
	struct kv_ctx **chunks;
	u32 nchunks;
	u32 maxchunks;
	u32 used;
	/* WRs handed to ib_post_* per queue (their seq numbers) */
	u32 posted[2];
	/* seq of the newest successful signaled SQ completion + 1 (older unsignaled ones are done) */
	u32 sq_done_upto;
	/* the receives a SEND bench keeps on this QP, one per RQ slot (kv_bench.c) */
	struct kv_ctx **bench_rq;
	struct ib_recv_wr *bench_rwrs;
	struct ib_sge *bench_rsges;
};

struct kv_pd {
	bool in_use;
	char name[HIL_NAME_LEN];
	struct ib_pd *pd;
	bool global_rkey;
};

struct kv_cq {
	bool in_use;
	char name[HIL_NAME_LEN];
	struct ib_cq *cq;
	enum ib_poll_context poll;
	u32 depth;
	atomic_t ncqe;
	/* ncqe when the last poll command returned */
	int polled;
	wait_queue_head_t wq;
};

enum kv_cm_kind { KV_CM_PROBE, KV_CM_LISTEN, KV_CM_QP };

/* The context of an rdma_cm_id: the event handler looks at the kind first. */
struct kv_cmctx {
	enum kv_cm_kind kind;
	const char *name;
	wait_queue_head_t wq;
	unsigned long seen;
	int status;
};

struct kv_qp_params {
	char name[HIL_NAME_LEN];
	struct kv_pd *pd;
	struct kv_cq *scq;
	struct kv_cq *rcq;
	u32 sq;
	u32 rq;
	u32 sge;
	u32 inline_len;
	u32 slot_len;
	u32 max_wrs;
	bool sig_all;
};

struct kv_qp {
	struct kv_cmctx cm;
	bool in_use;
	char name[HIL_NAME_LEN];
	struct ib_qp *qp;
	/* NULL for a QP made with ib_create_qp (no connection manager) */
	struct rdma_cm_id *id;
	struct kv_pool *pool;
	struct kv_qp *peer;
	struct kv_pd *pd;
	struct kv_cq *scq;
	struct kv_cq *rcq;
	bool sig_all;
	u32 inline_len;
	/* fast-registration MRs (post_send op=reg_mr mr=<i>), one per SQ slot, made on first use */
	struct ib_mr **mrs;
	u32 nmrs;
};

struct kv_listener {
	struct kv_cmctx cm;
	bool in_use;
	char name[HIL_NAME_LEN];
	struct rdma_cm_id *id;
	u16 port;
	__be32 addr;
	struct kv_qp_params qp;
	spinlock_t lock;
	/* a connection request the worker has not accepted yet */
	struct rdma_cm_id *pending;
};

struct kv_state {
	/* held by the worker for each command, and by device removal */
	struct mutex exec_lock;
	struct ib_device *dev;
	struct kv_pd pds[KV_MAX_OBJS];
	struct kv_cq cqs[KV_MAX_OBJS];
	struct kv_qp qps[KV_MAX_OBJS];
	struct kv_listener listeners[KV_MAX_OBJS];
	struct list_head graveyard;
	u64 calls;
	/* commands that returned non-zero since the trace was last cleared */
	u64 failed;
	u32 max_wrs;
};

extern struct kv_state kv;

/* the devices the ib_client has seen (kv_main.c) */
struct ib_device *kv_device_by_name(const char *name);
bool kv_device_known(struct ib_device *dev);

struct kv_pd *kv_find_pd(const char *name);
struct kv_cq *kv_find_cq(const char *name);
struct kv_qp *kv_find_qp(const char *name);
struct kv_listener *kv_find_listener(const char *name);
bool kv_name_taken(const char *name);
int kv_check_name(struct hil_cmd *cmd, const char *name);

int kv_qp_params_parse(struct hil_cmd *cmd, struct kv_qp_params *p);
struct kv_qp *kv_qp_alloc(struct hil_cmd *cmd, const struct kv_qp_params *p,
			  struct ib_qp_init_attr *attr);
void kv_qp_created(struct kv_qp *q, struct ib_qp *ibqp, struct rdma_cm_id *id,
		   const struct ib_qp_init_attr *attr, u64 cmd_id);
void kv_qp_abandon(struct kv_qp *q);
void kv_qp_destroy(struct kv_qp *q, const char *why);
void kv_listener_destroy(struct kv_listener *l);
void kv_teardown_all(const char *why);

struct kv_ctx *kv_ctx_get(struct kv_pool *pool);
void kv_qp_mrs_free(struct kv_qp *q);

/* ---- operations: kv_op_<name> for each entry of guest/common/commands.def ---- */
#define HIL_COMMAND(name, keys, about) int kv_op_##name(struct hil_cmd *cmd);
#include "commands.def"
#undef HIL_COMMAND

/* the completion handler of every WR the executor posts */
void kv_done(struct ib_cq *cq, struct ib_wc *wc);
const char *kv_wc_opcode_name(enum ib_wc_opcode op);
void kv_rec_wc(struct kv_rec *r, const struct ib_wc *wc);

/* the device's ops wrapped while a drain of q runs (kv_tap.c) */
void kv_tap_begin(const struct kv_qp *q, u64 call);
void kv_tap_end(void);
void kv_bench_done(struct kv_ctx *c, struct kv_cq *kcq, struct ib_wc *wc);
void kv_qp_event(struct ib_event *ev, void *context);
int kv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

#endif
