/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hil-uverbs: the userspace verbs executor. It reads the command language of the in-kernel
 * executor (guest/kverbs) and writes the same JSON-lines trace, through libibverbs and librdmacm,
 * so user QPs go through the device's rdma-core provider. Its parts:
 *   main.c    options, reading and checking the whole input (or, with -s, a line at a time as
 *             it comes), running it, exit status
 *   cmd.c     the operation table built from the command language (guest/common), what this
 *             executor refuses of it, sleep
 *   trace.c   JSON records on stdout, one a line, flushed as written
 *   obj.c     device, PD, CQ, QP (with buffers, MR and work request contexts), teardown
 *   cm.c      rdma_cm: the event channel, listen, connect (loopback pairs), disconnect
 *   post.c    posting, completions, poll, modify, query
 *   drain.c   the drain: what Linux's __ib_drain_sq/__ib_drain_rq do, with a timeout
 */
#ifndef HIL_UV_H
#define HIL_UV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cmdlang.h"

#define UV_VERSION 1
#define UV_MAX_OBJS 48
#define UV_REC_LEN 2048
#define UV_MAX_LINES 4096

/* ---- commands (cmd.c; the language is guest/common/commands.def and cmdlang.c) ---- */

/* checks a line as hil_parse does, then what this executor refuses (uv_refused and values) */
int uv_parse(const char *line, size_t len, struct hil_cmd *cmd, const char **why);
/* runs an accepted command's operation */
int uv_run(struct hil_cmd *cmd);

/* ---- trace (trace.c) ---- */

struct uv_rec {
	size_t len;
	bool trunc;
	char buf[UV_REC_LEN];
};

