// SPDX-License-Identifier: GPL-2.0-only
/*
 * The executor's objects, named by the commands that make them, as in guest/kverbs:
 *
 *   device name=<ibdev> | addr=<ipv4>      pick a device librdmacm knows (by name, or by binding
 *                                          an rdma_cm id to the address)
 *   pd name=N [rkey=global]                ibv_alloc_pd; rkey=global: the QPs' buffers are
 *                                          registered for remote write and read (userspace has no
 *                                          global rkey; WRITE/READ use the peer's MR rkey)
 *   cq name=N [depth=256] [poll=direct] [vector=0]   ibv_create_cq, polled with ibv_poll_cq
 *   qp name=N pd= scq= rcq= [sq=64] [rq=64] [sge=1] [inline=0] [buf=4096] [max_wrs=]
 *      [sig=all|req]                       an RC QP with ibv_create_qp (left in RESET)
 *   destroy qp=N | cq=N | pd=N | listen=N
 *   reset                                  destroy everything, release the device
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uv.h"

#define UV_MAX_SLOTS 4096
#define UV_MAX_SLOT_LEN (1U << 20)
#define UV_CTX_CHUNK 256
#define UV_UNFINISHED_LISTED 8

/* ---- names ---- */

#define NAMED(table, i, nm) (uv.table[i].in_use && !strcmp(uv.table[i].name, (nm)))

struct uv_pd *uv_find_pd(const char *name)
{
	for (int i = 0; name && i < UV_MAX_OBJS; i++)
		if (NAMED(pds, i, name))
			return &uv.pds[i];
	return NULL;
}

struct uv_cq *uv_find_cq(const char *name)
{
	for (int i = 0; name && i < UV_MAX_OBJS; i++)
		if (NAMED(cqs, i, name))
			return &uv.cqs[i];
	return NULL;
}

struct uv_qp *uv_find_qp(const char *name)
{
	for (int i = 0; name && i < UV_MAX_OBJS; i++)
		if (NAMED(qps, i, name))
			return &uv.qps[i];
	return NULL;
}

struct uv_listener *uv_find_listener(const char *name)
{
	for (int i = 0; name && i < UV_MAX_OBJS; i++)
		if (NAMED(listeners, i, name))
			return &uv.listeners[i];
	return NULL;
}

int uv_check_name(struct hil_cmd *cmd, const char *name)
{
	bool taken = uv_find_pd(name) || uv_find_cq(name) || uv_find_qp(name) ||
		     uv_find_listener(name);

	return hil_check_name(cmd, name, taken);
}

int uv_need_device(struct hil_cmd *cmd)
{
	if (!uv.ctx)
		return hil_fail(cmd, -ENODEV, "no device: run \"device name=...\" first");
	return 0;
}

/* ---- device ---- */

static struct ibv_context *device_by_name(const char *name)
{
	for (int i = 0; uv.devs && uv.devs[i]; i++)
		if (!strcmp(ibv_get_device_name(uv.devs[i]->device), name))
			return uv.devs[i];
	return NULL;
}

static int device_by_addr(struct hil_cmd *cmd, const char *addr, struct ibv_context **out)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id;
	int rc;

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return hil_fail(cmd, -EINVAL, "addr=%s is not an IPv4 address", addr);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return hil_fail(cmd, -errno, "rdma_create_id failed");
	rc = rdma_bind_addr(id, (struct sockaddr *)&sin) ? -errno : 0;
	*out = id->verbs;
	rdma_destroy_id(id);
	if (rc)
		return hil_fail(cmd, rc, "rdma_bind_addr(%s) failed", addr);
	for (int i = 0; uv.devs && uv.devs[i]; i++)
		if (uv.devs[i] == *out)
			return 0;
	return hil_fail(cmd, -ENODEV, "%s is not the address of an RDMA device", addr);
}

