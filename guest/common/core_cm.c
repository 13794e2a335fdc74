// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma_cm: listeners, connections (a loopback pair when the address and port are a local
 * listener's), disconnect. Events are traced and remembered on their id's context
 * (hil_cm_event) by whoever reads them (the kernel's event handler; hil-uverbs' event channel,
 * read while a command waits); every object is made and destroyed by a command.
 *
 *   listen name=L addr=<ipv4> port=<n> qp=<name> pd= scq= rcq= [QP keys]
 *       the QP of an accepted connection gets the name qp= and these attributes
 *   connect name=<qp> addr=<ipv4> port=<n> pd= scq= rcq= [src=<ipv4>] [timeout=5000] [QP keys]
 *       resolve address and route, rdma_create_qp, rdma_connect; if a local listener has that
 *       address and port, accept its request too; returns when both sides are ESTABLISHED
 *       [stop=route]    returns after rdma_create_qp: the QP stays in INIT, never connected
 *       [stop=refused]  rdma_connect to a port nobody listens on: returns when the connection
 *                       is refused (REJECTED, UNREACHABLE or CONNECT_ERROR), the QP kept
 *   disconnect qp=<name>                     rdma_disconnect
 */
#include "core.h"
#include "names.h"

#define BIT_OF(n) (1UL << (n))
#define HIL_CM_FAIL_MASK                                                              \
	(BIT_OF(RDMA_CM_EVENT_ADDR_ERROR) | BIT_OF(RDMA_CM_EVENT_ROUTE_ERROR) |       \
	 BIT_OF(RDMA_CM_EVENT_CONNECT_ERROR) | BIT_OF(RDMA_CM_EVENT_UNREACHABLE) |    \
	 BIT_OF(RDMA_CM_EVENT_REJECTED) | BIT_OF(RDMA_CM_EVENT_DISCONNECTED) |        \
	 BIT_OF(RDMA_CM_EVENT_DEVICE_REMOVAL))
#define HIL_CM_EVENTS (sizeof(unsigned long) * 8)

static struct hil_listener *listener_of(struct hil_cmctx *ctx)
{
	return (struct hil_listener *)((char *)ctx - offsetof(struct hil_listener, cm));
}

static void trace_cm(const struct hil_cmctx *ctx, unsigned int event, int status, bool child)
{
	struct hil_rec r;

	hil_rec_begin(&r, "cm");
	hil_rec_str(&r, "id", ctx->name);
	if (child)
		hil_rec_bool(&r, "child", true);
	if (hil_cm_event_name(event))
		hil_rec_str(&r, "event", hil_cm_event_name(event));
	else
		hil_rec_printf(&r, ",\"event\":\"EVENT_%u\"", event);
	hil_rec_uint(&r, "code", event);
	hil_rec_int(&r, "status", status);
	hil_rec_commit(&r);
}

bool hil_cm_event(struct hil_cmctx *ctx, struct rdma_cm_id *id, unsigned int event, int status)
{
	if (ctx->kind == HIL_CM_LISTEN) {
		struct hil_listener *l = listener_of(ctx);

		trace_cm(ctx, event, status, id != l->id);
		if (event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			bool taken;

			hil_lock(&l->lock);
			taken = l->pending != NULL;
			if (!taken)
				l->pending = id;
			hil_unlock(&l->lock);
			if (taken)
				return true;
		}
	} else {
		trace_cm(ctx, event, status, false);
		if (ctx->kind == HIL_CM_PROBE)
			return false;
	}
	if (event < HIL_CM_EVENTS)
		hil_set_bit(event, &ctx->seen);
	hil_write_once(ctx->status, status);
	hil_port_cm_wake(ctx);
	return false;
}

static bool cm_wanted(struct hil_cmctx *c)
{
	return hil_read_once(c->seen) & c->want;
}

/* Waits for `ok` (or a failure event) on an id: 0, the event's status, or -ETIMEDOUT. */
static int cm_wait(struct hil_cmctx *c, unsigned int ok, uint32_t ms)
{
	unsigned long seen;
	int rc, status;

	c->want = BIT_OF(ok) | HIL_CM_FAIL_MASK;
	rc = hil_port_cm_wait(c, cm_wanted, ms);
	seen = hil_read_once(c->seen);
	if (seen & BIT_OF(ok))
		return 0;
	if (rc)
		return rc;
	if (!(seen & HIL_CM_FAIL_MASK))
		return -ETIMEDOUT;
	status = hil_read_once(c->status);
	return status ? (status < 0 ? status : -status) : -ECONNABORTED;
}

