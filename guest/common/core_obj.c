// SPDX-License-Identifier: GPL-2.0-only
/*
 * The executor's objects, all named by the commands that make them, and their teardown:
 *
 *   device name=<ibdev> | addr=<ipv4>      pick the device (by name, or where an rdma_cm bind
 *                                          lands)
 *   pd name=N [rkey=global]                allocate a PD (global: the peer may RDMA WRITE/READ
 *                                          its QPs' buffers)
 *   cq name=N [depth=256] [poll=direct|softirq|workqueue|unbound] [vector=0]
 *   qp name=N pd= scq= rcq= [sq=64] [rq=64] [sge=1] [inline=0] [buf=4096] [max_wrs=]
 *      [sig=all|req]                       an RC QP without rdma_cm (left in RESET)
 *
 * Their destroy and the reset are core_teardown.c's.
 */
#include "core.h"

#define HIL_MAX_SLOTS 4096
#define HIL_MAX_SLOT_LEN (1U << 20)

struct hil_state hil;

/* ---- names ---- */

/* Is slot `i` of a table in use under this name? */
#define NAMED(table, i, nm) (hil.table[i].in_use && !strcmp(hil.table[i].name, (nm)))

struct hil_pd *hil_find_pd(const char *name)
{
	for (int i = 0; name && i < HIL_MAX_OBJS; i++)
		if (NAMED(pds, i, name))
			return &hil.pds[i];
	return NULL;
}

struct hil_cq *hil_find_cq(const char *name)
{
	for (int i = 0; name && i < HIL_MAX_OBJS; i++)
		if (NAMED(cqs, i, name))
			return &hil.cqs[i];
	return NULL;
}

struct hil_qp *hil_find_qp(const char *name)
{
	for (int i = 0; name && i < HIL_MAX_OBJS; i++)
		if (NAMED(qps, i, name))
			return &hil.qps[i];
	return NULL;
}

struct hil_listener *hil_find_listener(const char *name)
{
	for (int i = 0; name && i < HIL_MAX_OBJS; i++)
		if (NAMED(listeners, i, name))
			return &hil.listeners[i];
	return NULL;
}

int hil_check_new_name(struct hil_cmd *cmd, const char *name)
{
	bool taken = hil_find_pd(name) || hil_find_cq(name) || hil_find_qp(name) ||
		     hil_find_listener(name);

	return hil_check_name(cmd, name, taken);
}

struct hil_qp *hil_need_qp(struct hil_cmd *cmd)
{
	struct hil_qp *q = hil_find_qp(hil_arg(cmd, "qp"));

	if (!q)
		hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	return q;
}

static int need_device(struct hil_cmd *cmd)
{
	if (!hil.dev.dev)
		return hil_fail(cmd, -ENODEV, "no device: run \"device name=...\" first");
	return 0;
}

/* ---- device ---- */

/* The device an address is on: an rdma_cm id bound to it, then destroyed. */
static int device_by_addr(struct hil_cmd *cmd, const char *addr)
{
	static struct hil_cmctx probe = { .kind = HIL_CM_PROBE, .name = "probe" };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id;
	bool known;
	int rc;

	if (!hil_ipv4(addr, &sin.sin_addr.s_addr))
		return hil_fail(cmd, -EINVAL, "addr=%s is not an IPv4 address", addr);
	rc = hil_port_cm_id(&probe, &id);
	if (rc)
		return hil_fail(cmd, rc, "rdma_create_id failed");
	rc = HIL_CM_RC(rdma_bind_addr(id, (struct sockaddr *)&sin));
	known = !rc && !hil_port_device_of_id(id);
	hil_port_cm_destroy_id(id);
	if (rc)
		return hil_fail(cmd, rc, "rdma_bind_addr(%s) failed", addr);
	if (!known)
		return hil_fail(cmd, -ENODEV, "%s is not the address of an RDMA device", addr);
	return 0;
}

