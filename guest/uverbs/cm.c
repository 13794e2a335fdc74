// SPDX-License-Identifier: GPL-2.0-only
/*
 * librdmacm under the core's connections (guest/common/core_cm.c). One event channel serves every
 * id; the program has one thread, so events are read only while a command waits for one
 * (hil_port_cm_wait), each handed to the core (hil_cm_event: traced, remembered on its id's
 * context) and acknowledged at once.
 */
#include <poll.h>

#include "uv.h"

int hil_port_cm_id(struct hil_cmctx *ctx, struct rdma_cm_id **id)
{
	if (!uv.ch) {
		uv.ch = rdma_create_event_channel();
		if (!uv.ch)
			return -errno;
	}
	return HIL_CM_RC(rdma_create_id(uv.ch, id, ctx, RDMA_PS_TCP));
}

void hil_port_cm_destroy_id(struct rdma_cm_id *id)
{
	rdma_destroy_id(id);
}

void hil_port_cm_refuse(struct rdma_cm_id *id)
{
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

int hil_port_cm_accept(struct rdma_cm_id *id, struct hil_qp *q, struct rdma_conn_param *param)
{
	id->context = &q->cm;
	return HIL_CM_RC(rdma_accept(id, param));
}

void hil_port_cm_idle(void)
{
	for (int i = 0; i < HIL_MAX_OBJS; i++)
		if ((hil.qps[i].in_use && hil.qps[i].id) || hil.listeners[i].in_use)
			return;
	if (uv.ch)
		rdma_destroy_event_channel(uv.ch);
	uv.ch = NULL;
}

/* the one thread reads the events itself (hil_port_cm_wait) */
void hil_port_cm_wake(struct hil_cmctx *ctx)
{
	(void)ctx;
}

/* Hands one event to the core; a second pending request is refused (after the ack). */
static void dispatch(struct rdma_cm_event *ev)
{
	struct hil_cmctx *ctx = ev->id->context;
	bool refuse = ctx && hil_cm_event(ctx, ev->id, ev->event, ev->status);
	struct rdma_cm_id *id = ev->id;

	rdma_ack_cm_event(ev);
	if (refuse)
		hil_port_cm_refuse(id);
}

/* Reads and handles one event, waiting up to `ms`: 0, -ETIMEDOUT or -errno. */
static int pump(int ms)
{
	struct pollfd pfd = { .fd = uv.ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	do
		n = poll(&pfd, 1, ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(uv.ch, &ev))
		return -errno;
	dispatch(ev);
	return 0;
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = hil_now_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

int hil_port_cm_wait(struct hil_cmctx *ctx, bool (*done)(struct hil_cmctx *ctx), uint32_t ms)
{
	uint64_t deadline = hil_now_ns() + (uint64_t)ms * 1000000;

	while (!done(ctx) && uv.ch) {
		int rc = pump(remaining_ms(deadline));

		if (rc == -ETIMEDOUT && !remaining_ms(deadline))
			return 0;
		if (rc && rc != -ETIMEDOUT)
			return rc;
	}
	return 0;
}