static int parse_sin(struct hil_cmd *cmd, const char *key, uint32_t port, struct sockaddr_in *sin)
{
	const char *addr = hil_arg(cmd, key);

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (!hil_ipv4(addr, &sin->sin_addr.s_addr))
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
	memset(param, 0, sizeof(*param));
	param->initiator_depth = (uint8_t)(hil.dev.max_qp_init_rd_atom < 16 ?
						   hil.dev.max_qp_init_rd_atom : 16);
	param->responder_resources = (uint8_t)(hil.dev.max_qp_rd_atom < 16 ?
						       hil.dev.max_qp_rd_atom : 16);
	param->retry_count = 7;
	param->rnr_retry_count = 7;
}

static int bind_listener(struct hil_cmd *cmd, struct hil_listener *l, struct sockaddr_in *sin)
{
	int rc = hil_port_cm_id(&l->cm, &l->id);

	if (rc)
		return hil_fail(cmd, rc, "rdma_create_id failed");
	rc = HIL_CM_RC(rdma_bind_addr(l->id, (struct sockaddr *)sin));
	if (rc)
		return hil_fail(cmd, rc, "rdma_bind_addr failed");
	if (!hil_port_id_on_device(l->id))
		return hil_fail(cmd, -EXDEV, "%s is not on device %s", hil_arg(cmd, "addr"),
				hil.dev.name);
	rc = HIL_CM_RC(rdma_listen(l->id, 4));
	if (rc)
		return hil_fail(cmd, rc, "rdma_listen failed");
	return 0;
}

int hil_op_listen(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	struct hil_listener *l = NULL;
	struct hil_qp_params p;
	struct sockaddr_in sin;
	struct hil_rec r;
	uint32_t port;
	int rc;

	rc = hil_check_new_name(cmd, name) ?: hil_qp_params_parse(cmd, &p) ?:
	     parse_port(cmd, &port) ?: parse_sin(cmd, "addr", port, &sin);
	if (rc)
		return rc;
	if (!strcmp(name, p.name))
		return hil_fail(cmd, -EEXIST, "the listener and its QP need different names");
	for (int i = 0; i < HIL_MAX_OBJS && !l; i++)
		if (!hil.listeners[i].in_use)
			l = &hil.listeners[i];
	if (!l)
		return hil_fail(cmd, -ENOSPC, "too many listeners");
	hil_copy_str(l->name, name, sizeof(l->name));
	l->cm.kind = HIL_CM_LISTEN;
	l->cm.name = l->name;
	l->cm.seen = 0;
	l->cm.status = 0;
	l->pending = NULL;
	l->qp = p;
	l->port = (uint16_t)port;
	l->addr = sin.sin_addr.s_addr;
	l->id = NULL;
	rc = bind_listener(cmd, l, &sin);
	if (rc) {
		if (l->id)
			hil_port_cm_destroy_id(l->id);
		l->id = NULL;
		return rc;
	}
	l->in_use = true;
	hil_rec_begin(&r, "create");
	hil_rec_str(&r, "kind", "listen");
	hil_rec_str(&r, "name", name);
	hil_rec_str(&r, "addr", hil_arg(cmd, "addr"));
	hil_rec_uint(&r, "port", port);
	hil_rec_str(&r, "qp", p.name);
	hil_rec_commit(&r);
	return 0;
}

/* The listener's connection request not accepted yet, taken from it. */
static struct rdma_cm_id *take_pending(struct hil_listener *l)
{
	struct rdma_cm_id *id;

	hil_lock(&l->lock);
	id = l->pending;
	l->pending = NULL;
	hil_unlock(&l->lock);
	return id;
}

void hil_listener_destroy(struct hil_listener *l)
{
	struct rdma_cm_id *pending;
	struct hil_rec r;

	hil_port_cm_destroy_id(l->id);
	l->id = NULL;
	pending = take_pending(l);
	if (pending)
		hil_port_cm_refuse(pending);
	l->in_use = false;
	hil_rec_begin(&r, "destroy");
	hil_rec_str(&r, "kind", "listen");
	hil_rec_str(&r, "name", l->name);
	hil_rec_bool(&r, "pending_request", pending != NULL);
	hil_rec_commit(&r);
}

