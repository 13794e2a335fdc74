// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completions and QP states, each verbs call traced before it is made and after it returns (a
 * driver may complete, flush or call back inside the call itself):
 *
 *   poll cq= [min=0] [timeout=1000] [budget=0]   until `min` completions arrived on the CQ since
 *       the previous poll command returned (at most `budget` polled a pass, 0: all)
 *   modify qp= state=RESET|INIT|RTR|RTS|SQD|SQE|ERR    modify_qp(QP_STATE)
 *   query qp=                                    query_qp(QP_STATE)
 *   drain qp= [which=qp|sq|rq]                   the drain (kernel: ib_drain_qp/sq/rq; user: what
 *                                                they do, guest/uverbs/drain.c)
 */
#include "core.h"
#include "names.h"
#include "payload.h"

void hil_wc_read(struct hil_wc *w, const hil_verbs_wc *wc)
{
	/* ib_wc and ibv_wc name these alike */
	memset(w, 0, sizeof(*w));
	w->status = wc->status;
	w->opcode = wc->opcode;
	w->vendor_err = wc->vendor_err;
	w->byte_len = wc->byte_len;
	hil_port_wc_read(w, wc);
}

void hil_rec_wc(struct hil_rec *r, const struct hil_wc *wc)
{
	hil_rec_uint(r, "status", wc->status);
	hil_rec_str(r, "status_name", hil_wc_status_name(wc->status));
	hil_rec_uint(r, "opcode", wc->opcode);
	hil_rec_str(r, "opcode_name", hil_wc_opcode_name(wc->opcode));
	hil_rec_uint(r, "qp_num", wc->qp_num);
	hil_rec_uint(r, "vendor_err", wc->vendor_err);
}

void hil_complete(struct hil_cq *cq, struct hil_ctx *c, const struct hil_wc *wc)
{
	struct hil_pool *pool = c->pool;
	int n = hil_atomic_inc_return(&c->ncqe);
	bool ok = wc->status == HIL_WC_SUCCESS;
	struct hil_rec r;

	if (c->queue == HIL_SQ && ok && c->seq + 1 > pool->sq_done_upto)
		pool->sq_done_upto = c->seq + 1;
	hil_rec_begin(&r, "cqe");
	hil_rec_str(&r, "cq", cq->name);
	hil_rec_str(&r, "qp", pool->name);
	hil_rec_str(&r, "queue", c->queue == HIL_SQ ? "sq" : "rq");
	hil_rec_uint(&r, "wr_id", c->wr_id);
	hil_rec_wc(&r, wc);
	hil_rec_uint(&r, "byte_len", wc->byte_len);
	hil_rec_uint(&r, "call", c->call);
	if (n > 1)
		hil_rec_int(&r, "n", n);
	if (wc->has_imm)
		hil_rec_uint(&r, "imm", wc->imm);
	if (wc->has_inv)
		hil_rec_uint(&r, "inv", wc->inv);
	if (ok && wc->opcode == HIL_WC_RECV && c->queue == HIL_RQ) {
		uint8_t *data = hil_port_slot(pool, HIL_RQ, c->slot);
		uint32_t len = wc->byte_len < pool->slot_len ? wc->byte_len : pool->slot_len;

		if (data) {
			hil_port_slot_sync(pool, HIL_RQ, c->slot, false);
			hil_rec_uint(&r, "sum", hil_fnv1a(data, len));
		}
	}
	hil_rec_commit(&r);
	hil_atomic_inc_return(&cq->ncqe);
	hil_port_cq_wake(cq);
}

void hil_trace_marker_cqe(uint64_t call, const char *cq, const char *qp, enum hil_queue queue,
			  const struct hil_wc *wc)
{
	struct hil_rec r;

	hil_rec_begin(&r, "drain_marker_cqe");
	hil_rec_uint(&r, "call", call);
	hil_rec_str(&r, "cq", cq);
	hil_rec_str(&r, "qp", qp);
	hil_rec_str(&r, "queue", queue == HIL_SQ ? "sq" : "rq");
	hil_rec_wc(&r, wc);
	hil_rec_commit(&r);
}

void hil_trace_marker(uint64_t call, const char *qp, enum hil_queue queue, const char *how,
		      int64_t wr_id, int rc, bool signaled)
{
	struct hil_rec r;

	hil_rec_begin(&r, "drain_marker");
	hil_rec_uint(&r, "call", call);
	hil_rec_str(&r, "qp", qp);
	hil_rec_str(&r, "queue", queue == HIL_SQ ? "sq" : "rq");
	hil_rec_str(&r, "how", how);
	if (wr_id >= 0)
		hil_rec_uint(&r, "wr_id", (uint64_t)wr_id);
	hil_rec_int(&r, "rc", rc);
	hil_rec_bool(&r, "signaled", signaled);
	hil_rec_commit(&r);
}

