// SPDX-License-Identifier: GPL-2.0-only
/*
 * What ib_drain_qp/ib_drain_sq/ib_drain_rq do inside, seen from the device's side: while a drain
 * command runs, the device's modify_qp, post_send and post_recv (its ib_device_ops, through which
 * the core's ib_modify_qp/ib_post_send/ib_post_recv call the driver) are wrapped. The drain's ERR
 * transition is traced as modify/modify_ret (by "drain"); a WR whose ib_cqe is not one of this
 * executor's is the drain's marker: its post is traced as drain_marker, and its ib_cqe's done
 * callback is wrapped so that its completion is traced (drain_marker_cqe) in completion order,
 * among the cqe records of the executor's own WRs, before the core's done runs. The ops are
 * restored when the drain returns; a driver with its own drain_sq/drain_rq ops is not seen.
 */
#include <linux/kernel.h>

#include "kv.h"

struct kv_tap_marker {
	struct ib_cqe *cqe;
	void (*done)(struct ib_cq *cq, struct ib_wc *wc);
	u8 queue;
};

static struct {
	struct ib_device *dev;
	const struct hil_qp *q;
	u64 call;
	struct kv_tap_marker markers[2];
	int (*modify_qp)(struct ib_qp *qp, struct ib_qp_attr *attr, int mask, struct ib_udata *udata);
	int (*post_send)(struct ib_qp *qp, const struct ib_send_wr *wr, const struct ib_send_wr **bad);
	int (*post_recv)(struct ib_qp *qp, const struct ib_recv_wr *wr, const struct ib_recv_wr **bad);
} tap;

static const char *cq_name(const struct ib_cq *cq)
{
	int i;

	for (i = 0; i < HIL_MAX_OBJS; i++)
		if (hil.cqs[i].in_use && hil.cqs[i].cq == cq)
			return hil.cqs[i].name;
	return "?";
}

static bool drained_qp(const struct ib_qp *qp)
{
	return tap.q && tap.q->qp == qp;
}

static void marker_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_tap_marker *m = NULL;
	struct hil_wc w;
	int i;

	for (i = 0; i < ARRAY_SIZE(tap.markers); i++)
		if (tap.markers[i].cqe == wc->wr_cqe)
			m = &tap.markers[i];
	if (!m)
		return;
	hil_wc_read(&w, wc);
	hil_trace_marker_cqe(tap.call, cq_name(cq), tap.q ? tap.q->name : "?", m->queue, &w);
	/* the core's done (ib_drain_qp_done) wakes the drain: nothing here may touch m after it */
	m->done(cq, wc);
}

/* The marker's ib_cqe gets marker_done; returns false when it is one of this executor's WRs. */
static bool take_marker(struct ib_cqe *cqe, enum hil_queue queue)
{
	struct kv_tap_marker *m = &tap.markers[queue];

	if (!cqe || cqe->done == kv_done || cqe->done == marker_done)
		return false;
	m->cqe = cqe;
	m->done = cqe->done;
	m->queue = queue;
	cqe->done = marker_done;
	return true;
}

static void trace_marker(enum hil_queue queue, int rc, bool signaled)
{
	hil_trace_marker(tap.call, tap.q->name, queue, "kernel", -1, rc, signaled);
}

static int tap_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask, struct ib_udata *udata)
{
	u64 call;
	int rc;

	if (!drained_qp(qp) || !(mask & IB_QP_STATE))
		return tap.modify_qp(qp, attr, mask, udata);
	call = ++hil.calls;
	hil_trace_modify(call, tap.q->name, attr->qp_state, "drain");
	rc = tap.modify_qp(qp, attr, mask, udata);
	hil_trace_modify_ret(call, rc);
	return rc;
}

static int tap_post_send(struct ib_qp *qp, const struct ib_send_wr *wr, const struct ib_send_wr **bad)
{
	bool marker = drained_qp(qp) && wr && !wr->next && take_marker(wr->wr_cqe, HIL_SQ);
	int rc = tap.post_send(qp, wr, bad);

	if (marker) {
		if (rc)
			wr->wr_cqe->done = tap.markers[HIL_SQ].done;
		trace_marker(HIL_SQ, rc, wr->send_flags & IB_SEND_SIGNALED);
	}
	return rc;
}

static int tap_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr, const struct ib_recv_wr **bad)
{
	bool marker = drained_qp(qp) && wr && !wr->next && take_marker(wr->wr_cqe, HIL_RQ);
	int rc = tap.post_recv(qp, wr, bad);

	if (marker) {
		if (rc)
			wr->wr_cqe->done = tap.markers[HIL_RQ].done;
		trace_marker(HIL_RQ, rc, true);
	}
	return rc;
}

void kv_tap_begin(const struct hil_qp *q, u64 call)
{
	struct ib_device *dev = q->qp->device;

	memset(&tap, 0, sizeof(tap));
	tap.dev = dev;
	tap.q = q;
	tap.call = call;
	tap.modify_qp = dev->ops.modify_qp;
	tap.post_send = dev->ops.post_send;
	tap.post_recv = dev->ops.post_recv;
	if (tap.modify_qp)
		WRITE_ONCE(dev->ops.modify_qp, tap_modify_qp);
	if (tap.post_send)
		WRITE_ONCE(dev->ops.post_send, tap_post_send);
	if (tap.post_recv)
		WRITE_ONCE(dev->ops.post_recv, tap_post_recv);
}

void kv_tap_end(void)
{
	struct ib_device *dev = tap.dev;

	if (!dev)
		return;
	if (tap.modify_qp)
		WRITE_ONCE(dev->ops.modify_qp, tap.modify_qp);
	if (tap.post_send)
		WRITE_ONCE(dev->ops.post_send, tap.post_send);
	if (tap.post_recv)
		WRITE_ONCE(dev->ops.post_recv, tap.post_recv);
	tap.dev = NULL;
	tap.q = NULL;
}
