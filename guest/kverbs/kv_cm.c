// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma_cm: listeners, connections (a loopback pair when the address and port are a local
 * listener's), disconnect. The event handler only records: it traces the event, remembers it on
 * the id's context and wakes the worker; every object is made and destroyed by the worker (a
 * connection request is accepted by the worker, under rdma_lock_handler).
 *
 *   listen name=L addr=<ipv4> port=<n> qp=<name> pd= scq= rcq= [QP keys]
 *       the QP of an accepted connection gets the name qp= and these attributes
 *   connect name=<qp> addr=<ipv4> port=<n> pd= scq= rcq= [src=<ipv4>] [timeout=5000] [QP keys]
 *       resolve address and route, rdma_create_qp, rdma_connect; if a local listener has that
 *       address and port, accept its request too; returns when both sides are ESTABLISHED
 *   disconnect qp=<name>                     rdma_disconnect
 */
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/kernel.h>
#include <net/net_namespace.h>

#include "kv.h"
#include "names.h"

#define KV_CM_FAIL_MASK                                                               \
	(BIT(RDMA_CM_EVENT_ADDR_ERROR) | BIT(RDMA_CM_EVENT_ROUTE_ERROR) |             \
	 BIT(RDMA_CM_EVENT_CONNECT_ERROR) | BIT(RDMA_CM_EVENT_UNREACHABLE) |          \
	 BIT(RDMA_CM_EVENT_REJECTED) | BIT(RDMA_CM_EVENT_DISCONNECTED) |              \
	 BIT(RDMA_CM_EVENT_DEVICE_REMOVAL))

static void trace_cm(struct kv_cmctx *ctx, struct rdma_cm_id *id, struct rdma_cm_event *ev,
		     bool child)
{
	struct kv_rec r;
	unsigned int e = ev->event;

	kv_rec_begin(&r, "cm");
	kv_rec_str(&r, "id", ctx->name);
	if (child)
		kv_rec_bool(&r, "child", true);
	if (hil_cm_event_name(e))
		kv_rec_str(&r, "event", hil_cm_event_name(e));
	else
		kv_rec_printf(&r, ",\"event\":\"EVENT_%u\"", e);
	kv_rec_uint(&r, "code", e);
	kv_rec_int(&r, "status", ev->status);
	kv_rec_commit(&r);
}

int kv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kv_cmctx *ctx = id->context;
	bool child = false;

	if (ctx->kind == KV_CM_LISTEN) {
		struct kv_listener *l = container_of(ctx, struct kv_listener, cm);

		child = id != l->id;
		trace_cm(ctx, id, ev, child);
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			bool taken;

			spin_lock(&l->lock);
			taken = l->pending;
			if (!taken)
				l->pending = id;
			spin_unlock(&l->lock);
			/* non-zero: rdma_cm destroys the new id */
			if (taken)
				return -EBUSY;
		}
	} else {
		trace_cm(ctx, id, ev, false);
		if (ctx->kind == KV_CM_PROBE)
			return 0;
	}
	if (ev->event < BITS_PER_LONG)
		set_bit(ev->event, &ctx->seen);
	WRITE_ONCE(ctx->status, ev->status);
	wake_up_all(&ctx->wq);
	return 0;
}

static bool cm_seen(struct kv_cmctx *c, unsigned long mask)
{
	return READ_ONCE(c->seen) & mask;
}

/* Waits for `ok` (or a failure event) on an id; 0, the event's status, or -ETIMEDOUT. */
static int cm_wait(struct kv_cmctx *c, enum rdma_cm_event_type ok, u32 ms)
{
	unsigned long mask = BIT(ok) | KV_CM_FAIL_MASK;

	wait_event_idle_timeout(c->wq, cm_seen(c, mask), msecs_to_jiffies(ms));
	if (cm_seen(c, BIT(ok)))
		return 0;
	if (cm_seen(c, KV_CM_FAIL_MASK))
		return READ_ONCE(c->status) ?: -ECONNABORTED;
	return -ETIMEDOUT;
}

static int parse_sin(struct hil_cmd *cmd, const char *key, u32 port, struct sockaddr_in *sin)
{
	const char *addr = hil_arg(cmd, key);

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (!in4_pton(addr, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL))
		return hil_fail(cmd, -EINVAL, "%s=%s is not an IPv4 address", key, addr);
	return 0;
}

static int parse_port(struct hil_cmd *cmd, u32 *port)
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
	memset(param, 0, sizeof(*param));
	param->initiator_depth = min_t(u32, kv.dev->attrs.max_qp_init_rd_atom, 16);
	param->responder_resources = min_t(u32, kv.dev->attrs.max_qp_rd_atom, 16);
	param->retry_count = 7;
	param->rnr_retry_count = 7;
}

