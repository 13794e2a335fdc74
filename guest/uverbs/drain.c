// SPDX-License-Identifier: GPL-2.0-only
/*
 *   drain qp= [which=qp|sq|rq]
 *
 * libibverbs has no drain, so this does what Linux's ib_drain_qp (drivers/infiniband/core/
 * verbs.c: __ib_drain_sq, then __ib_drain_rq) does with a direct-polled CQ, for each queue:
 * move the QP to ERR (ibv_modify_qp), post a marker WR (SQ: a signaled RDMA WRITE without SGEs;
 * RQ: a receive without SGEs) and poll the queue's CQ until the marker completes, tracing every
 * other completion met on the way. The kernel waits for the marker forever; this waits the
 * drain timeout (-w), then writes a "hang" record and the run ends.
 *
 * Records: drain {call qp which}; per queue modify/modify_ret (the ERR transition, by:"drain"),
 * drain_marker {call qp queue how:"user" wr_id rc signaled} (its post), drain_marker_cqe (its
 * completion, in poll order, from post.c) or hang {call qp op which queue cq waited_ms};
 * drain_ret {call us state} once every marker completed, with the QP state queried after it.
 * "how":"user" tells this drain from the kernel's ib_drain_* (which hil_kverbs observes, "kernel").
 */
#include <errno.h>
#include <string.h>

#include "names.h"
#include "uv.h"

static void trace_marker(uint64_t call, const struct uv_qp *q, enum uv_queue queue, int rc)
{
	struct uv_rec r;

	uv_rec_begin(&r, "drain_marker");
	uv_rec_uint(&r, "call", call);
	uv_rec_str(&r, "qp", q->name);
	uv_rec_str(&r, "queue", queue == UV_SQ ? "sq" : "rq");
	uv_rec_str(&r, "how", "user");
	uv_rec_uint(&r, "wr_id", UV_MARKER_WRID | queue);
	uv_rec_int(&r, "rc", rc);
	uv_rec_bool(&r, "signaled", true);
	uv_rec_commit(&r);
}

static void trace_hang(uint64_t call, const struct uv_qp *q, const char *which,
		       enum uv_queue queue, const struct uv_cq *cq, uint64_t waited_ns)
{
	struct uv_rec r;

	uv_rec_begin(&r, "hang");
	uv_rec_uint(&r, "call", call);
	uv_rec_str(&r, "qp", q->name);
	uv_rec_str(&r, "op", "drain");
	uv_rec_str(&r, "which", which);
	uv_rec_str(&r, "queue", queue == UV_SQ ? "sq" : "rq");
	uv_rec_str(&r, "cq", cq->name);
	uv_rec_uint(&r, "waited_ms", waited_ns / 1000000);
	uv_rec_commit(&r);
}

static int post_marker(struct uv_qp *q, enum uv_queue queue)
{
	uint64_t wr_id = UV_MARKER_WRID | queue;

	if (queue == UV_SQ) {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = wr_id;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		return -ibv_post_send(q->qp, &wr, &bad);
	} else {
		struct ibv_recv_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = wr_id;
		return -ibv_post_recv(q->qp, &wr, &bad);
	}
}

/* Polls the CQ until the marker completed: 0, -ETIMEDOUT, or a poll error. */
static int wait_marker(struct uv_cq *cq, const struct uv_marker *m, uint64_t t0)
{
	uint64_t deadline = t0 + (uint64_t)uv.drain_timeout_ms * 1000000;

	while (!m->seen) {
		int n = uv_cq_reap(cq, 0);

		if (n < 0)
			return n;
		if (m->seen)
			break;
		if (!n) {
			if (uv_now_ns() > deadline)
				return -ETIMEDOUT;
			uv_sleep_us(100);
		}
	}
	return 0;
}

/* One queue: ERR, marker, wait. */
static int drain_queue(struct hil_cmd *cmd, struct uv_qp *q, const char *which, uint64_t call,
		       enum uv_queue queue)
{
	struct uv_cq *cq = queue == UV_SQ ? q->scq : q->rcq;
	struct uv_marker *m = &q->pool->marker[queue];
	const char *qname = queue == UV_SQ ? "sq" : "rq";
	uint64_t modify_call, t0;
	int rc;

	rc = uv_modify_state(q, IBV_QPS_ERR, &modify_call, "drain");
	if (rc)
		return hil_fail(cmd, rc, "drain %s: ibv_modify_qp to ERR failed", qname);
	memset(m, 0, sizeof(*m));
	m->call = call;
	rc = post_marker(q, queue);
	trace_marker(call, q, queue, rc);
	if (rc)
		return hil_fail(cmd, rc, "drain %s: posting the marker failed", qname);
	m->posted = true;
	t0 = uv_now_ns();
	rc = wait_marker(cq, m, t0);
	if (rc == -ETIMEDOUT) {
		trace_hang(call, q, which, queue, cq, uv_now_ns() - t0);
		uv.hung = true;
		return hil_fail(cmd, rc, "drain %s: the marker did not complete in %u ms (a hang)",
				qname, uv.drain_timeout_ms);
	}
	if (rc)
		return hil_fail(cmd, rc, "drain %s: ibv_poll_cq failed", qname);
	return 0;
}

int uv_op_drain(struct hil_cmd *cmd)
{
	const char *which = hil_arg(cmd, "which") ?: "qp";
	struct uv_qp *q = uv_find_qp(hil_arg(cmd, "qp"));
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct uv_rec r;
	uint64_t call, t0, us;
	int rc = 0, qrc;

	if (!q)
		return hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	if (strcmp(which, "qp") && strcmp(which, "sq") && strcmp(which, "rq"))
		return hil_fail(cmd, -EINVAL, "which=%s: qp, sq or rq", which);
	call = ++uv.calls;
	uv_rec_begin(&r, "drain");
	uv_rec_uint(&r, "call", call);
	uv_rec_str(&r, "qp", q->name);
	uv_rec_str(&r, "which", which);
	uv_rec_commit(&r);
	t0 = uv_now_ns();
	/* like ib_drain_qp: the send queue, then the receive queue, each whatever the other did */
	if (strcmp(which, "rq"))
		rc = drain_queue(cmd, q, which, call, UV_SQ);
	if (strcmp(which, "sq") && !uv.hung) {
		int rq_rc = drain_queue(cmd, q, which, call, UV_RQ);

		rc = rc ?: rq_rc;
	}
	if (uv.hung)
		return rc;
	us = (uv_now_ns() - t0) / 1000;
	/* the state the drain left, as the provider reports it (not assumed) */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = (enum ibv_qp_state)UV_QPS_UNSET;
	qrc = ibv_query_qp(q->qp, &attr, IBV_QP_STATE, &init);
	uv_rec_begin(&r, "drain_ret");
	uv_rec_uint(&r, "call", call);
	uv_rec_uint(&r, "us", us);
	if (!qrc)
		uv_rec_str(&r, "state", (int)attr.qp_state == UV_QPS_UNSET ? "UNSET" :
					 hil_qp_state_name(attr.qp_state));
	uv_rec_commit(&r);
	return rc;
}
