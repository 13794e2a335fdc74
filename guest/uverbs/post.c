// SPDX-License-Identifier: GPL-2.0-only
/*
 * Work requests and completions, each verbs call traced before it is made and after it returns
 * (a provider may complete or flush inside the call itself):
 *
 *   post_send qp= wr_id=<first> [op=send|send_imm|write|write_imm|read|send_inv] [count=1]
 *             [len=64] [batch=count] [signal=all|none|last|<n>] [inline=0|1] [fill=1]
 *             [imm=<u32>] [bad=<i>]
 *       count WRs with wr_ids first, first+1, ...; `batch` of them chained per ibv_post_send;
 *       signal=last signals the last WR of each call, <n> every n-th WR of the command.
 *       SEND payloads are the pattern of hil_fill_pattern(wr_id); WRITE goes to the peer's
 *       receive buffer of the same index, READ reads the peer's send buffer (both PDs
 *       rkey=global, the peer's MR rkey)
 *       send_inv: IBV_WR_SEND_WITH_INV of the peer QP's buffer MR (reg_mr and local_inv are
 *       refused when the input is checked: cmd.c). bad=<i>: WR i of each call has 64 SGEs
 *       (more than the device takes), which the provider must refuse (a partial post).
 *   post_recv qp= wr_id=<first> [count=1] [len=buf] [batch=count] [bad=<i>]
 *   poll cq= [min=0] [timeout=1000] [budget=0]   ibv_poll_cq until `min` completions arrived on
 *       the CQ since the previous poll command returned (at most `budget` a pass, 0: all)
 *   modify qp= state=RESET|INIT|RTR|RTS|SQD|SQE|ERR    ibv_modify_qp(IBV_QP_STATE)
 *   query qp=                                    ibv_query_qp(IBV_QP_STATE)
 *
 * The device sees a WR's index in its QP's pool as its wr_id; a completion is traced with the
 * scenario's wr_id. Drain markers (drain.c) have wr_ids of their own and their own record.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "names.h"
#include "payload.h"
#include "uv.h"

#define HIL_MAX_BATCH 1024
#define UV_REAP_CHUNK 16

static const char *wc_opcode_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND:
		return "SEND";
	case IBV_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WC_RDMA_READ:
		return "RDMA_READ";
	case IBV_WC_COMP_SWAP:
		return "COMP_SWAP";
	case IBV_WC_FETCH_ADD:
		return "FETCH_ADD";
	case IBV_WC_LOCAL_INV:
		return "LOCAL_INV";
	case IBV_WC_BIND_MW:
		return "BIND_MW";
	case IBV_WC_RECV:
		return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	default:
		return "OTHER";
	}
}

void uv_sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- completions ---- */

static void rec_wc(struct uv_rec *r, const struct ibv_wc *wc)
{
	uv_rec_uint(r, "status", wc->status);
	uv_rec_str(r, "status_name", hil_wc_status_name(wc->status));
	uv_rec_uint(r, "opcode", wc->opcode);
	uv_rec_str(r, "opcode_name", wc_opcode_name(wc->opcode));
	uv_rec_uint(r, "qp_num", wc->qp_num);
	uv_rec_uint(r, "vendor_err", wc->vendor_err);
}

static void marker_done(struct uv_cq *cq, struct uv_pool *pool, const struct ibv_wc *wc)
{
	enum uv_queue q = (wc->wr_id & 1) ? UV_RQ : UV_SQ;
	struct uv_marker *m = &pool->marker[q];
	struct uv_rec r;

	m->seen = true;
	m->wc = *wc;
	m->t_done = uv_now_ns();
	uv_rec_begin(&r, "drain_marker_cqe");
	uv_rec_uint(&r, "call", m->call);
	uv_rec_str(&r, "cq", cq->name);
	uv_rec_str(&r, "qp", pool->name);
	uv_rec_str(&r, "queue", q == UV_SQ ? "sq" : "rq");
	rec_wc(&r, wc);
	uv_rec_commit(&r);
}

/* A completion the executor cannot place: a QP it does not know, or a wr_id it never posted. */
static void stray(struct uv_cq *cq, const struct ibv_wc *wc, const char *qp)
{
	struct uv_rec r;

	uv_rec_begin(&r, "cqe");
	uv_rec_str(&r, "cq", cq->name);
	uv_rec_str(&r, "qp", qp);
	uv_rec_str(&r, "queue", (wc->opcode & IBV_WC_RECV) ? "rq" : "sq");
	uv_rec_uint(&r, "wr_id", wc->wr_id);
	rec_wc(&r, wc);
	uv_rec_uint(&r, "byte_len", wc->byte_len);
	uv_rec_uint(&r, "call", 0);
	uv_rec_commit(&r);
	cq->ncqe++;
}