static struct hil_listener *local_listener(const struct sockaddr_in *dst)
{
	for (int i = 0; i < HIL_MAX_OBJS; i++) {
		struct hil_listener *l = &hil.listeners[i];

		if (l->in_use && l->port == ntohs(dst->sin_port) && l->addr == dst->sin_addr.s_addr)
			return l;
	}
	return NULL;
}

static bool has_pending(struct hil_cmctx *c)
{
	struct hil_listener *l = listener_of(c);
	bool pending;

	hil_lock(&l->lock);
	pending = l->pending != NULL;
	hil_unlock(&l->lock);
	return pending;
}

/* The passive side: a QP on the request's id, then rdma_accept. */
static int accept_request(struct hil_cmd *cmd, struct hil_listener *l, uint32_t ms,
			  struct hil_qp **out)
{
	struct rdma_conn_param param;
	hil_verbs_qp_init_attr attr;
	struct rdma_cm_id *nid;
	struct hil_qp *s;
	int rc;

	hil_port_cm_wait(&l->cm, has_pending, ms);
	nid = take_pending(l);
	if (!nid)
		return hil_fail(cmd, -ETIMEDOUT, "no connection request reached listener %s",
				l->name);
	rc = hil_check_new_name(cmd, l->qp.name);
	if (rc) {
		hil_port_cm_refuse(nid);
		return rc;
	}
	s = hil_qp_alloc(cmd, &l->qp, &attr);
	if (!s) {
		hil_port_cm_refuse(nid);
		return -ENOMEM;
	}
	rc = HIL_CM_RC(rdma_create_qp(nid, l->qp.pd->pd, &attr));
	if (rc) {
		hil_qp_abandon(s);
		hil_port_cm_refuse(nid);
		return hil_fail(cmd, rc, "rdma_create_qp on the accepted id failed");
	}
	s->qp = nid->qp;
	hil_qp_created(s, nid, &attr, cmd->id);
	conn_param(&param);
	rc = hil_port_cm_accept(nid, s, &param);
	if (rc) {
		hil_qp_destroy(s, "accept failed");
		return hil_fail(cmd, rc, "rdma_accept failed");
	}
	*out = s;
	return 0;
}

/* Resolves address and route for a fresh id. */
static int resolve(struct hil_cmd *cmd, struct hil_qp *q, struct rdma_cm_id *id,
		   struct sockaddr_in *src, struct sockaddr_in *dst, uint32_t ms)
{
	int rc;

	rc = HIL_CM_RC(rdma_resolve_addr(id, (struct sockaddr *)src, (struct sockaddr *)dst,
					 (int)ms));
	if (rc)
		return hil_fail(cmd, rc, "rdma_resolve_addr failed");
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ADDR_RESOLVED, ms);
	if (rc)
		return hil_fail(cmd, rc, "address resolution failed");
	rc = HIL_CM_RC(rdma_resolve_route(id, (int)ms));
	if (rc)
		return hil_fail(cmd, rc, "rdma_resolve_route failed");
	rc = cm_wait(&q->cm, RDMA_CM_EVENT_ROUTE_RESOLVED, ms);
	if (rc)
		return hil_fail(cmd, rc, "route resolution failed");
	if (!hil_port_id_on_device(id))
		return hil_fail(cmd, -EXDEV, "the route goes through %s, not %s",
				hil_port_id_device_name(id) ?: "no device", hil.dev.name);
	return 0;
}

/* rdma_connect, the local listener's accept, and both ESTABLISHED. */
static int establish(struct hil_cmd *cmd, struct hil_qp *q, struct sockaddr_in *dst, uint32_t ms,
		     struct hil_qp **passive)
{
	struct hil_listener *l = local_listener(dst);
	struct rdma_conn_param param;
	int rc;

