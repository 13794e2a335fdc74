// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completions and QP states with kernel verbs (guest/common/core_cq.c runs the commands): every
 * WR's ib_cqe goes to kv_done, in the CQ's poll context; a direct CQ is polled by the poll
 * command (ib_process_cq_direct), the others are waited on; ib_modify_qp, ib_query_qp, and the
 * kernel's own drain (ib_drain_qp/sq/rq) watched by kv_tap.c.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>

#include "kv.h"

void hil_port_wc_read(struct hil_wc *w, const struct ib_wc *wc)
{
	w->qp_num = wc->qp ? wc->qp->qp_num : 0;
	w->has_imm = wc->wc_flags & IB_WC_WITH_IMM;
	w->imm = be32_to_cpu(wc->ex.imm_data);
	w->has_inv = wc->wc_flags & IB_WC_WITH_INVALIDATE;
	w->inv = wc->ex.invalidate_rkey;
}

void kv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hil_ctx *c = container_of(wc->wr_cqe, struct hil_ctx, port.cqe);
	struct hil_wc w;

	if (c->bench) {
		kv_bench_done(c, wc);
		return;
	}
	if (c->pool->port.destroyed_qp) {
		/* the QP's ib_qp is freed: wc->qp is not read, only compared (0: another QP) */
		struct ib_wc named = *wc;

		named.qp = NULL;
		hil_wc_read(&w, &named);
		w.qp_num = wc->qp == c->pool->port.destroyed_qp ? c->pool->qp_num : 0;
	} else {
		hil_wc_read(&w, wc);
	}
	hil_complete(cq->cq_context, c, &w);
}

void hil_port_cq_wake(struct hil_cq *cq)
{
	wake_up_all(&cq->port.wq);
}

static bool polled_enough(struct hil_cq *cq, int start, u32 min)
{
	return atomic_read(&cq->ncqe) - start >= (int)min;
}

int hil_port_cq_poll(struct hil_cmd *cmd, struct hil_cq *cq, int start, u32 min, u32 ms,
		     u32 budget)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);

	if (cq->port.poll != IB_POLL_DIRECT) {
		/* the CQ's handler runs in its own context */
		wait_event_idle_timeout(cq->port.wq, polled_enough(cq, start, min),
					msecs_to_jiffies(ms));
		return 0;
	}
	for (;;) {
		int n = ib_process_cq_direct(cq->cq, budget ? budget : -1);

		if (polled_enough(cq, start, min) || time_after(jiffies, deadline))
			return 0;
		if (!n)
			usleep_range(200, 500);
	}
}

void kv_qp_event(struct ib_event *ev, void *context)
{
	struct hil_pool *pool = context;
	struct hil_rec r;

	hil_rec_begin(&r, "async");
	hil_rec_str(&r, "qp", pool->name);
	hil_rec_str(&r, "event", ib_event_msg(ev->event));
	hil_rec_uint(&r, "code", ev->event);
	hil_rec_commit(&r);
}

int hil_port_modify(struct hil_qp *q, int state)
{
	struct ib_qp_attr attr = { .qp_state = state };

	return ib_modify_qp(q->qp, &attr, IB_QP_STATE);
}

int hil_port_query(struct hil_qp *q, int *state, int *cur_state)
{
	struct ib_qp_init_attr init = {};
	/* a driver that does not fill a field leaves it at this value */
	struct ib_qp_attr attr = { .qp_state = HIL_QPS_UNSET, .cur_qp_state = HIL_QPS_UNSET };
	int rc = ib_query_qp(q->qp, &attr, IB_QP_STATE, &init);

	*state = attr.qp_state;
	*cur_state = attr.cur_qp_state;
	return rc;
}

int hil_port_drain(struct hil_cmd *cmd, struct hil_qp *q, const char *which, u64 call)
{
	kv_tap_begin(q, call);
	if (!strcmp(which, "qp"))
		ib_drain_qp(q->qp);
	else if (!strcmp(which, "sq"))
		ib_drain_sq(q->qp);
	else
		ib_drain_rq(q->qp);
	kv_tap_end();
	return 0;
}
