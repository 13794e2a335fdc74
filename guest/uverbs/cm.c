// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma_cm: listeners, connections (a loopback pair when the address and port are a local
 * listener's), disconnect. One event channel serves every id; the program has one thread, so
 * events are read only while a command waits for one (cm_wait), each traced, remembered on its
 * id's context and acknowledged at once.
 *
 *   listen name=L addr=<ipv4> port=<n> qp=<name> pd= scq= rcq= [QP keys]
 *       the QP of an accepted connection gets the name qp= and these attributes
 *   connect name=<qp> addr=<ipv4> port=<n> pd= scq= rcq= [src=<ipv4>] [timeout=5000] [QP keys]
 *       resolve address and route, rdma_create_qp, rdma_connect; if a local listener has that
 *       address and port, accept its request too; returns when both sides are ESTABLISHED
 *   disconnect qp=<name>                     rdma_disconnect
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "uv.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define BIT64(n) (1ULL << (n))

#define UV_CM_FAIL_MASK                                                               \
	(BIT64(RDMA_CM_EVENT_ADDR_ERROR) | BIT64(RDMA_CM_EVENT_ROUTE_ERROR) |         \
	 BIT64(RDMA_CM_EVENT_CONNECT_ERROR) | BIT64(RDMA_CM_EVENT_UNREACHABLE) |      \
	 BIT64(RDMA_CM_EVENT_REJECTED) | BIT64(RDMA_CM_EVENT_DISCONNECTED) |          \
	 BIT64(RDMA_CM_EVENT_DEVICE_REMOVAL))

static int need_channel(struct hil_cmd *cmd)
{
	if (uv.ch)
		return 0;
	uv.ch = rdma_create_event_channel();
	if (!uv.ch)
		return hil_fail(cmd, -errno, "rdma_create_event_channel failed");
	return 0;
}

void uv_cm_release(void)
{
	for (int i = 0; i < UV_MAX_OBJS; i++)
		if ((uv.qps[i].in_use && uv.qps[i].id) || uv.listeners[i].in_use)
			return;
	if (uv.ch)
		rdma_destroy_event_channel(uv.ch);
	uv.ch = NULL;
}

static void trace_cm(const struct uv_cmctx *ctx, const struct rdma_cm_event *ev, bool child)
{
	unsigned int e = ev->event;
	struct uv_rec r;

	uv_rec_begin(&r, "cm");
	uv_rec_str(&r, "id", ctx->name);
	if (child)
		uv_rec_bool(&r, "child", true);
	if (hil_cm_event_name(e))
		uv_rec_str(&r, "event", hil_cm_event_name(e));
	else
		uv_rec_printf(&r, ",\"event\":\"EVENT_%u\"", e);
	uv_rec_uint(&r, "code", e);
	uv_rec_int(&r, "status", ev->status);
	uv_rec_commit(&r);
}

/* Traces one event and remembers it; a second pending request is refused (after the ack). */
static void dispatch(struct rdma_cm_event *ev)
{
	struct uv_cmctx *ctx = ev->id->context;
	struct rdma_cm_id *refuse = NULL;

	if (!ctx) {
		rdma_ack_cm_event(ev);
		return;
	}
	if (ctx->kind == UV_CM_LISTEN) {
		struct uv_listener *l = container_of(ctx, struct uv_listener, cm);

		trace_cm(ctx, ev, ev->id != l->id);
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (l->pending)
				refuse = ev->id;
			else
				l->pending = ev->id;
		}
	} else {
		trace_cm(ctx, ev, false);
	}
	if (ev->event < 64)
		ctx->seen |= BIT64(ev->event);
	ctx->status = ev->status;
	rdma_ack_cm_event(ev);
	if (refuse) {
		rdma_reject(refuse, NULL, 0);
		rdma_destroy_id(refuse);
	}
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
	uint64_t now = uv_now_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* Waits for `ok` (or a failure event) on an id: 0, the event's status, or -ETIMEDOUT. */