static void trace_device(const char *how)
{
	const struct hil_device *d = &hil.dev;
	struct hil_rec r;

	hil_rec_begin(&r, "device");
	hil_rec_str(&r, "name", d->name);
	hil_rec_str(&r, "how", how);
	hil_rec_uint(&r, "node_type", d->node_type);
	hil_rec_uint(&r, "max_qp_wr", d->max_qp_wr);
	hil_rec_uint(&r, "max_cqe", d->max_cqe);
	hil_rec_uint(&r, "max_qp_rd_atom", d->max_qp_rd_atom);
	hil_rec_uint(&r, "max_send_sge", d->max_send_sge);
	hil_rec_uint(&r, "max_recv_sge", d->max_recv_sge);
	if (d->max_fast_reg_page_list_len >= 0)
		hil_rec_uint(&r, "max_fast_reg_page_list_len",
			     (uint64_t)d->max_fast_reg_page_list_len);
	hil_rec_commit(&r);
}

int hil_op_device(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *addr = hil_arg(cmd, "addr");
	int rc;

	if (!!name == !!addr)
		return hil_fail(cmd, -EINVAL, "give name= or addr=");
	if (hil.dev.dev)
		return hil_fail(cmd, -EBUSY, "a device is in use: reset first");
	if (name && hil_port_device_find(name))
		return hil_fail(cmd, -ENODEV, "no RDMA device %s", name);
	rc = name ? 0 : device_by_addr(cmd, addr);
	if (!rc)
		rc = hil_port_device_open(cmd);
	if (rc) {
		hil_port_device_close();
		return rc;
	}
	trace_device(name ? "name" : "addr");
	return 0;
}

/* ---- PD and CQ ---- */

int hil_op_pd(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *rkey = hil_arg(cmd, "rkey");
	struct hil_pd *pd = NULL;
	struct hil_rec r;
	int rc;

	rc = need_device(cmd) ?: hil_check_new_name(cmd, name);
	if (rc)
		return rc;
	if (rkey && strcmp(rkey, "global"))
		return hil_fail(cmd, -EINVAL, "rkey=%s: only rkey=global is known", rkey);
	for (int i = 0; i < HIL_MAX_OBJS && !pd; i++)
		if (!hil.pds[i].in_use)
			pd = &hil.pds[i];
	if (!pd)
		return hil_fail(cmd, -ENOSPC, "too many PDs");
	memset(pd, 0, sizeof(*pd));
	pd->global_rkey = rkey != NULL;
	rc = hil_port_pd_alloc(pd);
	if (rc)
		return hil_fail(cmd, rc, HIL_VERB("alloc_pd") " failed");
	pd->in_use = true;
	hil_copy_str(pd->name, name, sizeof(pd->name));
	hil_rec_begin(&r, "create");
	hil_rec_str(&r, "kind", "pd");
	hil_rec_str(&r, "name", name);
	hil_port_pd_fields(&r, pd);
	hil_rec_commit(&r);
	return 0;
}

int hil_op_cq(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *poll = hil_arg(cmd, "poll") ?: "direct";
	struct hil_cq *cq = NULL;
	uint32_t depth, vector;
	struct hil_rec r;
	int rc;

	rc = need_device(cmd) ?: hil_check_new_name(cmd, name) ?:
	     hil_arg_u32(cmd, "depth", 256, &depth) ?: hil_arg_u32(cmd, "vector", 0, &vector);
	if (rc)
		return rc;
	if (!depth || depth > INT32_MAX)
		return hil_fail(cmd, -EINVAL, "depth=%u", depth);
	for (int i = 0; i < HIL_MAX_OBJS && !cq; i++)
		if (!hil.cqs[i].in_use)
			cq = &hil.cqs[i];
	if (!cq)
		return hil_fail(cmd, -ENOSPC, "too many CQs");
	rc = hil_port_cq_create(cmd, cq, poll, depth, vector);
	if (rc)
		return rc;
	cq->in_use = true;
	hil_copy_str(cq->name, name, sizeof(cq->name));
	cq->depth = depth;
	hil_atomic_set(&cq->ncqe, 0);
	cq->polled = 0;
	hil_rec_begin(&r, "create");
	hil_rec_str(&r, "kind", "cq");
	hil_rec_str(&r, "name", name);
	hil_rec_str(&r, "poll", poll);
	hil_rec_uint(&r, "depth", depth);
	hil_rec_uint(&r, "cqe", (uint64_t)cq->cq->cqe);
	hil_rec_commit(&r);
	return 0;
}

/* ---- pools: a QP's buffers and WR contexts ---- */

static void pool_free(struct hil_pool *pool)
{
	hil_port_pool_free(pool);
	for (uint32_t i = 0; i < pool->nchunks; i++)
		hil_free(pool->chunks[i]);
	hil_free(pool->chunks);
	hil_free(pool);
}