int kv_op_listen(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	struct kv_listener *l = NULL;
	struct kv_qp_params p;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	struct kv_rec r;
	u32 port;
	int i, rc;

	rc = kv_check_name(cmd, name) ?: kv_qp_params_parse(cmd, &p) ?: parse_port(cmd, &port) ?:
	     parse_sin(cmd, "addr", port, &sin);
	if (rc)
		return rc;
	if (!strcmp(name, p.name))
		return hil_fail(cmd, -EEXIST, "the listener and its QP need different names");
	for (i = 0; i < KV_MAX_OBJS && !l; i++)
		if (!kv.listeners[i].in_use)
			l = &kv.listeners[i];
	if (!l)
		return hil_fail(cmd, -ENOSPC, "too many listeners");
	strscpy(l->name, name, sizeof(l->name));
	l->cm.kind = KV_CM_LISTEN;
	l->cm.name = l->name;
	l->cm.seen = 0;
	l->cm.status = 0;
	l->pending = NULL;
	l->qp = p;
	l->port = port;
	l->addr = sin.sin_addr.s_addr;
	id = rdma_create_id(&init_net, kv_cm_handler, &l->cm, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return hil_fail(cmd, PTR_ERR(id), "rdma_create_id failed");
	l->id = id;
	rc = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (rc) {
		hil_fail(cmd, rc, "rdma_bind_addr failed");
		goto err;
	}
	if (id->device != kv.dev) {
		rc = hil_fail(cmd, -EXDEV, "%s is not on device %s", hil_arg(cmd, "addr"),
			      dev_name(&kv.dev->dev));
		goto err;
	}
	rc = rdma_listen(id, 4);
	if (rc) {
		hil_fail(cmd, rc, "rdma_listen failed");
		goto err;
	}
	l->in_use = true;
	kv_rec_begin(&r, "create");
	kv_rec_str(&r, "kind", "listen");
	kv_rec_str(&r, "name", name);
	kv_rec_str(&r, "addr", hil_arg(cmd, "addr"));
	kv_rec_uint(&r, "port", port);
	kv_rec_str(&r, "qp", p.name);
	kv_rec_commit(&r);
	return 0;
err:
	rdma_destroy_id(id);
	l->id = NULL;
	return rc;
}

void kv_listener_destroy(struct kv_listener *l)
{
	struct rdma_cm_id *pending;
	struct kv_rec r;

	rdma_destroy_id(l->id);
	l->id = NULL;
	spin_lock(&l->lock);
	pending = l->pending;
	l->pending = NULL;
	spin_unlock(&l->lock);
	if (pending)
		rdma_destroy_id(pending);
	l->in_use = false;
	kv_rec_begin(&r, "destroy");
	kv_rec_str(&r, "kind", "listen");
	kv_rec_str(&r, "name", l->name);
	kv_rec_bool(&r, "pending_request", !!pending);
	kv_rec_commit(&r);
}

static struct kv_listener *local_listener(const struct sockaddr_in *dst)
{
	int i;

	for (i = 0; i < KV_MAX_OBJS; i++) {
		struct kv_listener *l = &kv.listeners[i];

		if (l->in_use && l->port == ntohs(dst->sin_port) && l->addr == dst->sin_addr.s_addr)
			return l;
	}
	return NULL;
}

static bool has_pending(struct kv_listener *l)
{
	bool p;

	spin_lock(&l->lock);
	p = l->pending;
	spin_unlock(&l->lock);
	return p;
}

/* The worker's half of the passive side: a QP on the request's id, then rdma_accept. */
static int accept_request(struct hil_cmd *cmd, struct kv_listener *l, u32 ms, struct kv_qp **out)
{
	struct rdma_conn_param param;
	struct ib_qp_init_attr attr;
	struct rdma_cm_id *nid;
	struct kv_qp *s;
	int rc;

	wait_event_idle_timeout(l->cm.wq, has_pending(l), msecs_to_jiffies(ms));
	spin_lock(&l->lock);
	nid = l->pending;
	l->pending = NULL;
	spin_unlock(&l->lock);
	if (!nid)
		return hil_fail(cmd, -ETIMEDOUT, "no connection request reached listener %s", l->name);
	if (kv_name_taken(l->qp.name)) {
		rdma_destroy_id(nid);
		return hil_fail(cmd, -EEXIST, "listener %s: QP name %s is taken", l->name, l->qp.name);
	}
	s = kv_qp_alloc(cmd, &l->qp, &attr);
	if (!s) {
		rdma_destroy_id(nid);
		return -ENOMEM;
	}
	rc = rdma_create_qp(nid, l->qp.pd->pd, &attr);
	if (rc) {
		kv_qp_abandon(s);
		rdma_destroy_id(nid);
		return hil_fail(cmd, rc, "rdma_create_qp on the accepted id failed");
	}
	kv_qp_created(s, nid->qp, nid, &attr, cmd->id);
	conn_param(&param);
	rdma_lock_handler(nid);
	nid->context = &s->cm;
	rc = rdma_accept(nid, &param);
	rdma_unlock_handler(nid);
	if (rc) {
		kv_qp_destroy(s, "accept failed");
		return hil_fail(cmd, rc, "rdma_accept failed");
	}
	*out = s;
	return 0;
}

int kv_op_connect(struct hil_cmd *cmd)
{
	struct sockaddr_in dst, src;
	struct rdma_conn_param param;
	struct ib_qp_init_attr attr;
	struct kv_qp_params p;
	struct kv_listener *l;
	struct kv_qp *q, *s = NULL;
	struct rdma_cm_id *id;
	u32 port, ms;
	int rc;

	rc = kv_qp_params_parse(cmd, &p) ?: parse_port(cmd, &port) ?:
	     parse_sin(cmd, "addr", port, &dst) ?: hil_arg_u32(cmd, "timeout", 5000, &ms);
	if (rc)
		return rc;
	if (hil_arg(cmd, "src")) {
		rc = parse_sin(cmd, "src", 0, &src);
		if (rc)
			return rc;
	}
	q = kv_qp_alloc(cmd, &p, &attr);
	if (!q)
		return -ENOMEM;
	id = rdma_create_id(&init_net, kv_cm_handler, &q->cm, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		kv_qp_abandon(q);
		return hil_fail(cmd, PTR_ERR(id), "rdma_create_id failed");
	}
	rc = rdma_resolve_addr(id, hil_arg(cmd, "src") ? (struct sockaddr *)&src : NULL,
			       (struct sockaddr *)&dst, ms);
	if (rc) {
		hil_fail(cmd, rc, "rdma_resolve_addr failed");
		goto err_id;
	}
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ADDR_RESOLVED, ms);
	if (rc) {
		hil_fail(cmd, rc, "address resolution failed");
		goto err_id;
	}
	rc = rdma_resolve_route(id, ms);
	if (rc) {
		hil_fail(cmd, rc, "rdma_resolve_route failed");
		goto err_id;
	}
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ROUTE_RESOLVED, ms);
	if (rc) {
		hil_fail(cmd, rc, "route resolution failed");
		goto err_id;
	}
	if (id->device != kv.dev) {
		rc = hil_fail(cmd, -EXDEV, "the route goes through %s, not %s",
			      id->device ? dev_name(&id->device->dev) : "no device",
			      dev_name(&kv.dev->dev));
		goto err_id;
	}
	rc = rdma_create_qp(id, p.pd->pd, &attr);
	if (rc) {
		hil_fail(cmd, rc, "rdma_create_qp failed");
		goto err_id;
	}
	kv_qp_created(q, id->qp, id, &attr, cmd->id);

	conn_param(&param);
	l = local_listener(&dst);
	rc = rdma_connect(id, &param);
	if (rc) {
		hil_fail(cmd, rc, "rdma_connect failed");
		goto err_qp;
	}
	if (l) {
		rc = accept_request(cmd, l, ms, &s);
		if (rc)
			goto err_qp;
	}
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ESTABLISHED, ms);
	if (rc) {
		hil_fail(cmd, rc, "%s was not established", q->name);
		goto err_qp;
	}
	if (s) {
		rc = cm_wait(&s->cm, RDMA_CM_EVENT_ESTABLISHED, ms);
		if (rc) {
			hil_fail(cmd, rc, "%s was not established", s->name);
			goto err_qp;
		}
		q->peer = s;
		s->peer = q;
	}
	return 0;

err_qp:
	if (s)
		kv_qp_destroy(s, "connect failed");
	kv_qp_destroy(q, "connect failed");
	return rc;
err_id:
	rdma_destroy_id(id);
	kv_qp_abandon(q);
	return rc;
}

int kv_op_disconnect(struct hil_cmd *cmd)
{
	struct kv_qp *q = kv_find_qp(hil_arg(cmd, "qp"));
	struct kv_rec r;
	int rc;

	if (!q)
		return hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	if (!q->id)
		return hil_fail(cmd, -EINVAL, "QP %s has no rdma_cm id", q->name);
	rc = rdma_disconnect(q->id);
	kv_rec_begin(&r, "disconnect");
	kv_rec_str(&r, "qp", q->name);
	kv_rec_int(&r, "rc", rc);
	kv_rec_commit(&r);
	return rc;
}
