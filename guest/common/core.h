/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The executor core both executors share: the objects commands name (device, PDs, CQs, QPs with
 * their buffers and work request contexts, rdma_cm listeners), the checks of their arguments,
 * the rdma_cm bookkeeping, the posting and completion logic and the trace records. It is
 * compiled into each executor against that executor's verbs: hil_kverbs (guest/kverbs, a kernel
 * module: ib_* and the kernel's rdma_cm) and hil-uverbs (guest/uverbs: libibverbs, librdmacm).
 *
 * What differs between the two is the port: the verbs types the core stores (hil_verbs_pd, ...)
 * and the parts of an object only one side has (struct hil_*_port), in the executor's port
 * header, and the calls below marked "port", which each executor defines with its own verbs.
 * Where the kernel's and libibverbs'/librdmacm's structures and calls have the same names (a work
 * completion's status or byte_len, a QP's capabilities, rdma_conn_param, rdma_cm_event, the
 * rdma_cm calls but rdma_create_id), the core uses them itself.
 */
#ifndef HIL_CORE_H
#define HIL_CORE_H

#include "cmdlang.h"
#include "record.h"

enum hil_queue { HIL_SQ = 0, HIL_RQ = 1 };

#ifdef __KERNEL__
#include "../kverbs/kv_port.h"
#else
#include "../uverbs/uv_port.h"
#endif

#define HIL_MAX_OBJS 48
/* WR contexts are allocated this many at a time, as a QP posts */
#define HIL_CTX_CHUNK 512
/* a QP state a driver or provider that does not fill the field leaves (traced as "UNSET") */
#define HIL_QPS_UNSET 0x7f
/* what a port's destroy call gives when the verbs call returns nothing (no "rc" is traced) */
#define HIL_NO_RC 1

enum hil_ctx_state { HIL_CTX_FREE, HIL_CTX_POSTED, HIL_CTX_FAILED };

struct hil_pool;

/* One posted work request. */
struct hil_ctx {
	struct hil_ctx_port port;
	struct hil_pool *pool;
	/* its place in the pool (hil-uverbs hands it to the device as the WR's wr_id) */
	uint32_t index;
	uint64_t wr_id;
	uint64_t call;
	uint64_t t_post;
	uint32_t seq;
	uint32_t slot;
	uint8_t queue;
	uint8_t signaled;
	uint8_t state;
	/* a WR of the kernel executor's bench loop, never traced */
	uint8_t bench;
	hil_atomic_t ncqe;
};

/*
 * A QP's buffers (a slot of slot_len bytes per WQE of each queue) and its work request contexts.
 * It outlives the QP: a destroyed QP's pool waits in the graveyard until no CQ is left that could
 * still hand out a completion of one of its WRs.
 */
struct hil_pool {
	struct hil_pool *next_dead;
	char name[HIL_NAME_LEN];
	uint32_t qp_num;
	uint32_t slot_len;
	uint32_t nslots[2];
	struct hil_ctx **chunks;
	uint32_t nchunks;
	uint32_t maxchunks;
	uint32_t used;
	uint32_t max_wrs;
	/* WRs handed to the driver per queue (their seq numbers) */
	uint32_t posted[2];
	/* seq of the newest successful signaled SQ completion + 1 (older unsignaled ones are done) */
	uint32_t sq_done_upto;
	struct hil_pool_port port;
};

struct hil_pd {
	bool in_use;
	char name[HIL_NAME_LEN];
	hil_verbs_pd *pd;
	/* rkey=global: the peer may RDMA WRITE and READ the buffers of its QPs */
	bool global_rkey;
};

struct hil_cq {
	bool in_use;
	char name[HIL_NAME_LEN];
	hil_verbs_cq *cq;
	uint32_t depth;
	/* completions traced on this CQ, and that count when the last poll command returned */
	hil_atomic_t ncqe;
	int polled;
	struct hil_cq_port port;
};

enum hil_cm_kind { HIL_CM_PROBE, HIL_CM_LISTEN, HIL_CM_QP };

/* The context of an rdma_cm_id: the event handler looks at the kind first. */
struct hil_cmctx {
	enum hil_cm_kind kind;
	const char *name;
	/* the events seen (a bit per event), and the status of the last */
	unsigned long seen;
	int status;
	/* the events a wait waits for */
	unsigned long want;
	struct hil_cmctx_port port;
};

/* A QP's attributes as a command gives them (qp, connect, and the QP a listener accepts into). */
struct hil_qp_params {
	char name[HIL_NAME_LEN];
	struct hil_pd *pd;
	struct hil_cq *scq;
	struct hil_cq *rcq;
	uint32_t sq;
	uint32_t rq;
	uint32_t sge;
	uint32_t inline_len;
	uint32_t slot_len;
	uint32_t max_wrs;
	bool sig_all;
};