static struct hil_pool *pool_alloc(const struct hil_qp_params *p)
{
	struct hil_pool *pool = hil_calloc(1, sizeof(*pool));

	if (!pool)
		return NULL;
	hil_copy_str(pool->name, p->name, sizeof(pool->name));
	pool->slot_len = p->slot_len;
	pool->nslots[HIL_SQ] = p->sq ? p->sq : 1;
	pool->nslots[HIL_RQ] = p->rq ? p->rq : 1;
	pool->max_wrs = p->max_wrs;
	pool->maxchunks = (p->max_wrs + HIL_CTX_CHUNK - 1) / HIL_CTX_CHUNK;
	pool->chunks = hil_calloc(pool->maxchunks, sizeof(*pool->chunks));
	if (!pool->chunks || hil_port_pool_alloc(pool, p)) {
		pool_free(pool);
		return NULL;
	}
	return pool;
}

struct hil_ctx *hil_ctx_at(struct hil_pool *pool, uint32_t index)
{
	return &pool->chunks[index / HIL_CTX_CHUNK][index % HIL_CTX_CHUNK];
}

struct hil_ctx *hil_ctx_get(struct hil_pool *pool)
{
	uint32_t chunk = pool->used / HIL_CTX_CHUNK;
	struct hil_ctx *c;

	if (pool->used >= pool->max_wrs)
		return NULL;
	if (chunk >= pool->nchunks) {
		pool->chunks[chunk] = hil_calloc(HIL_CTX_CHUNK, sizeof(struct hil_ctx));
		if (!pool->chunks[chunk])
			return NULL;
		pool->nchunks = chunk + 1;
	}
	c = hil_ctx_at(pool, pool->used);
	c->pool = pool;
	c->index = pool->used++;
	return c;
}

struct hil_pool *hil_pool_by_qpn(uint32_t qp_num)
{
	for (int i = 0; i < HIL_MAX_OBJS; i++)
		if (hil.qps[i].in_use && hil.qps[i].pool->qp_num == qp_num)
			return hil.qps[i].pool;
	for (struct hil_pool *p = hil.graveyard; p; p = p->next_dead)
		if (p->qp_num == qp_num)
			return p;
	return NULL;
}

void hil_graveyard_flush(bool force)
{
	if (!force)
		for (int i = 0; i < HIL_MAX_OBJS; i++)
			if (hil.cqs[i].in_use)
				return;
	while (hil.graveyard) {
		struct hil_pool *p = hil.graveyard;

		hil.graveyard = p->next_dead;
		pool_free(p);
	}
}

/* ---- QPs ---- */