int uv_op_device(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *addr = hil_arg(cmd, "addr");
	struct ibv_device_attr attr;
	struct ibv_context *ctx = NULL;
	struct uv_rec r;
	int rc;

	if (!!name == !!addr)
		return hil_fail(cmd, -EINVAL, "give name= or addr=");
	if (uv.ctx)
		return hil_fail(cmd, -EBUSY, "a device is in use: reset first");
	if (name) {
		ctx = device_by_name(name);
		if (!ctx)
			return hil_fail(cmd, -ENODEV, "no RDMA device %s", name);
	} else {
		rc = device_by_addr(cmd, addr, &ctx);
		if (rc)
			return rc;
	}
	rc = ibv_query_device(ctx, &attr);
	if (rc)
		return hil_fail(cmd, -rc, "ibv_query_device failed");
	uv.ctx = ctx;
	uv.max_sge = attr.max_sge > 0 ? (uint32_t)attr.max_sge : 0;
	uv_rec_begin(&r, "device");
	uv_rec_str(&r, "name", ibv_get_device_name(ctx->device));
	uv_rec_str(&r, "how", name ? "name" : "addr");
	uv_rec_uint(&r, "node_type", (uint64_t)ctx->device->node_type);
	uv_rec_uint(&r, "max_qp_wr", (uint64_t)attr.max_qp_wr);
	uv_rec_uint(&r, "max_cqe", (uint64_t)attr.max_cqe);
	uv_rec_uint(&r, "max_qp_rd_atom", (uint64_t)attr.max_qp_rd_atom);
	uv_rec_uint(&r, "max_send_sge", uv.max_sge);
	uv_rec_uint(&r, "max_recv_sge", uv.max_sge);
	uv_rec_commit(&r);
	return 0;
}

/* ---- PD and CQ ---- */

int uv_op_pd(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *rkey = hil_arg(cmd, "rkey");
	struct uv_pd *pd = NULL;
	struct uv_rec r;
	int rc;

	rc = uv_need_device(cmd) ?: uv_check_name(cmd, name);
	if (rc)
		return rc;
	if (rkey && strcmp(rkey, "global"))
		return hil_fail(cmd, -EINVAL, "rkey=%s: only rkey=global is known", rkey);
	for (int i = 0; i < UV_MAX_OBJS && !pd; i++)
		if (!uv.pds[i].in_use)
			pd = &uv.pds[i];
	if (!pd)
		return hil_fail(cmd, -ENOSPC, "too many PDs");
	pd->pd = ibv_alloc_pd(uv.ctx);
	if (!pd->pd)
		return hil_fail(cmd, errno ? -errno : -ENOMEM, "ibv_alloc_pd failed");
	pd->in_use = true;
	snprintf(pd->name, sizeof(pd->name), "%s", name);
	pd->remote = rkey != NULL;
	uv_rec_begin(&r, "create");
	uv_rec_str(&r, "kind", "pd");
	uv_rec_str(&r, "name", name);
	uv_rec_commit(&r);
	return 0;
}

int uv_op_cq(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	struct uv_cq *cq = NULL;
	uint32_t depth, vector;
	struct uv_rec r;
	int rc;

	rc = uv_need_device(cmd) ?: uv_check_name(cmd, name) ?:
	     hil_arg_u32(cmd, "depth", 256, &depth) ?: hil_arg_u32(cmd, "vector", 0, &vector);
	if (rc)
		return rc;
	if (!depth || depth > INT32_MAX)
		return hil_fail(cmd, -EINVAL, "depth=%u", depth);
	if (vector >= (uint32_t)uv.ctx->num_comp_vectors)
		return hil_fail(cmd, -EINVAL, "vector=%u: the device has %d", vector,
				uv.ctx->num_comp_vectors);
	for (int i = 0; i < UV_MAX_OBJS && !cq; i++)
		if (!uv.cqs[i].in_use)
			cq = &uv.cqs[i];
	if (!cq)
		return hil_fail(cmd, -ENOSPC, "too many CQs");
	cq->cq = ibv_create_cq(uv.ctx, (int)depth, NULL, NULL, (int)vector);
	if (!cq->cq)
		return hil_fail(cmd, errno ? -errno : -ENOMEM, "ibv_create_cq failed");
	cq->in_use = true;
	snprintf(cq->name, sizeof(cq->name), "%s", name);
	cq->depth = depth;
	cq->ncqe = 0;
	cq->polled = 0;
	uv_rec_begin(&r, "create");
	uv_rec_str(&r, "kind", "cq");
	uv_rec_str(&r, "name", name);
	uv_rec_str(&r, "poll", "direct");
	uv_rec_uint(&r, "depth", depth);
	uv_rec_uint(&r, "cqe", (uint64_t)cq->cq->cqe);
	uv_rec_commit(&r);
	return 0;
}