void uv_trace_init(void);
uint64_t uv_now_ns(void);
void uv_rec_begin(struct uv_rec *r, const char *ev);
void uv_rec_str(struct uv_rec *r, const char *key, const char *val);
void uv_rec_int(struct uv_rec *r, const char *key, int64_t val);
void uv_rec_uint(struct uv_rec *r, const char *key, uint64_t val);
void uv_rec_bool(struct uv_rec *r, const char *key, bool val);
void uv_rec_null(struct uv_rec *r, const char *key);
void uv_rec_printf(struct uv_rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* writes the record as one line on stdout and flushes it */
void uv_rec_commit(struct uv_rec *r);

/* ---- objects (obj.c) ---- */

enum uv_queue { UV_SQ = 0, UV_RQ = 1 };

enum uv_ctx_state { UV_CTX_FREE, UV_CTX_POSTED, UV_CTX_FAILED };

/* One posted work request; its index in the pool is the wr_id the device sees. */
struct uv_ctx {
	uint64_t wr_id;
	uint64_t call;
	uint32_t seq;
	uint32_t slot;
	uint32_t ncqe;
	uint8_t queue;
	uint8_t signaled;
	uint8_t state;
};

/* What a drain marker's completion said (drain.c waits for `seen`). */
struct uv_marker {
	bool posted;
	bool seen;
	uint64_t call;
	struct ibv_wc wc;
	uint64_t t_done;
};

/*
 * A QP's buffers and work request contexts. The contexts outlive the QP: completions of a
 * destroyed QP may still wait in a CQ, so its pool stays in the graveyard until teardown.
 */
struct uv_pool {
	struct uv_pool *next_dead;
	char name[HIL_NAME_LEN];
	uint32_t qp_num;
	uint32_t slot_len;
	uint32_t nslots[2];
	uint8_t *buf;
	struct ibv_mr *mr;
	struct uv_ctx *ctxs;
	uint32_t used;
	uint32_t cap;
	uint32_t max_wrs;
	/* WRs handed to ibv_post_* per queue (their seq numbers) */
	uint32_t posted[2];
	/* seq of the newest successful signaled SQ completion + 1 (older unsignaled ones are done) */
	uint32_t sq_done_upto;
	struct uv_marker marker[2];
};

struct uv_pd {
	bool in_use;
	char name[HIL_NAME_LEN];
	struct ibv_pd *pd;
	/* rkey=global: the QPs' buffers are registered for remote write and read */
	bool remote;
};

struct uv_cq {
	bool in_use;
	char name[HIL_NAME_LEN];
	struct ibv_cq *cq;
	uint32_t depth;
	/* completions traced on this CQ, and that count when the last poll command returned */
	uint64_t ncqe;
	uint64_t polled;
};

enum uv_cm_kind { UV_CM_PROBE, UV_CM_LISTEN, UV_CM_QP };

/* The context of an rdma_cm_id: the event pump looks at the kind first. */
struct uv_cmctx {
	enum uv_cm_kind kind;
	const char *name;
	uint64_t seen;
	int status;
};

struct uv_qp_params {
	char name[HIL_NAME_LEN];
	struct uv_pd *pd;
	struct uv_cq *scq;
	struct uv_cq *rcq;
	uint32_t sq;
	uint32_t rq;
	uint32_t sge;
	uint32_t inline_len;
	uint32_t slot_len;
	uint32_t max_wrs;
	bool sig_all;
};

struct uv_qp {
	struct uv_cmctx cm;
	bool in_use;
	char name[HIL_NAME_LEN];
	struct ibv_qp *qp;
	/* NULL for a QP made with ibv_create_qp (no connection manager) */
	struct rdma_cm_id *id;
	struct uv_pool *pool;
	struct uv_qp *peer;
	struct uv_pd *pd;
	struct uv_cq *scq;
	struct uv_cq *rcq;
	bool sig_all;
};

struct uv_listener {
	struct uv_cmctx cm;
	bool in_use;
	char name[HIL_NAME_LEN];
	struct rdma_cm_id *id;
	uint16_t port;
	uint32_t addr;
	struct uv_qp_params qp;
	/* a connection request not accepted yet */
	struct rdma_cm_id *pending;
};

struct uv_state {
	/* librdmacm's device contexts (rdma_get_devices), so QPs and rdma_cm ids share them */
	struct ibv_context **devs;
	struct ibv_context *ctx;
	struct rdma_event_channel *ch;
	struct uv_pd pds[UV_MAX_OBJS];
	struct uv_cq cqs[UV_MAX_OBJS];
	struct uv_qp qps[UV_MAX_OBJS];
	struct uv_listener listeners[UV_MAX_OBJS];
	struct uv_pool *graveyard;
	uint64_t calls;
	uint32_t max_wrs;
	/* the device's max_sge: bad=<i> gives a WR one SGE more */
	uint32_t max_sge;
	uint32_t drain_timeout_ms;
	/* a drain timed out: nothing more runs */
	bool hung;
};

extern struct uv_state uv;

struct uv_pd *uv_find_pd(const char *name);
struct uv_cq *uv_find_cq(const char *name);
struct uv_qp *uv_find_qp(const char *name);
struct uv_listener *uv_find_listener(const char *name);
int uv_check_name(struct hil_cmd *cmd, const char *name);
int uv_need_device(struct hil_cmd *cmd);

int uv_qp_params_parse(struct hil_cmd *cmd, struct uv_qp_params *p);
struct uv_qp *uv_qp_alloc(struct hil_cmd *cmd, const struct uv_qp_params *p,
			  struct ibv_qp_init_attr *attr);
void uv_qp_created(struct uv_qp *q, struct ibv_qp *ibqp, struct rdma_cm_id *id,
		   const struct ibv_qp_init_attr *attr, uint64_t cmd_id);
void uv_qp_abandon(struct uv_qp *q);
void uv_qp_destroy(struct uv_qp *q, const char *why);
void uv_listener_destroy(struct uv_listener *l);
void uv_teardown_all(const char *why);

struct uv_ctx *uv_ctx_get(struct uv_pool *pool, uint32_t *index);
uint8_t *uv_slot(struct uv_pool *pool, enum uv_queue q, uint32_t slot);
struct uv_pool *uv_pool_by_qpn(uint32_t qp_num);

/* ---- completions (post.c) ---- */

/* the wr_id of a drain marker: this bit (above any WR index, below 2^53 for JSON readers), then the queue */
#define UV_MARKER_WRID (1ULL << 52)

/* polls up to `budget` completions (0: what is there) and traces them; <0 on a poll error */
int uv_cq_reap(struct uv_cq *cq, int budget);
/* by: "drain" for a drain's own ERR transition, else NULL */
void uv_trace_modify(uint64_t call, const char *qp, const char *state, const char *by);
void uv_trace_modify_ret(uint64_t call, int rc);
int uv_modify_state(struct uv_qp *q, enum ibv_qp_state state, uint64_t *call, const char *by);
/* a QP state a provider that does not fill the field leaves behind (traced as "UNSET") */
#define UV_QPS_UNSET 0x7f
void uv_sleep_us(unsigned int us);

/*
 * ---- operations: uv_op_<name> for each entry of guest/common/commands.def (those this executor
 * refuses, uv_refused in cmd.c, are declared and never defined) ----
 */
#define HIL_COMMAND(name, keys, about) int uv_op_##name(struct hil_cmd *cmd);
#include "commands.def"
#undef HIL_COMMAND

/* cm.c: closes the event channel once no id is left */
void uv_cm_release(void);

#endif