static void handle_wc(struct uv_cq *cq, const struct ibv_wc *wc)
{
	struct uv_pool *pool = uv_pool_by_qpn(wc->qp_num);
	struct uv_ctx *c;
	struct uv_rec r;

	if (!pool) {
		stray(cq, wc, "?");
		return;
	}
	if ((wc->wr_id & UV_MARKER_WRID) == UV_MARKER_WRID) {
		marker_done(cq, pool, wc);
		return;
	}
	if (wc->wr_id >= pool->used) {
		stray(cq, wc, pool->name);
		return;
	}
	c = &pool->ctxs[wc->wr_id];
	c->ncqe++;
	if (c->queue == UV_SQ && wc->status == IBV_WC_SUCCESS && c->seq + 1 > pool->sq_done_upto)
		pool->sq_done_upto = c->seq + 1;

	uv_rec_begin(&r, "cqe");
	uv_rec_str(&r, "cq", cq->name);
	uv_rec_str(&r, "qp", pool->name);
	uv_rec_str(&r, "queue", c->queue == UV_SQ ? "sq" : "rq");
	uv_rec_uint(&r, "wr_id", c->wr_id);
	rec_wc(&r, wc);
	uv_rec_uint(&r, "byte_len", wc->byte_len);
	uv_rec_uint(&r, "call", c->call);
	if (c->ncqe > 1)
		uv_rec_int(&r, "n", c->ncqe);
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		uv_rec_uint(&r, "imm", ntohl(wc->imm_data));
	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV && c->queue == UV_RQ &&
	    pool->buf) {
		uint32_t len = wc->byte_len < pool->slot_len ? wc->byte_len : pool->slot_len;

		uv_rec_uint(&r, "sum", hil_fnv1a(uv_slot(pool, UV_RQ, c->slot), len));
	}
	uv_rec_commit(&r);
	cq->ncqe++;
}

int uv_cq_reap(struct uv_cq *cq, int budget)
{
	struct ibv_wc wc[UV_REAP_CHUNK];
	int total = 0;

	for (;;) {
		int want = UV_REAP_CHUNK;
		int n;

		if (budget && budget - total < want)
			want = budget - total;
		if (want <= 0)
			break;
		n = ibv_poll_cq(cq->cq, want, wc);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			handle_wc(cq, &wc[i]);
		total += n;
		if (n < want)
			break;
	}
	return total;
}

/* ---- posting ---- */

static struct uv_qp *need_qp(struct hil_cmd *cmd)
{
	struct uv_qp *q = uv_find_qp(hil_arg(cmd, "qp"));

	if (!q)
		hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	return q;
}

static void trace_post(uint64_t call, struct uv_qp *q, const char *queue, const char *op,
		       const struct hil_post_args *a, uint64_t first, uint32_t index, uint32_t n,
		       uint32_t invalid)
{
	struct uv_rec r;

	uv_rec_begin(&r, "post");
	uv_rec_uint(&r, "call", call);
	uv_rec_str(&r, "qp", q->name);
	uv_rec_str(&r, "queue", queue);
	uv_rec_str(&r, "op", op);
	uv_rec_uint(&r, "wr_id", first);
	uv_rec_uint(&r, "count", n);
	uv_rec_uint(&r, "index", index);
	uv_rec_uint(&r, "len", a->len);
	if (a->signal_text)
		uv_rec_str(&r, "signal", a->signal_text);
	if (invalid < n)
		uv_rec_uint(&r, "invalid", invalid);
	uv_rec_commit(&r);
}

/* Marks the WRs from the bad one on as not posted; traces the call's return. */
static void post_ret(uint64_t call, int rc, int bad_index, struct uv_ctx **ctxs, uint32_t n)
{
	struct uv_rec r;

	if (rc) {
		/* without a bad_wr nothing is known to be posted */
		for (uint32_t i = bad_index < 0 ? 0 : (uint32_t)bad_index; i < n; i++)
			ctxs[i]->state = UV_CTX_FAILED;
	}
	uv_rec_begin(&r, "post_ret");
	uv_rec_uint(&r, "call", call);
	uv_rec_int(&r, "rc", rc);
	/* a provider may hand back *bad_wr and still return 0 (libsiw does): keep the evidence */
	if (bad_index >= 0)
		uv_rec_int(&r, "bad", bad_index);
	else
		uv_rec_null(&r, "bad");
	uv_rec_commit(&r);
}