int hil_op_poll(struct hil_cmd *cmd)
{
	struct hil_cq *cq = hil_find_cq(hil_arg(cmd, "cq"));
	uint32_t min, ms, budget;
	struct hil_rec r;
	int start, got, rc;

	if (!cq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", hil_arg(cmd, "cq"));
	rc = hil_arg_u32(cmd, "min", 0, &min) ?: hil_arg_u32(cmd, "timeout", 1000, &ms) ?:
	     hil_arg_u32(cmd, "budget", 0, &budget);
	if (rc)
		return rc;
	if (budget > INT32_MAX)
		return hil_fail(cmd, -EINVAL, "budget=%u", budget);
	start = cq->polled;
	rc = hil_port_cq_poll(cmd, cq, start, min, ms, budget);
	cq->polled = hil_atomic_read(&cq->ncqe);
	got = cq->polled - start;
	hil_rec_begin(&r, "poll");
	hil_rec_str(&r, "cq", cq->name);
	hil_rec_int(&r, "got", got);
	hil_rec_uint(&r, "min", min);
	hil_rec_int(&r, "total", cq->polled);
	hil_rec_commit(&r);
	if (rc)
		return rc;
	if (got < 0 || (uint32_t)got < min)
		return hil_fail(cmd, -ETIMEDOUT, "%d of %u completions in %u ms", got, min, ms);
	return 0;
}

void hil_trace_modify(uint64_t call, const char *qp, int state, const char *by)
{
	struct hil_rec r;

	hil_rec_begin(&r, "modify");
	hil_rec_uint(&r, "call", call);
	hil_rec_str(&r, "qp", qp);
	hil_rec_str(&r, "state", hil_qp_state_name(state));
	if (by)
		hil_rec_str(&r, "by", by);
	hil_rec_commit(&r);
}

void hil_trace_modify_ret(uint64_t call, int rc)
{
	struct hil_rec r;

	hil_rec_begin(&r, "modify_ret");
	hil_rec_uint(&r, "call", call);
	hil_rec_int(&r, "rc", rc);
	hil_rec_commit(&r);
}

int hil_modify_state(struct hil_qp *q, int state, const char *by, uint64_t *call)
{
	int rc;

	*call = ++hil.calls;
	hil_trace_modify(*call, q->name, state, by);
	rc = hil_port_modify(q, state);
	hil_trace_modify_ret(*call, rc);
	return rc;
}

int hil_op_modify(struct hil_cmd *cmd)
{
	struct hil_qp *q = hil_need_qp(cmd);
	uint64_t call;
	int rc, state;

	if (!q)
		return -ENOENT;
	if (hil_qp_state_parse(hil_arg(cmd, "state"), &state))
		return hil_fail(cmd, -EINVAL, "state=%s", hil_arg(cmd, "state"));
	rc = hil_modify_state(q, state, NULL, &call);
	if (rc)
		hil_fail(cmd, rc, HIL_VERB("modify_qp") " to %s failed", hil_qp_state_name(state));
	return rc;
}

static const char *state_name(int state)
{
	return state == HIL_QPS_UNSET ? "UNSET" : hil_qp_state_name(state);
}

int hil_op_query(struct hil_cmd *cmd)
{
	struct hil_qp *q = hil_need_qp(cmd);
	int rc, state, cur_state;
	struct hil_rec r;

	if (!q)
		return -ENOENT;
	rc = hil_port_query(q, &state, &cur_state);
	hil_rec_begin(&r, "query");
	hil_rec_str(&r, "qp", q->name);
	hil_rec_int(&r, "rc", rc);
	if (!rc) {
		hil_rec_str(&r, "state", state_name(state));
		hil_rec_str(&r, "cur_state", state_name(cur_state));
	}
	hil_rec_commit(&r);
	if (rc)
		hil_fail(cmd, rc, HIL_VERB("query_qp") " failed");
	return rc;
}

int hil_op_drain(struct hil_cmd *cmd)
{
	const char *which = hil_arg(cmd, "which") ?: "qp";
	struct hil_qp *q = hil_need_qp(cmd);
	int rc, qrc, state, cur_state;
	uint64_t call, t0, us;
	struct hil_rec r;

	if (!q)
		return -ENOENT;
	if (strcmp(which, "qp") && strcmp(which, "sq") && strcmp(which, "rq"))
		return hil_fail(cmd, -EINVAL, "which=%s: qp, sq or rq", which);
	call = ++hil.calls;
	hil_rec_begin(&r, "drain");
	hil_rec_uint(&r, "call", call);
	hil_rec_str(&r, "qp", q->name);
	hil_rec_str(&r, "which", which);
	hil_rec_commit(&r);
	t0 = hil_now_ns();
	rc = hil_port_drain(cmd, q, which, call);
	if (hil.hung)
		return rc;
	us = (hil_now_ns() - t0) / 1000;
	/* the state the drain left, as the driver reports it (not assumed) */
	qrc = hil_port_query(q, &state, &cur_state);
	hil_rec_begin(&r, "drain_ret");
	hil_rec_uint(&r, "call", call);
	hil_rec_uint(&r, "us", us);
	if (!qrc)
		hil_rec_str(&r, "state", state_name(state));
	hil_rec_commit(&r);
	return rc;
}