	conn_param(&param);
	rc = HIL_CM_RC(rdma_connect(q->id, &param));
	if (rc)
		return hil_fail(cmd, rc, "rdma_connect failed");
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

/* A refused connection, recorded: `by` the rdma_connect call that returned it, or the event. */
static void trace_refused(const struct hil_qp *q, const char *by, int rc)
{
	struct hil_rec r;

	hil_rec_begin(&r, "refused");
	hil_rec_str(&r, "qp", q->name);
	hil_rec_str(&r, "by", by);
	hil_rec_int(&r, "rc", rc);
	hil_rec_commit(&r);
}

static bool is_refusal(int rc)
{
	return rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -EHOSTUNREACH || rc == -ENETUNREACH;
}

/*
 * rdma_connect where nobody listens: the refusal is what the command waits for, from the call
 * itself (siw connects its TCP socket inside it) or as an event (erdma); the QP is kept (a ULP's
 * connect error path drains and destroys it), a connection that is made is an error.
 */
static int refused(struct hil_cmd *cmd, struct hil_qp *q, struct sockaddr_in *dst, uint32_t ms)
{
	const unsigned long refusal = BIT_OF(RDMA_CM_EVENT_REJECTED) | BIT_OF(RDMA_CM_EVENT_UNREACHABLE) |
				      BIT_OF(RDMA_CM_EVENT_CONNECT_ERROR);
	struct rdma_conn_param param;
	unsigned long seen;
	int rc;

	if (local_listener(dst)) {
		hil_qp_destroy(q, "connect failed");
		return hil_fail(cmd, -EADDRINUSE, "stop=refused: a local listener has port %u",
				ntohs(dst->sin_port));
	}
	conn_param(&param);
	rc = HIL_CM_RC(rdma_connect(q->id, &param));
	if (is_refusal(rc)) {
		trace_refused(q, "rdma_connect", rc);
		return 0;
	}
	if (!rc) {
		rc = cm_wait(&q->cm, RDMA_CM_EVENT_ESTABLISHED, ms);
		seen = hil_read_once(q->cm.seen);
		if (rc && (seen & refusal)) {
			trace_refused(q, (seen & BIT_OF(RDMA_CM_EVENT_REJECTED)) ? "REJECTED" :
					 (seen & BIT_OF(RDMA_CM_EVENT_UNREACHABLE)) ? "UNREACHABLE" :
										      "CONNECT_ERROR", rc);
			return 0;
		}
		if (!rc)
			rc = -EISCONN;
	}
	hil_qp_destroy(q, "connect failed");
	return hil_fail(cmd, rc, "stop=refused: %s was not refused", q->name);
}

int hil_op_connect(struct hil_cmd *cmd)
{
	const char *stop = hil_arg(cmd, "stop");
	bool has_src = hil_arg(cmd, "src") != NULL;
	hil_verbs_qp_init_attr attr;
	struct sockaddr_in dst, src;
	struct hil_qp *q, *s = NULL;
	struct hil_qp_params p;
	struct rdma_cm_id *id;
	uint32_t port, ms;
	int rc;

	if (stop && strcmp(stop, "route") && strcmp(stop, "refused"))
		return hil_fail(cmd, -EINVAL, "stop=%s: route or refused", stop);
	rc = hil_qp_params_parse(cmd, &p) ?: parse_port(cmd, &port) ?:
	     parse_sin(cmd, "addr", port, &dst) ?: hil_arg_u32(cmd, "timeout", 5000, &ms) ?:
	     (has_src ? parse_sin(cmd, "src", 0, &src) : 0);
	if (rc)
		return rc;
	q = hil_qp_alloc(cmd, &p, &attr);
	if (!q)
		return -ENOMEM;
	rc = hil_port_cm_id(&q->cm, &id);
	if (rc) {
		hil_qp_abandon(q);
		return hil_fail(cmd, rc, "rdma_create_id failed");
	}
	rc = resolve(cmd, q, id, has_src ? &src : NULL, &dst, ms);
	if (!rc) {
		rc = HIL_CM_RC(rdma_create_qp(id, p.pd->pd, &attr));
		if (rc)
			hil_fail(cmd, rc, "rdma_create_qp failed");
	}
	if (rc) {
		hil_port_cm_destroy_id(id);
		hil_qp_abandon(q);
		return rc;
	}
	q->qp = id->qp;
	hil_qp_created(q, id, &attr, cmd->id);
	if (stop && !strcmp(stop, "route"))
		return 0;
	if (stop)
		return refused(cmd, q, &dst, ms);
	rc = establish(cmd, q, &dst, ms, &s);
	if (rc) {
		if (s)
			hil_qp_destroy(s, "connect failed");
		hil_qp_destroy(q, "connect failed");
	}
	return rc;
}

int hil_op_disconnect(struct hil_cmd *cmd)
{
	struct hil_qp *q = hil_need_qp(cmd);
	struct hil_rec r;
	int rc;

	if (!q)
		return -ENOENT;
	if (!q->id)
		return hil_fail(cmd, -EINVAL, "QP %s has no rdma_cm id", q->name);
	rc = HIL_CM_RC(rdma_disconnect(q->id));
	hil_rec_begin(&r, "disconnect");
	hil_rec_str(&r, "qp", q->name);
	hil_rec_int(&r, "rc", rc);
	hil_rec_commit(&r);
	return rc;
}