/* ---- pools: a QP's buffers (one MR) and WR contexts ---- */

static void pool_release_buffers(struct uv_pool *pool)
{
	if (pool->mr)
		ibv_dereg_mr(pool->mr);
	pool->mr = NULL;
	free(pool->buf);
	pool->buf = NULL;
}

static void pool_free(struct uv_pool *pool)
{
	pool_release_buffers(pool);
	free(pool->ctxs);
	free(pool);
}

static struct uv_pool *pool_alloc(const struct uv_qp_params *p)
{
	struct uv_pool *pool = calloc(1, sizeof(*pool));
	int access = IBV_ACCESS_LOCAL_WRITE;
	size_t bytes;

	if (!pool)
		return NULL;
	snprintf(pool->name, sizeof(pool->name), "%s", p->name);
	pool->slot_len = p->slot_len;
	pool->nslots[UV_SQ] = p->sq ? p->sq : 1;
	pool->nslots[UV_RQ] = p->rq ? p->rq : 1;
	pool->max_wrs = p->max_wrs;
	bytes = (size_t)(pool->nslots[UV_SQ] + pool->nslots[UV_RQ]) * pool->slot_len;
	bytes = (bytes + 4095) & ~(size_t)4095;
	pool->buf = aligned_alloc(4096, bytes);
	if (!pool->buf)
		goto err;
	memset(pool->buf, 0, bytes);
	if (p->pd->remote)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	pool->mr = ibv_reg_mr(p->pd->pd, pool->buf, bytes, access);
	if (!pool->mr)
		goto err;
	return pool;
err:
	pool_free(pool);
	return NULL;
}

uint8_t *uv_slot(struct uv_pool *pool, enum uv_queue q, uint32_t slot)
{
	size_t index = (q == UV_RQ ? pool->nslots[UV_SQ] : 0) + slot % pool->nslots[q];

	return pool->buf + index * pool->slot_len;
}

/* A fresh WR context and its index, or NULL when the QP has posted max_wrs WRs. */
struct uv_ctx *uv_ctx_get(struct uv_pool *pool, uint32_t *index)
{
	if (pool->used >= pool->max_wrs)
		return NULL;
	if (pool->used == pool->cap) {
		uint32_t cap = pool->cap + UV_CTX_CHUNK;
		struct uv_ctx *more = realloc(pool->ctxs, (size_t)cap * sizeof(*more));

		if (!more)
			return NULL;
		memset(more + pool->cap, 0, UV_CTX_CHUNK * sizeof(*more));
		pool->ctxs = more;
		pool->cap = cap;
	}
	*index = pool->used++;
	return &pool->ctxs[*index];
}

struct uv_pool *uv_pool_by_qpn(uint32_t qp_num)
{
	for (int i = 0; i < UV_MAX_OBJS; i++)
		if (uv.qps[i].in_use && uv.qps[i].pool->qp_num == qp_num)
			return uv.qps[i].pool;
	for (struct uv_pool *p = uv.graveyard; p; p = p->next_dead)
		if (p->qp_num == qp_num)
			return p;
	return NULL;
}

static void graveyard_flush(bool force)
{
	if (!force)
		for (int i = 0; i < UV_MAX_OBJS; i++)
			if (uv.cqs[i].in_use)
				return;
	while (uv.graveyard) {
		struct uv_pool *p = uv.graveyard;

		uv.graveyard = p->next_dead;
		pool_free(p);
	}
}

/* ---- QPs ---- */