/* Takes a context for WR `wr_id` of a call; NULL when the QP has posted max_wrs WRs. */
static struct uv_ctx *take_ctx(struct uv_pool *pool, enum uv_queue queue, uint64_t wr_id,
			       uint64_t call, uint32_t *index)
{
	struct uv_ctx *c = uv_ctx_get(pool, index);

	if (!c)
		return NULL;
	c->wr_id = wr_id;
	c->call = call;
	c->queue = (uint8_t)queue;
	c->seq = pool->posted[queue]++;
	c->slot = c->seq % pool->nslots[queue];
	c->signaled = 1;
	c->state = UV_CTX_POSTED;
	return c;
}

struct uv_send_op {
	const char *name;
	enum ibv_wr_opcode opcode;
	bool rdma;
	bool imm;
	/* SEND_WITH_INV: the receiver invalidates the peer QP's buffer MR */
	bool inv;
};

static const struct uv_send_op send_ops[] = {
	{ "send", IBV_WR_SEND, false, false, false },
	{ "send_imm", IBV_WR_SEND_WITH_IMM, false, true, false },
	{ "write", IBV_WR_RDMA_WRITE, true, false, false },
	{ "write_imm", IBV_WR_RDMA_WRITE_WITH_IMM, true, true, false },
	{ "read", IBV_WR_RDMA_READ, true, false, false },
	{ "send_inv", IBV_WR_SEND_WITH_INV, false, false, true },
};

/*
 * bad=<i>: WR i of a call gets UV_BAD_SGES SGEs. ibv_device_attr.max_sge is the lesser of the
 * send and receive limits (erdma: 1, while its provider takes 6 SGEs on a send), so max_sge+1
 * can be a valid WR; 64 is more than erdma's or siw's limit on either queue (6).
 */
#define UV_BAD_SGES 64

struct uv_send_batch {
	struct ibv_send_wr wrs[HIL_MAX_BATCH];
	struct ibv_sge sges[HIL_MAX_BATCH];
	struct uv_ctx *ctxs[HIL_MAX_BATCH];
	struct ibv_sge bad_sges[UV_BAD_SGES];
};

struct uv_send_req {
	const struct uv_send_op *op;
	struct hil_post_args a;
	uint32_t inl;
	uint32_t fill;
	uint32_t imm;
	bool imm_given;
	/* bad=: the index in each call of the WR made invalid, UINT32_MAX: none */
	uint32_t bad_at;
};

/* Makes `wr` carry UV_BAD_SGES SGEs, copies of its own first SGE. */
static void make_invalid(struct ibv_sge *bad_sges, const struct ibv_sge *like, int *num_sge,
			 struct ibv_sge **sg_list)
{
	uint32_t n = UV_BAD_SGES;

	for (uint32_t j = 0; j < n; j++)
		bad_sges[j] = *like;
	*num_sge = (int)n;
	*sg_list = bad_sges;
}

static void fill_send_wr(struct uv_qp *q, const struct uv_send_req *s, struct uv_ctx *c,
			 uint32_t index, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	struct uv_pool *pool = q->pool;
	uint8_t *slot = uv_slot(pool, UV_SQ, c->slot);

	if (s->fill && s->op->opcode != IBV_WR_RDMA_READ)
		hil_fill_pattern(slot, s->a.len, c->wr_id);
	sge->addr = (uintptr_t)slot;
	sge->length = s->a.len;
	sge->lkey = pool->mr->lkey;
	wr->wr_id = index;
	wr->opcode = s->op->opcode;
	wr->sg_list = s->a.len ? sge : NULL;
	wr->num_sge = s->a.len ? 1 : 0;
	wr->send_flags = (c->signaled ? IBV_SEND_SIGNALED : 0) | (s->inl ? IBV_SEND_INLINE : 0);
	if (s->op->imm)
		wr->imm_data = htonl(s->imm_given ? s->imm : (uint32_t)c->wr_id);
	if (s->op->inv)
		wr->invalidate_rkey = q->peer->pool->mr->rkey;
	if (s->op->rdma) {
		struct uv_pool *pp = q->peer->pool;
		enum uv_queue pq = s->op->opcode == IBV_WR_RDMA_READ ? UV_SQ : UV_RQ;

		wr->wr.rdma.remote_addr = (uintptr_t)uv_slot(pp, pq, c->seq);
		wr->wr.rdma.rkey = pp->mr->rkey;
	}
}

