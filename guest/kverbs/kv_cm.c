// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's rdma_cm under the core's connections (guest/common/core_cm.c). The event handler
 * only records (hil_cm_event traces the event, remembers it on the id's context, and keeps a
 * listener's connection request) and wakes the worker; every object is made and destroyed by
 * the worker, which accepts a request under rdma_lock_handler.
 */
#include <linux/kernel.h>
#include <net/net_namespace.h>

#include "kv.h"

int kv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	/* non-zero: rdma_cm destroys the new id */
	return hil_cm_event(id->context, id, ev->event, ev->status) ? -EBUSY : 0;
}

int hil_port_cm_id(struct hil_cmctx *ctx, struct rdma_cm_id **id)
{
	struct rdma_cm_id *made = rdma_create_id(&init_net, kv_cm_handler, ctx, RDMA_PS_TCP,
						 IB_QPT_RC);

	if (IS_ERR(made))
		return PTR_ERR(made);
	*id = made;
	return 0;
}

void hil_port_cm_destroy_id(struct rdma_cm_id *id)
{
	rdma_destroy_id(id);
}

void hil_port_cm_refuse(struct rdma_cm_id *id)
{
	rdma_destroy_id(id);
}

int hil_port_cm_accept(struct rdma_cm_id *id, struct hil_qp *q, struct rdma_conn_param *param)
{
	int rc;

	rdma_lock_handler(id);
	id->context = &q->cm;
	rc = rdma_accept(id, param);
	rdma_unlock_handler(id);
	return rc;
}

void hil_port_cm_idle(void)
{
}

void hil_port_cm_wake(struct hil_cmctx *ctx)
{
	wake_up_all(&ctx->port.wq);
}

int hil_port_cm_wait(struct hil_cmctx *ctx, bool (*done)(struct hil_cmctx *ctx), u32 ms)
{
	wait_event_idle_timeout(ctx->port.wq, done(ctx), msecs_to_jiffies(ms));
	return 0;
}