struct hil_qp {
	struct hil_cmctx cm;
	bool in_use;
	char name[HIL_NAME_LEN];
	hil_verbs_qp *qp;
	/* NULL for a QP made without the connection manager */
	struct rdma_cm_id *id;
	struct hil_pool *pool;
	struct hil_qp *peer;
	struct hil_pd *pd;
	struct hil_cq *scq;
	struct hil_cq *rcq;
	bool sig_all;
	uint32_t inline_len;
	struct hil_qp_port port;
};

struct hil_listener {
	struct hil_cmctx cm;
	bool in_use;
	char name[HIL_NAME_LEN];
	struct rdma_cm_id *id;
	uint16_t port;
	/* network order */
	uint32_t addr;
	struct hil_qp_params qp;
	hil_lock_t lock;
	/* a connection request not accepted yet */
	struct rdma_cm_id *pending;
};

/* The device commands run on, its name and the limits the core uses and traces. */
struct hil_device {
	hil_verbs_device *dev;
	char name[64];
	uint32_t node_type;
	uint32_t max_qp_wr;
	uint32_t max_cqe;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	/* -1: a limit this executor's verbs do not have */
	int64_t max_fast_reg_page_list_len;
};

struct hil_state {
	struct hil_device dev;
	struct hil_pd pds[HIL_MAX_OBJS];
	struct hil_cq cqs[HIL_MAX_OBJS];
	struct hil_qp qps[HIL_MAX_OBJS];
	struct hil_listener listeners[HIL_MAX_OBJS];
	struct hil_pool *graveyard;
	/* verbs calls traced so far: each call's records share its number */
	uint64_t calls;
	/* how many WRs a QP may post over its lifetime, unless its command says */
	uint32_t max_wrs;
	/* a drain did not end (hil-uverbs' drain timeout): nothing more runs */
	bool hung;
};

extern struct hil_state hil;

/* ---- operations: hil_op_<name> for each entry of commands.def ---- */
#define HIL_COMMAND(name, keys, about) int hil_op_##name(struct hil_cmd *cmd);
#include "commands.def"
#undef HIL_COMMAND

/* Runs an accepted command between its "cmd" and "done" records; its return code. */
int hil_execute(struct hil_cmd *cmd);

/* ---- objects (core_obj.c) ---- */

struct hil_pd *hil_find_pd(const char *name);
struct hil_cq *hil_find_cq(const char *name);
struct hil_qp *hil_find_qp(const char *name);
struct hil_listener *hil_find_listener(const char *name);
int hil_check_new_name(struct hil_cmd *cmd, const char *name);
/* the QP named by qp=, or NULL with the command failed */
struct hil_qp *hil_need_qp(struct hil_cmd *cmd);

int hil_qp_params_parse(struct hil_cmd *cmd, struct hil_qp_params *p);
/*
 * Takes a QP slot and makes its pool; fills `attr` for creating it. The QP is not in use until
 * hil_qp_created(); hil_qp_abandon() gives the slot back if creation fails.
 */
struct hil_qp *hil_qp_alloc(struct hil_cmd *cmd, const struct hil_qp_params *p,
			    hil_verbs_qp_init_attr *attr);
void hil_qp_created(struct hil_qp *q, struct rdma_cm_id *id, const hil_verbs_qp_init_attr *attr,
		    uint64_t cmd_id);
void hil_qp_abandon(struct hil_qp *q);
void hil_qp_destroy(struct hil_qp *q, const char *why);
void hil_listener_destroy(struct hil_listener *l);
/* everything, in dependency order */
void hil_teardown_all(const char *why);
/* frees the pools of destroyed QPs no completion can reach any more (all of them: force) */
void hil_graveyard_flush(bool force);

/* a fresh WR context, or NULL when the QP has posted max_wrs WRs */
struct hil_ctx *hil_ctx_get(struct hil_pool *pool);
struct hil_ctx *hil_ctx_at(struct hil_pool *pool, uint32_t index);
/* the pool of a QP, live or in the graveyard, by its number */
struct hil_pool *hil_pool_by_qpn(uint32_t qp_num);

/* ---- rdma_cm (core_cm.c) ---- */

/*
 * An rdma_cm event on an id with context `ctx`: traced, remembered on the context (the waits
 * below see it) and, for a listener's connection request, kept for the command that accepts it.
 * True when the id must be refused (a second request while one is pending).
 */
bool hil_cm_event(struct hil_cmctx *ctx, struct rdma_cm_id *id, unsigned int event, int status);

/* ---- completions (core_cq.c) ---- */

/* What the core reads of a work completion (hil_wc_read). */
struct hil_wc {
	uint32_t status;
	uint32_t opcode;
	uint32_t qp_num;
	uint32_t vendor_err;
	uint32_t byte_len;
	bool has_imm;
	uint32_t imm;
	bool has_inv;
	uint32_t inv;
};