/* One ibv_post_send of n WRs from `done` on. */
static int send_call(struct hil_cmd *cmd, struct uv_qp *q, const struct uv_send_req *s,
		     struct uv_send_batch *b, uint32_t done, uint32_t n)
{
	struct ibv_send_wr *bad = NULL;
	uint64_t call = ++uv.calls;
	int bad_index = -1, rc;

	memset(b->wrs, 0, n * sizeof(b->wrs[0]));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t index;
		struct uv_ctx *c = take_ctx(q->pool, UV_SQ, s->a.wr_id + done + i, call, &index);

		if (!c) {
			for (uint32_t j = 0; j < i; j++)
				b->ctxs[j]->state = UV_CTX_FAILED;
			return hil_fail(cmd, -ENOSPC, "QP %s has posted max_wrs WRs", q->name);
		}
		b->ctxs[i] = c;
		c->signaled = hil_signaled(&s->a, done + i, i == n - 1);
		fill_send_wr(q, s, c, index, &b->wrs[i], &b->sges[i]);
		if (i == s->bad_at)
			make_invalid(b->bad_sges, &b->sges[i], &b->wrs[i].num_sge, &b->wrs[i].sg_list);
		if (i)
			b->wrs[i - 1].next = &b->wrs[i];
	}
	trace_post(call, q, "sq", s->op->name, &s->a, s->a.wr_id + done, done, n, s->bad_at);
	rc = -ibv_post_send(q->qp, &b->wrs[0], &bad);
	for (uint32_t i = 0; bad && i < n; i++)
		if (&b->wrs[i] == bad)
			bad_index = (int)i;
	post_ret(call, rc, bad_index, b->ctxs, n);
	if (rc)
		hil_fail(cmd, rc, "ibv_post_send failed");
	return rc;
}

static int bad_arg(struct hil_cmd *cmd, uint32_t *bad_at)
{
	int rc = hil_arg_u32(cmd, "bad", UINT32_MAX, bad_at);

	if (rc)
		return rc;
	if (*bad_at != UINT32_MAX && uv.max_sge >= UV_BAD_SGES)
		return hil_fail(cmd, -EINVAL, "bad=: the device's max_sge %u is not below %d",
				uv.max_sge, UV_BAD_SGES);
	return 0;
}

static int send_request(struct hil_cmd *cmd, struct uv_qp *q, struct uv_send_req *s)
{
	const char *opname = hil_arg(cmd, "op") ?: "send";
	uint32_t def_len = q->pool->slot_len < 64 ? q->pool->slot_len : 64;

	s->op = NULL;
	for (size_t i = 0; i < sizeof(send_ops) / sizeof(send_ops[0]); i++)
		if (!strcmp(send_ops[i].name, opname))
			s->op = &send_ops[i];
	if (!s->op)
		return hil_fail(cmd, -EINVAL,
				"op=%s: send, send_imm, write, write_imm, read or send_inv", opname);
	s->imm_given = hil_arg(cmd, "imm") != NULL;
	return hil_post_args(cmd, q->pool->slot_len, def_len, &s->a) ?:
	       hil_arg_u32(cmd, "inline", 0, &s->inl) ?: hil_arg_u32(cmd, "fill", 1, &s->fill) ?:
	       hil_arg_u32(cmd, "imm", 0, &s->imm) ?: bad_arg(cmd, &s->bad_at);
}