static int cm_wait(struct uv_cmctx *c, enum rdma_cm_event_type ok, uint32_t ms)
{
	uint64_t deadline = uv_now_ns() + (uint64_t)ms * 1000000;

	while (!(c->seen & (BIT64(ok) | UV_CM_FAIL_MASK))) {
		int rc = pump(remaining_ms(deadline));

		if (rc == -ETIMEDOUT && !remaining_ms(deadline))
			return -ETIMEDOUT;
		if (rc && rc != -ETIMEDOUT)
			return rc;
	}
	if (c->seen & BIT64(ok))
		return 0;
	return c->status ? (c->status < 0 ? c->status : -c->status) : -ECONNABORTED;
}

static int parse_sin(struct hil_cmd *cmd, const char *key, uint32_t port, struct sockaddr_in *sin)
{
	const char *addr = hil_arg(cmd, key);

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
		return hil_fail(cmd, -EINVAL, "%s=%s is not an IPv4 address", key, addr);
	return 0;
}

static int parse_port(struct hil_cmd *cmd, uint32_t *port)
{
	int rc = hil_arg_u32(cmd, "port", 0, port);

	if (rc)
		return rc;
	if (!*port || *port > 65535)
		return hil_fail(cmd, -EINVAL, "port=%u", *port);
	return 0;
}

static void conn_param(struct rdma_conn_param *param)
{
	struct ibv_device_attr attr;

	memset(param, 0, sizeof(*param));
	if (!ibv_query_device(uv.ctx, &attr)) {
		param->initiator_depth = (uint8_t)(attr.max_qp_init_rd_atom < 16 ?
							   attr.max_qp_init_rd_atom : 16);
		param->responder_resources = (uint8_t)(attr.max_qp_rd_atom < 16 ?
							       attr.max_qp_rd_atom : 16);
	}
	param->retry_count = 7;
	param->rnr_retry_count = 7;
}

static int bind_listener(struct hil_cmd *cmd, struct uv_listener *l, struct sockaddr_in *sin)
{
	if (rdma_create_id(uv.ch, &l->id, &l->cm, RDMA_PS_TCP))
		return hil_fail(cmd, -errno, "rdma_create_id failed");
	if (rdma_bind_addr(l->id, (struct sockaddr *)sin))
		return hil_fail(cmd, -errno, "rdma_bind_addr failed");
	if (l->id->verbs != uv.ctx)
		return hil_fail(cmd, -EXDEV, "%s is not on device %s", hil_arg(cmd, "addr"),
				ibv_get_device_name(uv.ctx->device));
	if (rdma_listen(l->id, 4))
		return hil_fail(cmd, -errno, "rdma_listen failed");
	return 0;
}

int uv_op_listen(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	struct uv_listener *l = NULL;
	struct uv_qp_params p;
	struct sockaddr_in sin;
	struct uv_rec r;
	uint32_t port;
	int rc;

	rc = uv_check_name(cmd, name) ?: uv_qp_params_parse(cmd, &p) ?: parse_port(cmd, &port) ?:
	     parse_sin(cmd, "addr", port, &sin) ?: need_channel(cmd);
	if (rc)
		return rc;
	if (!strcmp(name, p.name))
		return hil_fail(cmd, -EEXIST, "the listener and its QP need different names");
	for (int i = 0; i < UV_MAX_OBJS && !l; i++)
		if (!uv.listeners[i].in_use)
			l = &uv.listeners[i];
	if (!l)
		return hil_fail(cmd, -ENOSPC, "too many listeners");
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->cm.kind = UV_CM_LISTEN;
	l->cm.name = l->name;
	l->qp = p;
	l->port = (uint16_t)port;
	l->addr = sin.sin_addr.s_addr;
	rc = bind_listener(cmd, l, &sin);
	if (rc) {
		if (l->id)
			rdma_destroy_id(l->id);
		l->id = NULL;
		return rc;
	}
	l->in_use = true;
	uv_rec_begin(&r, "create");
	uv_rec_str(&r, "kind", "listen");
	uv_rec_str(&r, "name", name);
	uv_rec_str(&r, "addr", hil_arg(cmd, "addr"));
	uv_rec_uint(&r, "port", port);
	uv_rec_str(&r, "qp", p.name);
	uv_rec_commit(&r);
	return 0;
}