int uv_qp_params_parse(struct hil_cmd *cmd, struct uv_qp_params *p)
{
	const char *name = hil_arg(cmd, hil_arg(cmd, "qp") ? "qp" : "name");
	const char *sig = hil_arg(cmd, "sig") ?: "req";
	int rc;

	memset(p, 0, sizeof(*p));
	rc = uv_need_device(cmd) ?: uv_check_name(cmd, name) ?:
	     hil_arg_u32(cmd, "sq", 64, &p->sq) ?: hil_arg_u32(cmd, "rq", 64, &p->rq) ?:
	     hil_arg_u32(cmd, "sge", 1, &p->sge) ?: hil_arg_u32(cmd, "inline", 0, &p->inline_len) ?:
	     hil_arg_u32(cmd, "buf", 4096, &p->slot_len) ?:
	     hil_arg_u32(cmd, "max_wrs", uv.max_wrs, &p->max_wrs);
	if (rc)
		return rc;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->pd = uv_find_pd(hil_arg(cmd, "pd"));
	p->scq = uv_find_cq(hil_arg(cmd, "scq"));
	p->rcq = uv_find_cq(hil_arg(cmd, "rcq"));
	if (!p->pd)
		return hil_fail(cmd, -ENOENT, "no PD %s", hil_arg(cmd, "pd"));
	if (!p->scq || !p->rcq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", hil_arg(cmd, p->scq ? "rcq" : "scq"));
	if (!strcmp(sig, "all"))
		p->sig_all = true;
	else if (strcmp(sig, "req"))
		return hil_fail(cmd, -EINVAL, "sig=%s: all or req", sig);
	if (p->sq > UV_MAX_SLOTS || p->rq > UV_MAX_SLOTS)
		return hil_fail(cmd, -EINVAL, "sq and rq are at most %d", UV_MAX_SLOTS);
	if (!p->slot_len || p->slot_len > UV_MAX_SLOT_LEN)
		return hil_fail(cmd, -EINVAL, "buf is 1..%u bytes", UV_MAX_SLOT_LEN);
	if (!p->max_wrs)
		return hil_fail(cmd, -EINVAL, "max_wrs=0");
	return 0;
}

/*
 * Takes a QP slot and makes its pool; fills `attr` for ibv_create_qp/rdma_create_qp. The QP is
 * not in use until uv_qp_created(); uv_qp_abandon() gives the slot back if creation fails.
 */
struct uv_qp *uv_qp_alloc(struct hil_cmd *cmd, const struct uv_qp_params *p,
			  struct ibv_qp_init_attr *attr)
{
	struct uv_qp *q = NULL;

	for (int i = 0; i < UV_MAX_OBJS && !q; i++)
		if (!uv.qps[i].in_use && !uv.qps[i].pool)
			q = &uv.qps[i];
	if (!q) {
		hil_fail(cmd, -ENOSPC, "too many QPs");
		return NULL;
	}
	memset(q, 0, sizeof(*q));
	q->pool = pool_alloc(p);
	if (!q->pool) {
		hil_fail(cmd, -ENOMEM, "cannot allocate and register %u+%u slots of %u bytes", p->sq,
			 p->rq, p->slot_len);
		return NULL;
	}
	q->cm.kind = UV_CM_QP;
	q->cm.name = q->name;
	snprintf(q->name, sizeof(q->name), "%s", p->name);
	q->pd = p->pd;
	q->scq = p->scq;
	q->rcq = p->rcq;
	q->sig_all = p->sig_all;

	memset(attr, 0, sizeof(*attr));
	attr->send_cq = p->scq->cq;
	attr->recv_cq = p->rcq->cq;
	attr->cap.max_send_wr = p->sq;
	attr->cap.max_recv_wr = p->rq;
	attr->cap.max_send_sge = p->sge;
	attr->cap.max_recv_sge = p->sge;
	attr->cap.max_inline_data = p->inline_len;
	attr->sq_sig_all = p->sig_all;
	attr->qp_type = IBV_QPT_RC;
	return q;
}

void uv_qp_abandon(struct uv_qp *q)
{
	if (q->pool)
		pool_free(q->pool);
	q->pool = NULL;
	q->in_use = false;
}

void uv_qp_created(struct uv_qp *q, struct ibv_qp *ibqp, struct rdma_cm_id *id,
		   const struct ibv_qp_init_attr *attr, uint64_t cmd_id)
{
	struct uv_rec r;

	q->qp = ibqp;
	q->id = id;
	q->pool->qp_num = ibqp->qp_num;
	q->in_use = true;
	uv_rec_begin(&r, "create");
	uv_rec_str(&r, "kind", "qp");
	uv_rec_str(&r, "name", q->name);
	uv_rec_uint(&r, "qp_num", ibqp->qp_num);
	uv_rec_bool(&r, "cm", id != NULL);
	uv_rec_str(&r, "scq", q->scq->name);
	uv_rec_str(&r, "rcq", q->rcq->name);
	uv_rec_bool(&r, "sig_all", q->sig_all);
	uv_rec_uint(&r, "max_send_wr", attr->cap.max_send_wr);
	uv_rec_uint(&r, "max_recv_wr", attr->cap.max_recv_wr);
	uv_rec_uint(&r, "max_send_sge", attr->cap.max_send_sge);
	uv_rec_uint(&r, "max_inline_data", attr->cap.max_inline_data);
	uv_rec_uint(&r, "cmd", cmd_id);
	uv_rec_commit(&r);
}

int uv_op_qp(struct hil_cmd *cmd)
{
	struct ibv_qp_init_attr attr;
	struct uv_qp_params p;
	struct ibv_qp *ibqp;
	struct uv_qp *q;
	int rc;

	rc = uv_qp_params_parse(cmd, &p);
	if (rc)
		return rc;
	q = uv_qp_alloc(cmd, &p, &attr);
	if (!q)
		return -ENOMEM;
	ibqp = ibv_create_qp(p.pd->pd, &attr);
	if (!ibqp) {
		rc = errno ? -errno : -EINVAL;
		uv_qp_abandon(q);
		return hil_fail(cmd, rc, "ibv_create_qp failed");
	}
	uv_qp_created(q, ibqp, NULL, &attr, cmd->id);
	return 0;
}

static bool unfinished(const struct uv_pool *pool, const struct uv_ctx *c)
{
	if (c->state != UV_CTX_POSTED || c->ncqe)
		return false;
	/* an unsignaled send older than a successful signaled one is done */
	return !(c->queue == UV_SQ && !c->signaled && c->seq < pool->sq_done_upto);
}

/* Posted WRs that never completed. */
static void trace_unfinished(struct uv_rec *r, const struct uv_pool *pool)
{
	uint32_t count = 0;

	uv_rec_printf(r, ",\"unfinished\":[");
	for (uint32_t i = 0; i < pool->used; i++) {
		const struct uv_ctx *c = &pool->ctxs[i];

		if (!unfinished(pool, c))
			continue;
		if (count < UV_UNFINISHED_LISTED)
			uv_rec_printf(r, "%s{\"queue\":\"%s\",\"wr_id\":%llu}", count ? "," : "",
				      c->queue == UV_SQ ? "sq" : "rq", (unsigned long long)c->wr_id);
		count++;
	}
	uv_rec_printf(r, "]");
	uv_rec_uint(r, "unfinished_count", count);
}

void uv_qp_destroy(struct uv_qp *q, const char *why)
{
	struct uv_rec r;
	int rc = 0;

	if (q->id) {
		rdma_destroy_qp(q->id);
		rc = rdma_destroy_id(q->id) ? -errno : 0;
	} else {
		rc = -ibv_destroy_qp(q->qp);
	}
	uv_rec_begin(&r, "destroy");
	uv_rec_str(&r, "kind", "qp");
	uv_rec_str(&r, "name", q->name);
	uv_rec_int(&r, "rc", rc);
	uv_rec_str(&r, "why", why);
	trace_unfinished(&r, q->pool);
	uv_rec_commit(&r);
	if (q->peer)
		q->peer->peer = NULL;
	q->peer = NULL;
	q->qp = NULL;
	q->id = NULL;
	q->in_use = false;
	/* completions already in a CQ may still name the QP */
	pool_release_buffers(q->pool);
	q->pool->next_dead = uv.graveyard;
	uv.graveyard = q->pool;
	q->pool = NULL;
}

static void trace_destroy(const char *kind, const char *name, const char *why, int rc)
{
	struct uv_rec r;

	uv_rec_begin(&r, "destroy");
	uv_rec_str(&r, "kind", kind);
	uv_rec_str(&r, "name", name);
	uv_rec_str(&r, "why", why);
	uv_rec_int(&r, "rc", rc);
	uv_rec_commit(&r);
}

static void cq_destroy(struct uv_cq *cq, const char *why)
{
	int rc = -ibv_destroy_cq(cq->cq);

	cq->cq = NULL;
	cq->in_use = false;
	trace_destroy("cq", cq->name, why, rc);
	graveyard_flush(false);
}

static void pd_destroy(struct uv_pd *pd, const char *why)
{
	int rc = -ibv_dealloc_pd(pd->pd);

	pd->pd = NULL;
	pd->in_use = false;
	trace_destroy("pd", pd->name, why, rc);
}

static int destroy_cq_cmd(struct hil_cmd *cmd, const char *name)
{
	struct uv_cq *cq = uv_find_cq(name);

	if (!cq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", name);
	for (int i = 0; i < UV_MAX_OBJS; i++) {
		if (uv.qps[i].in_use && (uv.qps[i].scq == cq || uv.qps[i].rcq == cq))
			return hil_fail(cmd, -EBUSY, "QP %s uses CQ %s", uv.qps[i].name, name);
		if (uv.listeners[i].in_use &&
		    (uv.listeners[i].qp.scq == cq || uv.listeners[i].qp.rcq == cq))
			return hil_fail(cmd, -EBUSY, "listener %s uses CQ %s", uv.listeners[i].name,
					name);
	}
	cq_destroy(cq, "command");
	return 0;
}

static int destroy_pd_cmd(struct hil_cmd *cmd, const char *name)
{
	struct uv_pd *pd = uv_find_pd(name);

	if (!pd)
		return hil_fail(cmd, -ENOENT, "no PD %s", name);
	for (int i = 0; i < UV_MAX_OBJS; i++) {
		if (uv.qps[i].in_use && uv.qps[i].pd == pd)
			return hil_fail(cmd, -EBUSY, "QP %s uses PD %s", uv.qps[i].name, name);
		if (uv.listeners[i].in_use && uv.listeners[i].qp.pd == pd)
			return hil_fail(cmd, -EBUSY, "listener %s uses PD %s", uv.listeners[i].name,
					name);
	}
	pd_destroy(pd, "command");
	return 0;
}

int uv_op_destroy(struct hil_cmd *cmd)
{
	const char *kind, *name;

	if (cmd->nargs != 1)
		return hil_fail(cmd, -EINVAL, "destroy one of qp=, cq=, pd=, listen=");
	kind = cmd->key[0];
	name = cmd->val[0];
	if (!strcmp(kind, "qp")) {
		struct uv_qp *q = uv_find_qp(name);

		if (!q)
			return hil_fail(cmd, -ENOENT, "no QP %s", name);
		uv_qp_destroy(q, "command");
		return 0;
	}
	if (!strcmp(kind, "listen")) {
		struct uv_listener *l = uv_find_listener(name);

		if (!l)
			return hil_fail(cmd, -ENOENT, "no listener %s", name);
		uv_listener_destroy(l);
		return 0;
	}
	if (!strcmp(kind, "cq"))
		return destroy_cq_cmd(cmd, name);
	return destroy_pd_cmd(cmd, name);
}

/* Everything, in dependency order. */
void uv_teardown_all(const char *why)
{
	for (int i = 0; i < UV_MAX_OBJS; i++)
		if (uv.qps[i].in_use)
			uv_qp_destroy(&uv.qps[i], why);
	for (int i = 0; i < UV_MAX_OBJS; i++)
		if (uv.listeners[i].in_use)
			uv_listener_destroy(&uv.listeners[i]);
	uv_cm_release();
	for (int i = 0; i < UV_MAX_OBJS; i++)
		if (uv.cqs[i].in_use)
			cq_destroy(&uv.cqs[i], why);
	graveyard_flush(true);
	for (int i = 0; i < UV_MAX_OBJS; i++)
		if (uv.pds[i].in_use)
			pd_destroy(&uv.pds[i], why);
	if (uv.ctx) {
		struct uv_rec r;

		uv_rec_begin(&r, "destroy");
		uv_rec_str(&r, "kind", "device");
		uv_rec_str(&r, "name", ibv_get_device_name(uv.ctx->device));
		uv_rec_str(&r, "why", why);
		uv_rec_commit(&r);
		uv.ctx = NULL;
	}
}

int uv_op_reset(struct hil_cmd *cmd)
{
	(void)cmd;
	uv_teardown_all("reset");
	return 0;
}