int uv_op_post_send(struct hil_cmd *cmd)
{
	struct uv_qp *q = need_qp(cmd);
	struct uv_send_batch *b;
	struct uv_send_req s;
	int rc;

	if (!q)
		return -ENOENT;
	rc = send_request(cmd, q, &s);
	if (rc)
		return rc;
	if (s.op->rdma && (!q->peer || !q->pd->remote || !q->peer->pd->remote))
		return hil_fail(cmd, -EINVAL, "op=%s needs a connected local peer and pd rkey=global",
				s.op->name);
	if (s.op->inv && !q->peer)
		return hil_fail(cmd, -EINVAL, "op=send_inv needs a connected local peer (its MR)");
	b = malloc(sizeof(*b));
	if (!b)
		return hil_fail(cmd, -ENOMEM, "no memory for %u WRs", s.a.batch);
	/* with bad= every call runs (each has its invalid WR); otherwise the first failure stops */
	for (uint32_t done = 0; done < s.a.count && (!rc || s.bad_at != UINT32_MAX);
	     done += s.a.batch) {
		uint32_t n = s.a.count - done < s.a.batch ? s.a.count - done : s.a.batch;
		int call_rc = send_call(cmd, q, &s, b, done, n);

		if (!rc)
			rc = call_rc;
		if (call_rc == -ENOSPC)
			break;
	}
	free(b);
	return rc;
}

struct uv_recv_batch {
	struct ibv_recv_wr wrs[HIL_MAX_BATCH];
	struct ibv_sge sges[HIL_MAX_BATCH];
	struct uv_ctx *ctxs[HIL_MAX_BATCH];
	struct ibv_sge bad_sges[UV_BAD_SGES];
};

static int recv_call(struct hil_cmd *cmd, struct uv_qp *q, const struct hil_post_args *a,
		     struct uv_recv_batch *b, uint32_t done, uint32_t n, uint32_t bad_at)
{
	struct ibv_recv_wr *bad = NULL;
	uint64_t call = ++uv.calls;
	int bad_index = -1, rc;

	memset(b->wrs, 0, n * sizeof(b->wrs[0]));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t index;
		struct uv_ctx *c = take_ctx(q->pool, UV_RQ, a->wr_id + done + i, call, &index);

		if (!c) {
			for (uint32_t j = 0; j < i; j++)
				b->ctxs[j]->state = UV_CTX_FAILED;
			return hil_fail(cmd, -ENOSPC, "QP %s has posted max_wrs WRs", q->name);
		}
		b->ctxs[i] = c;
		b->sges[i].addr = (uintptr_t)uv_slot(q->pool, UV_RQ, c->slot);
		b->sges[i].length = a->len;
		b->sges[i].lkey = q->pool->mr->lkey;
		b->wrs[i].wr_id = index;
		b->wrs[i].sg_list = a->len ? &b->sges[i] : NULL;
		b->wrs[i].num_sge = a->len ? 1 : 0;
		if (i == bad_at)
			make_invalid(b->bad_sges, &b->sges[i], &b->wrs[i].num_sge, &b->wrs[i].sg_list);
		if (i)
			b->wrs[i - 1].next = &b->wrs[i];
	}
	trace_post(call, q, "rq", "recv", a, a->wr_id + done, done, n, bad_at);
	rc = -ibv_post_recv(q->qp, &b->wrs[0], &bad);
	for (uint32_t i = 0; bad && i < n; i++)
		if (&b->wrs[i] == bad)
			bad_index = (int)i;
	post_ret(call, rc, bad_index, b->ctxs, n);
	if (rc)
		hil_fail(cmd, rc, "ibv_post_recv failed");
	return rc;
}

int uv_op_post_recv(struct hil_cmd *cmd)
{
	struct uv_qp *q = need_qp(cmd);
	struct uv_recv_batch *b;
	struct hil_post_args a;
	uint32_t bad_at;
	int rc;

	if (!q)
		return -ENOENT;
	rc = hil_post_args(cmd, q->pool->slot_len, q->pool->slot_len, &a) ?: bad_arg(cmd, &bad_at);
	if (rc)
		return rc;
	a.signal_text = NULL;
	b = malloc(sizeof(*b));
	if (!b)
		return hil_fail(cmd, -ENOMEM, "no memory for %u WRs", a.batch);
	for (uint32_t done = 0; done < a.count && (!rc || bad_at != UINT32_MAX); done += a.batch) {
		uint32_t n = a.count - done < a.batch ? a.count - done : a.batch;
		int call_rc = recv_call(cmd, q, &a, b, done, n, bad_at);

		if (!rc)
			rc = call_rc;
		if (call_rc == -ENOSPC)
			break;
	}
	free(b);
	return rc;
}

/* ---- poll, modify, query ---- */