void uv_listener_destroy(struct uv_listener *l)
{
	struct rdma_cm_id *pending = l->pending;
	struct uv_rec r;

	rdma_destroy_id(l->id);
	l->id = NULL;
	l->pending = NULL;
	if (pending) {
		rdma_reject(pending, NULL, 0);
		rdma_destroy_id(pending);
	}
	l->in_use = false;
	uv_rec_begin(&r, "destroy");
	uv_rec_str(&r, "kind", "listen");
	uv_rec_str(&r, "name", l->name);
	uv_rec_bool(&r, "pending_request", pending != NULL);
	uv_rec_commit(&r);
}

static struct uv_listener *local_listener(const struct sockaddr_in *dst)
{
	for (int i = 0; i < UV_MAX_OBJS; i++) {
		struct uv_listener *l = &uv.listeners[i];

		if (l->in_use && l->port == ntohs(dst->sin_port) && l->addr == dst->sin_addr.s_addr)
			return l;
	}
	return NULL;
}

static struct rdma_cm_id *wait_request(struct uv_listener *l, uint32_t ms)
{
	uint64_t deadline = uv_now_ns() + (uint64_t)ms * 1000000;
	struct rdma_cm_id *nid;

	while (!l->pending && remaining_ms(deadline)) {
		int rc = pump(remaining_ms(deadline));

		if (rc && rc != -ETIMEDOUT)
			break;
	}
	nid = l->pending;
	l->pending = NULL;
	return nid;
}

/* The passive side: a QP on the request's id, then rdma_accept. */
static int accept_request(struct hil_cmd *cmd, struct uv_listener *l, uint32_t ms,
			  struct uv_qp **out)
{
	struct rdma_conn_param param;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *nid = wait_request(l, ms);
	struct uv_qp *s;
	int rc;

	if (!nid)
		return hil_fail(cmd, -ETIMEDOUT, "no connection request reached listener %s",
				l->name);
	rc = uv_check_name(cmd, l->qp.name);
	if (rc) {
		rdma_reject(nid, NULL, 0);
		rdma_destroy_id(nid);
		return rc;
	}
	s = uv_qp_alloc(cmd, &l->qp, &attr);
	if (!s) {
		rdma_reject(nid, NULL, 0);
		rdma_destroy_id(nid);
		return -ENOMEM;
	}
	if (rdma_create_qp(nid, l->qp.pd->pd, &attr)) {
		rc = -errno;
		uv_qp_abandon(s);
		rdma_reject(nid, NULL, 0);
		rdma_destroy_id(nid);
		return hil_fail(cmd, rc, "rdma_create_qp on the accepted id failed");
	}
	uv_qp_created(s, nid->qp, nid, &attr, cmd->id);
	nid->context = &s->cm;
	conn_param(&param);
	if (rdma_accept(nid, &param)) {
		rc = -errno;
		uv_qp_destroy(s, "accept failed");
		return hil_fail(cmd, rc, "rdma_accept failed");
	}
	*out = s;
	return 0;
}

/* Resolves address and route for a fresh id on the channel. */
static int resolve(struct hil_cmd *cmd, struct uv_qp *q, struct rdma_cm_id *id,
		   struct sockaddr_in *src, struct sockaddr_in *dst, uint32_t ms)
{
	int rc;