int hil_qp_params_parse(struct hil_cmd *cmd, struct hil_qp_params *p)
{
	const char *name = hil_arg(cmd, hil_arg(cmd, "qp") ? "qp" : "name");
	const char *sig = hil_arg(cmd, "sig") ?: "req";
	int rc;

	memset(p, 0, sizeof(*p));
	rc = need_device(cmd) ?: hil_check_new_name(cmd, name) ?:
	     hil_arg_u32(cmd, "sq", 64, &p->sq) ?: hil_arg_u32(cmd, "rq", 64, &p->rq) ?:
	     hil_arg_u32(cmd, "sge", 1, &p->sge) ?: hil_arg_u32(cmd, "inline", 0, &p->inline_len) ?:
	     hil_arg_u32(cmd, "buf", 4096, &p->slot_len) ?:
	     hil_arg_u32(cmd, "max_wrs", hil.max_wrs, &p->max_wrs);
	if (rc)
		return rc;
	hil_copy_str(p->name, name, sizeof(p->name));
	p->pd = hil_find_pd(hil_arg(cmd, "pd"));
	p->scq = hil_find_cq(hil_arg(cmd, "scq"));
	p->rcq = hil_find_cq(hil_arg(cmd, "rcq"));
	if (!p->pd)
		return hil_fail(cmd, -ENOENT, "no PD %s", hil_arg(cmd, "pd"));
	if (!p->scq || !p->rcq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", hil_arg(cmd, p->scq ? "rcq" : "scq"));
	if (!strcmp(sig, "all"))
		p->sig_all = true;
	else if (strcmp(sig, "req"))
		return hil_fail(cmd, -EINVAL, "sig=%s: all or req", sig);
	if (p->sq > HIL_MAX_SLOTS || p->rq > HIL_MAX_SLOTS)
		return hil_fail(cmd, -EINVAL, "sq and rq are at most %d", HIL_MAX_SLOTS);
	if (!p->slot_len || p->slot_len > HIL_MAX_SLOT_LEN)
		return hil_fail(cmd, -EINVAL, "buf is 1..%u bytes", HIL_MAX_SLOT_LEN);
	if (!p->max_wrs)
		return hil_fail(cmd, -EINVAL, "max_wrs=0");
	return 0;
}

struct hil_qp *hil_qp_alloc(struct hil_cmd *cmd, const struct hil_qp_params *p,
			    hil_verbs_qp_init_attr *attr)
{
	struct hil_qp *q = NULL;

	for (int i = 0; i < HIL_MAX_OBJS && !q; i++)
		if (!hil.qps[i].in_use && !hil.qps[i].pool)
			q = &hil.qps[i];
	if (!q) {
		hil_fail(cmd, -ENOSPC, "too many QPs");
		return NULL;
	}
	q->pool = pool_alloc(p);
	if (!q->pool) {
		hil_fail(cmd, -ENOMEM, "cannot allocate buffers for %u+%u slots of %u bytes", p->sq,
			 p->rq, p->slot_len);
		return NULL;
	}
	q->cm.kind = HIL_CM_QP;
	q->cm.name = q->name;
	q->cm.seen = 0;
	q->cm.status = 0;
	hil_copy_str(q->name, p->name, sizeof(q->name));
	q->pd = p->pd;
	q->scq = p->scq;
	q->rcq = p->rcq;
	q->sig_all = p->sig_all;
	q->inline_len = p->inline_len;
	q->peer = NULL;
	q->qp = NULL;
	q->id = NULL;

	/* ib_qp_init_attr and ibv_qp_init_attr name these alike */
	memset(attr, 0, sizeof(*attr));
	attr->send_cq = p->scq->cq;
	attr->recv_cq = p->rcq->cq;
	attr->cap.max_send_wr = p->sq;
	attr->cap.max_recv_wr = p->rq;
	attr->cap.max_send_sge = p->sge;
	attr->cap.max_recv_sge = p->sge;
	attr->cap.max_inline_data = p->inline_len;
	hil_port_qp_attr(q, attr);
	return q;
}

void hil_qp_abandon(struct hil_qp *q)
{
	hil_port_qp_release(q);
	if (q->pool)
		pool_free(q->pool);
	q->pool = NULL;
	q->in_use = false;
}

void hil_qp_created(struct hil_qp *q, struct rdma_cm_id *id, const hil_verbs_qp_init_attr *attr,
		    uint64_t cmd_id)
{
	struct hil_rec r;

	q->id = id;
	q->pool->qp_num = q->qp->qp_num;
	q->in_use = true;
	hil_rec_begin(&r, "create");
	hil_rec_str(&r, "kind", "qp");
	hil_rec_str(&r, "name", q->name);
	hil_rec_uint(&r, "qp_num", q->qp->qp_num);
	hil_rec_bool(&r, "cm", id != NULL);
	hil_rec_str(&r, "scq", q->scq->name);
	hil_rec_str(&r, "rcq", q->rcq->name);
	hil_rec_bool(&r, "sig_all", q->sig_all);
	hil_rec_uint(&r, "max_send_wr", attr->cap.max_send_wr);
	hil_rec_uint(&r, "max_recv_wr", attr->cap.max_recv_wr);
	hil_rec_uint(&r, "max_send_sge", attr->cap.max_send_sge);
	hil_rec_uint(&r, "max_inline_data", attr->cap.max_inline_data);
	hil_rec_uint(&r, "cmd", cmd_id);
	hil_rec_commit(&r);
}

int hil_op_qp(struct hil_cmd *cmd)
{
	hil_verbs_qp_init_attr attr;
	struct hil_qp_params p;
	struct hil_qp *q;
	int rc;

	rc = hil_qp_params_parse(cmd, &p);
	if (rc)
		return rc;
	q = hil_qp_alloc(cmd, &p, &attr);
	if (!q)
		return -ENOMEM;
	rc = hil_port_qp_create(cmd, q, &attr);
	if (rc) {
		hil_qp_abandon(q);
		return rc;
	}
	hil_qp_created(q, NULL, &attr, cmd->id);
	return 0;
}