void hil_wc_read(struct hil_wc *w, const hil_verbs_wc *wc);
/* A work completion's status, opcode (numbers and names), qp_num and vendor_err */
void hil_rec_wc(struct hil_rec *r, const struct hil_wc *wc);
/* The completion of WR `c` on `cq`: counted and traced ("cqe"). */
void hil_complete(struct hil_cq *cq, struct hil_ctx *c, const struct hil_wc *wc);
/* A drain marker's completion ("drain_marker_cqe"). */
void hil_trace_marker_cqe(uint64_t call, const char *cq, const char *qp, enum hil_queue queue,
			  const struct hil_wc *wc);
/* A drain's marker post ("drain_marker"): how "kernel" or "user"; wr_id < 0: none. */
void hil_trace_marker(uint64_t call, const char *qp, enum hil_queue queue, const char *how,
		      int64_t wr_id, int rc, bool signaled);
/* A QP's ERR transition or any other; by: "drain" for a drain's own, else NULL. */
void hil_trace_modify(uint64_t call, const char *qp, int state, const char *by);
void hil_trace_modify_ret(uint64_t call, int rc);
/* Traced modify of a QP's state (its call in *call): 0 or the verbs call's error. */
int hil_modify_state(struct hil_qp *q, int state, const char *by, uint64_t *call);

/* ---- posting (core_post.c) ---- */

/* How a send operation builds its WR: payload from the SQ slot, a peer's buffer, an MR. */
enum hil_send_kind { HIL_SK_SEND, HIL_SK_RDMA, HIL_SK_REG, HIL_SK_LINV, HIL_SK_SINV };

/* post_send's op=, in the order of the port's opcode table (HIL_SEND_OPCODES) */
enum hil_send_opcode {
	HIL_WR_SEND,
	HIL_WR_SEND_IMM,
	HIL_WR_WRITE,
	HIL_WR_WRITE_IMM,
	HIL_WR_READ,
	HIL_WR_REG_MR,
	HIL_WR_LOCAL_INV,
	HIL_WR_SEND_INV,
};

struct hil_send_op {
	const char *name;
	enum hil_send_opcode opcode;
	enum hil_send_kind kind;
	bool imm;
};

/* A post_send command's arguments. */
struct hil_send_req {
	const struct hil_send_op *op;
	struct hil_post_args a;
	uint32_t inl;
	uint32_t fill;
	uint32_t imm;
	bool imm_given;
	uint32_t mr;
	/* reg_mr: the access flags (HIL_ACCESS_*) and access= as given */
	int access;
	const char *access_text;
};

/*
 * ---- port: what each executor defines with its verbs ----
 *
 * Its port header (guest/kverbs/kv_port.h, guest/uverbs/uv_port.h) gives the verbs types
 * (hil_verbs_device, _pd, _cq, _qp, _qp_init_attr, _wc), the parts of an object only it has
 * (struct hil_ctx_port, hil_pool_port, hil_cq_port, hil_cmctx_port, hil_qp_port), its constants
 * (HIL_WC_SUCCESS, HIL_WC_RECV, HIL_ACCESS_LOCAL_WRITE, _REMOTE_READ, _REMOTE_WRITE).
 */

/* the parts of a work completion whose fields differ (qp_num, immediate data, invalidated key) */
void hil_port_wc_read(struct hil_wc *w, const hil_verbs_wc *wc);

/* the device named `name` becomes the device: 0 or -ENODEV */
int hil_port_device_find(const char *name);
/* the device an rdma_cm id bound to an address is on becomes the device: 0 or -ENODEV */
int hil_port_device_of_id(struct rdma_cm_id *id);
/* fills hil.dev's name and limits: 0 or the command failed */
int hil_port_device_open(struct hil_cmd *cmd);
void hil_port_device_close(void);
/* is the id on the device / the name of its device (NULL: none) */
bool hil_port_id_on_device(struct rdma_cm_id *id);
const char *hil_port_id_device_name(struct rdma_cm_id *id);

int hil_port_pd_alloc(struct hil_pd *pd);
/* the pd record's fields only this executor traces */
void hil_port_pd_fields(struct hil_rec *r, const struct hil_pd *pd);
/* 0 or an error, HIL_NO_RC when the verbs call returns none */
int hil_port_pd_dealloc(struct hil_pd *pd);
/* creates cq->cq: 0 or the command failed */
int hil_port_cq_create(struct hil_cmd *cmd, struct hil_cq *cq, const char *poll, uint32_t depth,
		       uint32_t vector);