int uv_op_poll(struct hil_cmd *cmd)
{
	struct uv_cq *cq = uv_find_cq(hil_arg(cmd, "cq"));
	uint32_t min, ms, budget;
	uint64_t start, deadline, got;
	struct uv_rec r;
	int rc, n = 0;

	if (!cq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", hil_arg(cmd, "cq"));
	rc = hil_arg_u32(cmd, "min", 0, &min) ?: hil_arg_u32(cmd, "timeout", 1000, &ms) ?:
	     hil_arg_u32(cmd, "budget", 0, &budget);
	if (rc)
		return rc;
	if (budget > INT32_MAX)
		return hil_fail(cmd, -EINVAL, "budget=%u", budget);
	start = cq->polled;
	deadline = uv_now_ns() + (uint64_t)ms * 1000000;
	for (;;) {
		n = uv_cq_reap(cq, (int)budget);
		if (n < 0 || cq->ncqe - start >= min || uv_now_ns() > deadline)
			break;
		if (!n)
			uv_sleep_us(200);
	}
	cq->polled = cq->ncqe;
	got = cq->polled - start;
	uv_rec_begin(&r, "poll");
	uv_rec_str(&r, "cq", cq->name);
	uv_rec_int(&r, "got", (int64_t)got);
	uv_rec_uint(&r, "min", min);
	uv_rec_int(&r, "total", (int64_t)cq->polled);
	uv_rec_commit(&r);
	if (n < 0)
		return hil_fail(cmd, n, "ibv_poll_cq failed");
	if (got < min)
		return hil_fail(cmd, -ETIMEDOUT, "%llu of %u completions in %u ms",
				(unsigned long long)got, min, ms);
	return 0;
}

void uv_trace_modify(uint64_t call, const char *qp, const char *state, const char *by)
{
	struct uv_rec r;

	uv_rec_begin(&r, "modify");
	uv_rec_uint(&r, "call", call);
	uv_rec_str(&r, "qp", qp);
	uv_rec_str(&r, "state", state);
	if (by)
		uv_rec_str(&r, "by", by);
	uv_rec_commit(&r);
}

void uv_trace_modify_ret(uint64_t call, int rc)
{
	struct uv_rec r;

	uv_rec_begin(&r, "modify_ret");
	uv_rec_uint(&r, "call", call);
	uv_rec_int(&r, "rc", rc);
	uv_rec_commit(&r);
}

int uv_modify_state(struct uv_qp *q, enum ibv_qp_state state, uint64_t *call, const char *by)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int rc;

	*call = ++uv.calls;
	uv_trace_modify(*call, q->name, hil_qp_state_name(state), by);
	rc = -ibv_modify_qp(q->qp, &attr, IBV_QP_STATE);
	uv_trace_modify_ret(*call, rc);
	return rc;
}

int uv_op_modify(struct hil_cmd *cmd)
{
	struct uv_qp *q = need_qp(cmd);
	uint64_t call;
	int rc, state;

	if (!q)
		return -ENOENT;
	if (hil_qp_state_parse(hil_arg(cmd, "state"), &state))
		return hil_fail(cmd, -EINVAL, "state=%s", hil_arg(cmd, "state"));
	rc = uv_modify_state(q, (enum ibv_qp_state)state, &call, NULL);
	if (rc)
		hil_fail(cmd, rc, "ibv_modify_qp to %s failed", hil_qp_state_name(state));
	return rc;
}

int uv_op_query(struct hil_cmd *cmd)
{
	struct uv_qp *q = need_qp(cmd);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct uv_rec r;
	int rc;

	if (!q)
		return -ENOENT;
	memset(&attr, 0, sizeof(attr));
	/* a provider that does not fill a field leaves it at this value: traced as "UNSET" */
	attr.qp_state = (enum ibv_qp_state)UV_QPS_UNSET;
	attr.cur_qp_state = (enum ibv_qp_state)UV_QPS_UNSET;
	rc = -ibv_query_qp(q->qp, &attr, IBV_QP_STATE, &init);
	uv_rec_begin(&r, "query");
	uv_rec_str(&r, "qp", q->name);
	uv_rec_int(&r, "rc", rc);
	if (!rc) {
		uv_rec_str(&r, "state", attr.qp_state == UV_QPS_UNSET ?
						"UNSET" :
						hil_qp_state_name(attr.qp_state));
		uv_rec_str(&r, "cur_state", attr.cur_qp_state == UV_QPS_UNSET ?
						    "UNSET" :
						    hil_qp_state_name(attr.cur_qp_state));
	}
	uv_rec_commit(&r);
	if (rc)
		hil_fail(cmd, rc, "ibv_query_qp failed");
	return rc;
}
