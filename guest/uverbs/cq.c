// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completions and QP states with libibverbs (guest/common/core_cq.c runs the commands): CQs are
 * polled with ibv_poll_cq by whichever command waits (poll, drain); a completion's wr_id is its
 * WR's index in the pool of the QP its qp_num names, or a drain marker's (drain.c).
 */
#include "uv.h"

#define UV_REAP_CHUNK 16

void uv_sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void hil_port_wc_read(struct hil_wc *w, const struct ibv_wc *wc)
{
	w->qp_num = wc->qp_num;
	w->has_imm = wc->wc_flags & IBV_WC_WITH_IMM;
	w->imm = ntohl(wc->imm_data);
}

/* A completion the executor cannot place: a QP it does not know, or a wr_id it never posted. */
static void stray(struct hil_cq *cq, const struct ibv_wc *wc, const char *qp)
{
	struct hil_rec r;
	struct hil_wc w;

	hil_wc_read(&w, wc);
	hil_rec_begin(&r, "cqe");
	hil_rec_str(&r, "cq", cq->name);
	hil_rec_str(&r, "qp", qp);
	hil_rec_str(&r, "queue", (wc->opcode & IBV_WC_RECV) ? "rq" : "sq");
	hil_rec_uint(&r, "wr_id", wc->wr_id);
	hil_rec_wc(&r, &w);
	hil_rec_uint(&r, "byte_len", wc->byte_len);
	hil_rec_uint(&r, "call", 0);
	hil_rec_commit(&r);
	hil_atomic_inc_return(&cq->ncqe);
}

static void handle_wc(struct hil_cq *cq, const struct ibv_wc *wc)
{
	struct hil_pool *pool = hil_pool_by_qpn(wc->qp_num);
	struct hil_wc w;

	if (!pool) {
		stray(cq, wc, "?");
		return;
	}
	hil_wc_read(&w, wc);
	if ((wc->wr_id & UV_MARKER_WRID) == UV_MARKER_WRID) {
		enum hil_queue q = (wc->wr_id & 1) ? HIL_RQ : HIL_SQ;
		struct uv_marker *m = &pool->port.marker[q];

		m->seen = true;
		hil_trace_marker_cqe(m->call, cq->name, pool->name, q, &w);
		return;
	}
	if (wc->wr_id >= pool->used) {
		stray(cq, wc, pool->name);
		return;
	}
	hil_complete(cq, hil_ctx_at(pool, (uint32_t)wc->wr_id), &w);
}

int uv_cq_reap(struct hil_cq *cq, int budget)
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

void hil_port_cq_wake(struct hil_cq *cq)
{
	(void)cq;
}

int hil_port_cq_poll(struct hil_cmd *cmd, struct hil_cq *cq, int start, uint32_t min,
		     uint32_t ms, uint32_t budget)
{
	uint64_t deadline = hil_now_ns() + (uint64_t)ms * 1000000;

	for (;;) {
		int n = uv_cq_reap(cq, (int)budget);

		if (n < 0)
			return hil_fail(cmd, n, "ibv_poll_cq failed");
		if (hil_atomic_read(&cq->ncqe) - start >= (int)min || hil_now_ns() > deadline)
			return 0;
		if (!n)
			uv_sleep_us(200);
	}
}

int hil_port_modify(struct hil_qp *q, int state)
{
	struct ibv_qp_attr attr = { .qp_state = (enum ibv_qp_state)state };

	return -ibv_modify_qp(q->qp, &attr, IBV_QP_STATE);
}

int hil_port_query(struct hil_qp *q, int *state, int *cur_state)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	/* a provider that does not fill a field leaves it at this value */
	attr.qp_state = (enum ibv_qp_state)HIL_QPS_UNSET;
	attr.cur_qp_state = (enum ibv_qp_state)HIL_QPS_UNSET;
	rc = -ibv_query_qp(q->qp, &attr, IBV_QP_STATE, &init);
	*state = (int)attr.qp_state;
	*cur_state = (int)attr.cur_qp_state;
	return rc;
}