	if (rdma_resolve_addr(id, (struct sockaddr *)src, (struct sockaddr *)dst, (int)ms))
		return hil_fail(cmd, -errno, "rdma_resolve_addr failed");
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ADDR_RESOLVED, ms);
	if (rc)
		return hil_fail(cmd, rc, "address resolution failed");
	if (rdma_resolve_route(id, (int)ms))
		return hil_fail(cmd, -errno, "rdma_resolve_route failed");
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ROUTE_RESOLVED, ms);
	if (rc)
		return hil_fail(cmd, rc, "route resolution failed");
	if (id->verbs != uv.ctx)
		return hil_fail(cmd, -EXDEV, "the route goes through %s, not %s",
				id->verbs ? ibv_get_device_name(id->verbs->device) : "no device",
				ibv_get_device_name(uv.ctx->device));
	return 0;
}

/* rdma_connect, the local listener's accept, and both ESTABLISHED. */
static int establish(struct hil_cmd *cmd, struct uv_qp *q, struct sockaddr_in *dst, uint32_t ms,
		     struct uv_qp **passive)
{
	struct uv_listener *l = local_listener(dst);
	struct rdma_conn_param param;
	int rc;

	conn_param(&param);
	if (rdma_connect(q->id, &param))
		return hil_fail(cmd, -errno, "rdma_connect failed");
	if (l) {
		rc = accept_request(cmd, l, ms, passive);
		if (rc)
			return rc;
	}
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ESTABLISHED, ms);
	if (rc)
		return hil_fail(cmd, rc, "%s was not established", q->name);
	if (*passive) {
		rc = cm_wait(&(*passive)->cm, RDMA_CM_EVENT_ESTABLISHED, ms);
		if (rc)
			return hil_fail(cmd, rc, "%s was not established", (*passive)->name);
		q->peer = *passive;
		(*passive)->peer = q;
	}
	return 0;
}

int uv_op_connect(struct hil_cmd *cmd)
{
	struct sockaddr_in dst, src;
	struct ibv_qp_init_attr attr;
	struct uv_qp_params p;
	struct uv_qp *q, *s = NULL;
	struct rdma_cm_id *id;
	bool has_src = hil_arg(cmd, "src") != NULL;
	uint32_t port, ms;
	int rc;

	rc = uv_qp_params_parse(cmd, &p) ?: parse_port(cmd, &port) ?:
	     parse_sin(cmd, "addr", port, &dst) ?: hil_arg_u32(cmd, "timeout", 5000, &ms) ?:
	     (has_src ? parse_sin(cmd, "src", 0, &src) : 0) ?: need_channel(cmd);
	if (rc)
		return rc;
	q = uv_qp_alloc(cmd, &p, &attr);
	if (!q)
		return -ENOMEM;
	if (rdma_create_id(uv.ch, &id, &q->cm, RDMA_PS_TCP)) {
		rc = -errno;
		uv_qp_abandon(q);
		return hil_fail(cmd, rc, "rdma_create_id failed");
	}
	rc = resolve(cmd, q, id, has_src ? &src : NULL, &dst, ms);
	if (!rc && rdma_create_qp(id, p.pd->pd, &attr))
		rc = hil_fail(cmd, -errno, "rdma_create_qp failed");
	if (rc) {
		rdma_destroy_id(id);
		uv_qp_abandon(q);
		return rc;
	}
	uv_qp_created(q, id->qp, id, &attr, cmd->id);
	rc = establish(cmd, q, &dst, ms, &s);
	if (rc) {
		if (s)
			uv_qp_destroy(s, "connect failed");
		uv_qp_destroy(q, "connect failed");
	}
	return rc;
}

int uv_op_disconnect(struct hil_cmd *cmd)
{
	struct uv_qp *q = uv_find_qp(hil_arg(cmd, "qp"));
	struct uv_rec r;
	int rc;

	if (!q)
		return hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	if (!q->id)
		return hil_fail(cmd, -EINVAL, "QP %s has no rdma_cm id", q->name);
	rc = rdma_disconnect(q->id) ? -errno : 0;
	uv_rec_begin(&r, "disconnect");
	uv_rec_str(&r, "qp", q->name);
	uv_rec_int(&r, "rc", rc);
	uv_rec_commit(&r);
	return rc;
}
