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
 * completion, in poll order, from cq.c) or hang {call qp op which queue cq waited_ms};
 * drain_ret {call us state} once every marker completed, with the QP state queried after it
 * (the drain command and those records but the marker's and the hang: guest/common/core_cq.c).
 * "how":"user" tells this drain from the kernel's ib_drain_* (which hil_kverbs observes, "kernel").
 */
#include "uv.h"

static void trace_hang(uint64_t call, const struct hil_qp *q, const char *which,
		       enum hil_queue queue, const struct hil_cq *cq, uint64_t waited_ns)
{
	struct hil_rec r;

	hil_rec_begin(&r, "hang");
	hil_rec_uint(&r, "call", call);
	hil_rec_str(&r, "qp", q->name);
	hil_rec_str(&r, "op", "drain");
	hil_rec_str(&r, "which", which);
	hil_rec_str(&r, "queue", queue == HIL_SQ ? "sq" : "rq");
	hil_rec_str(&r, "cq", cq->name);
	hil_rec_uint(&r, "waited_ms", waited_ns / 1000000);
	hil_rec_commit(&r);
}

static int post_marker(struct hil_qp *q, enum hil_queue queue)
{
	uint64_t wr_id = UV_MARKER_WRID | queue;

	if (queue == HIL_SQ) {
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
static int wait_marker(struct hil_cq *cq, const struct uv_marker *m, uint64_t t0)
{
	uint64_t deadline = t0 + (uint64_t)uv.drain_timeout_ms * 1000000;

	while (!m->seen) {
		int n = uv_cq_reap(cq, 0);

		if (n < 0)
			return n;
		if (m->seen)
			break;
		if (!n) {
			if (hil_now_ns() > deadline)
				return -ETIMEDOUT;
			uv_sleep_us(100);
		}
	}
	return 0;
}

/* One queue: ERR, marker, wait. */
static int drain_queue(struct hil_cmd *cmd, struct hil_qp *q, const char *which, uint64_t call,
		       enum hil_queue queue)
{
	struct hil_cq *cq = queue == HIL_SQ ? q->scq : q->rcq;
	struct uv_marker *m = &q->pool->port.marker[queue];
	const char *qname = queue == HIL_SQ ? "sq" : "rq";
	uint64_t modify_call, t0;
	int rc;

	rc = hil_modify_state(q, IBV_QPS_ERR, "drain", &modify_call);
	if (rc)
		return hil_fail(cmd, rc, "drain %s: ibv_modify_qp to ERR failed", qname);
	m->seen = false;
	m->call = call;
	rc = post_marker(q, queue);
	hil_trace_marker(call, q->name, queue, "user", (int64_t)(UV_MARKER_WRID | queue), rc, true);
	if (rc)
		return hil_fail(cmd, rc, "drain %s: posting the marker failed", qname);
	t0 = hil_now_ns();
	rc = wait_marker(cq, m, t0);
	if (rc == -ETIMEDOUT) {
		trace_hang(call, q, which, queue, cq, hil_now_ns() - t0);
		hil.hung = true;
		return hil_fail(cmd, rc, "drain %s: the marker did not complete in %u ms (a hang)",
				qname, uv.drain_timeout_ms);
	}
	if (rc)
		return hil_fail(cmd, rc, "drain %s: ibv_poll_cq failed", qname);
	return 0;
}

int hil_port_drain(struct hil_cmd *cmd, struct hil_qp *q, const char *which, uint64_t call)
{
	int rc = 0;

	/* like ib_drain_qp: the send queue, then the receive queue, each whatever the other did */
	if (strcmp(which, "rq"))
		rc = drain_queue(cmd, q, which, call, HIL_SQ);
	if (strcmp(which, "sq") && !hil.hung) {
		int rq_rc = drain_queue(cmd, q, which, call, HIL_RQ);

		rc = rc ?: rq_rc;
	}
	return rc;
}