int hil_port_cq_destroy(struct hil_cq *cq);
/* a completion was counted on the CQ: wakes whoever waits for it */
void hil_port_cq_wake(struct hil_cq *cq);
/*
 * Waits for `min` completions on the CQ counted since `start`, polling it up to `budget` a pass
 * (0: all), or `ms` milliseconds: 0, or the command failed polling.
 */
int hil_port_cq_poll(struct hil_cmd *cmd, struct hil_cq *cq, int start, uint32_t min,
		     uint32_t ms, uint32_t budget);

/* the pool's buffers: 0 or -ENOMEM */
int hil_port_pool_alloc(struct hil_pool *pool, const struct hil_qp_params *p);
/* the QP is destroyed, its pool goes to the graveyard */
void hil_port_pool_retire(struct hil_pool *pool);
void hil_port_pool_free(struct hil_pool *pool);
/* a slot's bytes for the CPU (NULL when the buffers are gone); sync: hand them to the device */
uint8_t *hil_port_slot(struct hil_pool *pool, enum hil_queue queue, uint32_t slot);
void hil_port_slot_sync(struct hil_pool *pool, enum hil_queue queue, uint32_t slot,
			bool for_device);

/* the executor's parts of a QP's creation attributes (type, signaling, event handler) */
void hil_port_qp_attr(struct hil_qp *q, hil_verbs_qp_init_attr *attr);
/* a QP without the connection manager: 0 or the command failed */
int hil_port_qp_create(struct hil_cmd *cmd, struct hil_qp *q, hil_verbs_qp_init_attr *attr);
/* destroys the QP (and its rdma_cm id): 0 or an error */
int hil_port_qp_destroy(struct hil_qp *q);
/* what goes with a QP that only this executor has (the kernel's fast-registration MRs) */
void hil_port_qp_release(struct hil_qp *q);
int hil_port_modify(struct hil_qp *q, int state);
/* the QP's state and current state (HIL_QPS_UNSET when not filled in): 0 or an error */
int hil_port_query(struct hil_qp *q, int *state, int *cur_state);
/* the drain itself: 0, or the command failed (hil.hung when it did not end) */
int hil_port_drain(struct hil_cmd *cmd, struct hil_qp *q, const char *which, uint64_t call);

/* an rdma_cm id with context `ctx` (RDMA_PS_TCP, RC): 0 or an error */
int hil_port_cm_id(struct hil_cmctx *ctx, struct rdma_cm_id **id);
void hil_port_cm_destroy_id(struct rdma_cm_id *id);
/* refuses a connection request and destroys its id */
void hil_port_cm_refuse(struct rdma_cm_id *id);
/* accepts a connection request into QP `q` (whose context the id takes): 0 or an error */
int hil_port_cm_accept(struct rdma_cm_id *id, struct hil_qp *q, struct rdma_conn_param *param);
/* no listener or QP with an id is left (hil-uverbs closes its event channel) */
void hil_port_cm_idle(void);
/* an event was remembered on ctx: wakes whoever waits for it */
void hil_port_cm_wake(struct hil_cmctx *ctx);
/*
 * Waits until done(ctx) or `ms` have passed; 0 (the caller looks at what it waited for), or an
 * error reading the events.
 */
int hil_port_cm_wait(struct hil_cmctx *ctx, bool (*done)(struct hil_cmctx *ctx), uint32_t ms);

/* A post call's WRs as the executor builds them. */
struct hil_port_batch;

/* room for n WRs of a queue, an invalid one carrying `nbad` SGEs: NULL without memory */
struct hil_port_batch *hil_port_batch_alloc(enum hil_queue queue, uint32_t n, uint32_t nbad);
void hil_port_batch_free(struct hil_port_batch *b);
/* how many SGEs bad=<i> gives a WR of the queue: more than the device takes */
uint32_t hil_port_bad_sges(enum hil_queue queue);
/* WR i of a send call, for context c (its payload filled already): 0 or the command failed */
int hil_port_send_wr(struct hil_cmd *cmd, struct hil_qp *q, const struct hil_send_req *s,
		     struct hil_port_batch *b, uint32_t i, struct hil_ctx *c);
void hil_port_recv_wr(struct hil_qp *q, uint32_t len, struct hil_port_batch *b, uint32_t i,
		      struct hil_ctx *c);
/* WR i gets the batch's nbad SGEs, copies of its own */
void hil_port_make_invalid(struct hil_port_batch *b, uint32_t i);
/* posts WRs 0..n-1 of the batch in one call: its return, *bad the index of *bad_wr or -1 */
int hil_port_post(struct hil_qp *q, enum hil_queue queue, struct hil_port_batch *b, uint32_t n,
		  int *bad);

/* the port's operations of commands.def the core does not run */
int hil_port_sleep(struct hil_cmd *cmd, uint32_t ms);
int hil_port_mark(struct hil_cmd *cmd, uint32_t id);

#endif
