// SPDX-License-Identifier: GPL-2.0-only
/*
 * The executor's objects, all named by the commands that make them: the device, PDs, CQs (with
 * the poll context asked for), QPs (plain ib_create_qp ones here; rdma_cm ones in kv_cm.c) with
 * their buffers and work request contexts, and their teardown.
 *
 *   device name=<ibdev> | addr=<ipv4>      pick the device (by name, or by an rdma_cm bind)
 *   pd name=N [rkey=global]                ib_alloc_pd (global: IB_PD_UNSAFE_GLOBAL_RKEY,
 *                                          which RDMA WRITE/READ to a peer's buffers needs)
 *   cq name=N [depth=256] [poll=direct|softirq|workqueue|unbound] [vector=0]   ib_alloc_cq
 *   qp name=N pd= scq= rcq= [sq=64] [rq=64] [sge=1] [inline=0] [buf=4096] [max_wrs=]
 *      [sig=all|req]                       an RC QP with ib_create_qp (left in RESET)
 *   destroy qp=N | cq=N | pd=N | listen=N
 *   reset                                  destroy everything, release the device
 */
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

#include "kv.h"

#define KV_MAX_SLOTS 4096
#define KV_MAX_SLOT_LEN (1U << 20)

/* ---- names ---- */

/* Is slot `i` of a table in use under this name? */
#define NAMED(table, i, nm) (kv.table[i].in_use && !strcmp(kv.table[i].name, (nm)))

struct kv_pd *kv_find_pd(const char *name)
{
	int i;

	for (i = 0; name && i < KV_MAX_OBJS; i++)
		if (NAMED(pds, i, name))
			return &kv.pds[i];
	return NULL;
}

struct kv_cq *kv_find_cq(const char *name)
{
	int i;

	for (i = 0; name && i < KV_MAX_OBJS; i++)
		if (NAMED(cqs, i, name))
			return &kv.cqs[i];
	return NULL;
}

struct kv_qp *kv_find_qp(const char *name)
{
	int i;

	for (i = 0; name && i < KV_MAX_OBJS; i++)
		if (NAMED(qps, i, name))
			return &kv.qps[i];
	return NULL;
}

struct kv_listener *kv_find_listener(const char *name)
{
	int i;

	for (i = 0; name && i < KV_MAX_OBJS; i++)
		if (NAMED(listeners, i, name))
			return &kv.listeners[i];
	return NULL;
}

bool kv_name_taken(const char *name)
{
	return kv_find_pd(name) || kv_find_cq(name) || kv_find_qp(name) || kv_find_listener(name);
}

int kv_check_name(struct hil_cmd *cmd, const char *name)
{
	return hil_check_name(cmd, name, kv_name_taken(name));
}

static int need_device(struct hil_cmd *cmd)
{
	if (!kv.dev)
		return hil_fail(cmd, -ENODEV, "no device: run \"device name=...\" first");
	return 0;
}

/* ---- device ---- */

int kv_op_device(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *addr = hil_arg(cmd, "addr");
	struct ib_device *dev = NULL;
	struct kv_rec r;

	if (!!name == !!addr)
		return hil_fail(cmd, -EINVAL, "give name= or addr=");
	if (kv.dev)
		return hil_fail(cmd, -EBUSY, "a device is in use: reset first");
	if (name) {
		dev = kv_device_by_name(name);
		if (!dev)
			return hil_fail(cmd, -ENODEV, "no RDMA device %s", name);
	} else {
		static struct kv_cmctx probe = { .kind = KV_CM_PROBE, .name = "probe" };
		struct sockaddr_in sin = { .sin_family = AF_INET };
		struct rdma_cm_id *id;
		int rc;

		if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
			return hil_fail(cmd, -EINVAL, "addr=%s is not an IPv4 address", addr);
		id = rdma_create_id(&init_net, kv_cm_handler, &probe, RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(id))
			return hil_fail(cmd, PTR_ERR(id), "rdma_create_id failed");
		rc = rdma_bind_addr(id, (struct sockaddr *)&sin);
		if (!rc)
			dev = id->device;
		rdma_destroy_id(id);
		if (rc)
			return hil_fail(cmd, rc, "rdma_bind_addr(%s) failed", addr);
		if (!dev || !kv_device_known(dev))
			return hil_fail(cmd, -ENODEV, "%s is not the address of an RDMA device", addr);
	}
	kv.dev = dev;
	kv_rec_begin(&r, "device");
	kv_rec_str(&r, "name", dev_name(&dev->dev));
	kv_rec_str(&r, "how", name ? "name" : "addr");
	kv_rec_uint(&r, "node_type", dev->node_type);
	kv_rec_uint(&r, "max_qp_wr", dev->attrs.max_qp_wr);
	kv_rec_uint(&r, "max_cqe", dev->attrs.max_cqe);
	kv_rec_uint(&r, "max_qp_rd_atom", dev->attrs.max_qp_rd_atom);
	kv_rec_uint(&r, "max_send_sge", dev->attrs.max_send_sge);
	kv_rec_uint(&r, "max_recv_sge", dev->attrs.max_recv_sge);
	kv_rec_uint(&r, "max_fast_reg_page_list_len", dev->attrs.max_fast_reg_page_list_len);
	kv_rec_commit(&r);
	return 0;
}

/* ---- PD ---- */

int kv_op_pd(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *rkey = hil_arg(cmd, "rkey");
	struct kv_pd *pd = NULL;
	struct ib_pd *ibpd;
	struct kv_rec r;
	int i, rc;

	rc = need_device(cmd) ?: kv_check_name(cmd, name);
	if (rc)
		return rc;
	if (rkey && strcmp(rkey, "global"))
		return hil_fail(cmd, -EINVAL, "rkey=%s: only rkey=global is known", rkey);
	for (i = 0; i < KV_MAX_OBJS && !pd; i++)
		if (!kv.pds[i].in_use)
			pd = &kv.pds[i];
	if (!pd)
		return hil_fail(cmd, -ENOSPC, "too many PDs");
	ibpd = ib_alloc_pd(kv.dev, rkey ? IB_PD_UNSAFE_GLOBAL_RKEY : 0);
	if (IS_ERR(ibpd))
		return hil_fail(cmd, PTR_ERR(ibpd), "ib_alloc_pd failed");
	memset(pd, 0, sizeof(*pd));
	pd->in_use = true;
	strscpy(pd->name, name, sizeof(pd->name));
	pd->pd = ibpd;
	pd->global_rkey = !!rkey;
	kv_rec_begin(&r, "create");
	kv_rec_str(&r, "kind", "pd");
	kv_rec_str(&r, "name", name);
	kv_rec_uint(&r, "local_dma_lkey", ibpd->local_dma_lkey);
	if (rkey)
		kv_rec_uint(&r, "rkey", ibpd->unsafe_global_rkey);
	kv_rec_commit(&r);
	return 0;
}

/* ---- CQ ---- */

static const char *const poll_names[] = {
	[IB_POLL_SOFTIRQ] = "softirq",
	[IB_POLL_WORKQUEUE] = "workqueue",
	[IB_POLL_UNBOUND_WORKQUEUE] = "unbound",
	[IB_POLL_DIRECT] = "direct",
};

int kv_op_cq(struct hil_cmd *cmd)
{
	const char *name = hil_arg(cmd, "name");
	const char *poll = hil_arg(cmd, "poll") ?: "direct";
	enum ib_poll_context ctx = IB_POLL_DIRECT;
	struct kv_cq *cq = NULL;
	struct ib_cq *ibcq;
	struct kv_rec r;
	u32 depth, vector;
	unsigned int i;
	int rc;

	rc = need_device(cmd) ?: kv_check_name(cmd, name) ?:
	     hil_arg_u32(cmd, "depth", 256, &depth) ?: hil_arg_u32(cmd, "vector", 0, &vector);
	if (rc)
		return rc;
	for (i = 0; i < ARRAY_SIZE(poll_names); i++) {
		if (poll_names[i] && !strcmp(poll_names[i], poll)) {
			ctx = i;
			break;
		}
	}
	if (i == ARRAY_SIZE(poll_names))
		return hil_fail(cmd, -EINVAL, "poll=%s: direct, softirq, workqueue or unbound", poll);
	if (!depth)
		return hil_fail(cmd, -EINVAL, "depth=0");
	for (i = 0; i < KV_MAX_OBJS && !cq; i++)
		if (!kv.cqs[i].in_use)
			cq = &kv.cqs[i];
	if (!cq)
		return hil_fail(cmd, -ENOSPC, "too many CQs");
	ibcq = ib_alloc_cq(kv.dev, cq, depth, vector, ctx);
	if (IS_ERR(ibcq))
		return hil_fail(cmd, PTR_ERR(ibcq), "ib_alloc_cq failed");
	cq->in_use = true;
	strscpy(cq->name, name, sizeof(cq->name));
	cq->cq = ibcq;
	cq->poll = ctx;
	cq->depth = depth;
	atomic_set(&cq->ncqe, 0);
	cq->polled = 0;
	kv_rec_begin(&r, "create");
	kv_rec_str(&r, "kind", "cq");
	kv_rec_str(&r, "name", name);
	kv_rec_str(&r, "poll", poll);
	kv_rec_uint(&r, "depth", depth);
	kv_rec_uint(&r, "cqe", ibcq->cqe);
	kv_rec_commit(&r);
	return 0;
}

/* ---- pools: a QP's buffers and WR contexts ---- */

static void pool_free(struct kv_pool *pool)
{
	unsigned int q, i;

	for (q = 0; q < 2; q++) {
		if (!pool->slots[q])
			continue;
		for (i = 0; i < pool->nslots[q]; i++) {
			struct kv_slot *s = &pool->slots[q][i];

			if (!s->va)
				continue;
			ib_dma_unmap_single(pool->dev, s->dma, pool->slot_len, DMA_BIDIRECTIONAL);
			kfree(s->va);
		}
		kfree(pool->slots[q]);
	}
	kfree(pool->bench_rq);
	kfree(pool->bench_rwrs);
	kfree(pool->bench_rsges);
	for (i = 0; i < pool->nchunks; i++)
		kfree(pool->chunks[i]);
	kfree(pool->chunks);
	kfree(pool);
}

static struct kv_pool *pool_alloc(const struct kv_qp_params *p)
{
	struct kv_pool *pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	unsigned int q, i;

	if (!pool)
		return NULL;
	INIT_LIST_HEAD(&pool->node);
	strscpy(pool->name, p->name, sizeof(pool->name));
	pool->dev = kv.dev;
	pool->slot_len = p->slot_len;
	pool->nslots[KV_SQ] = max(p->sq, 1U);
	pool->nslots[KV_RQ] = max(p->rq, 1U);
	pool->maxchunks = DIV_ROUND_UP(p->max_wrs, KV_CHUNK);
	pool->chunks = kcalloc(pool->maxchunks, sizeof(*pool->chunks), GFP_KERNEL);
	if (!pool->chunks)
		goto err;
	for (q = 0; q < 2; q++) {
		pool->slots[q] = kcalloc(pool->nslots[q], sizeof(struct kv_slot), GFP_KERNEL);
		if (!pool->slots[q])
			goto err;
		for (i = 0; i < pool->nslots[q]; i++) {
			struct kv_slot *s = &pool->slots[q][i];
			void *va = kzalloc(pool->slot_len, GFP_KERNEL);
			u64 dma;

			if (!va)
				goto err;
			dma = ib_dma_map_single(kv.dev, va, pool->slot_len, DMA_BIDIRECTIONAL);
			if (ib_dma_mapping_error(kv.dev, dma)) {
				kfree(va);
				goto err;
			}
			s->va = va;
			s->dma = dma;
		}
	}
	return pool;
err:
	pool_free(pool);
	return NULL;
}

/* A fresh WR context from the pool, or NULL when the QP has posted max_wrs WRs. */
struct kv_ctx *kv_ctx_get(struct kv_pool *pool)
{
	u32 chunk = pool->used / KV_CHUNK;
	struct kv_ctx *c;

	if (chunk >= pool->maxchunks)
		return NULL;
	if (chunk >= pool->nchunks) {
		pool->chunks[chunk] = kcalloc(KV_CHUNK, sizeof(struct kv_ctx), GFP_KERNEL);
		if (!pool->chunks[chunk])
			return NULL;
		pool->nchunks = chunk + 1;
	}
	c = &pool->chunks[chunk][pool->used % KV_CHUNK];
	pool->used++;
	c->cqe.done = kv_done;
	c->pool = pool;
	return c;
}

static void graveyard_flush(bool force)
{
	struct kv_pool *pool, *tmp;
	int i;

	if (!force)
		for (i = 0; i < KV_MAX_OBJS; i++)
			if (kv.cqs[i].in_use)
				return;
	list_for_each_entry_safe(pool, tmp, &kv.graveyard, node) {
		list_del(&pool->node);
		pool_free(pool);
	}
}

/* ---- QPs ---- */

int kv_qp_params_parse(struct hil_cmd *cmd, struct kv_qp_params *p)
{
	const char *name = hil_arg(cmd, hil_arg(cmd, "qp") ? "qp" : "name");
	const char *sig = hil_arg(cmd, "sig") ?: "req";
	int rc;

	memset(p, 0, sizeof(*p));
	rc = need_device(cmd) ?: kv_check_name(cmd, name) ?:
	     hil_arg_u32(cmd, "sq", 64, &p->sq) ?: hil_arg_u32(cmd, "rq", 64, &p->rq) ?:
	     hil_arg_u32(cmd, "sge", 1, &p->sge) ?: hil_arg_u32(cmd, "inline", 0, &p->inline_len) ?:
	     hil_arg_u32(cmd, "buf", 4096, &p->slot_len) ?:
	     hil_arg_u32(cmd, "max_wrs", kv.max_wrs, &p->max_wrs);
	if (rc)
		return rc;
	strscpy(p->name, name, sizeof(p->name));
	p->pd = kv_find_pd(hil_arg(cmd, "pd"));
	p->scq = kv_find_cq(hil_arg(cmd, "scq"));
	p->rcq = kv_find_cq(hil_arg(cmd, "rcq"));
	if (!p->pd)
		return hil_fail(cmd, -ENOENT, "no PD %s", hil_arg(cmd, "pd"));
	if (!p->scq || !p->rcq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", hil_arg(cmd, p->scq ? "rcq" : "scq"));
	if (!strcmp(sig, "all"))
		p->sig_all = true;
	else if (strcmp(sig, "req"))
		return hil_fail(cmd, -EINVAL, "sig=%s: all or req", sig);
	if (p->sq > KV_MAX_SLOTS || p->rq > KV_MAX_SLOTS)
		return hil_fail(cmd, -EINVAL, "sq and rq are at most %d", KV_MAX_SLOTS);
	if (!p->slot_len || p->slot_len > KV_MAX_SLOT_LEN)
		return hil_fail(cmd, -EINVAL, "buf is 1..%u bytes", KV_MAX_SLOT_LEN);
	if (!p->max_wrs)
		return hil_fail(cmd, -EINVAL, "max_wrs=0");
	return 0;
}

/*
 * Takes a QP slot and makes its pool; fills `attr` for ib_create_qp/rdma_create_qp. The QP is
 * not in use until kv_qp_created(); kv_qp_abandon() gives the slot back if creation fails.
 */
struct kv_qp *kv_qp_alloc(struct hil_cmd *cmd, const struct kv_qp_params *p,
			  struct ib_qp_init_attr *attr)
{
	struct kv_qp *q = NULL;
	int i;

	for (i = 0; i < KV_MAX_OBJS && !q; i++)
		if (!kv.qps[i].in_use && !kv.qps[i].pool)
			q = &kv.qps[i];
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
	q->cm.kind = KV_CM_QP;
	q->cm.name = q->name;
	q->cm.seen = 0;
	q->cm.status = 0;
	strscpy(q->name, p->name, sizeof(q->name));
	q->pd = p->pd;
	q->scq = p->scq;
	q->rcq = p->rcq;
	q->sig_all = p->sig_all;
	q->inline_len = p->inline_len;
	q->peer = NULL;
	q->qp = NULL;
	q->id = NULL;
	q->mrs = NULL;
	q->nmrs = 0;

	memset(attr, 0, sizeof(*attr));
	attr->event_handler = kv_qp_event;
	attr->qp_context = q->pool;
	attr->send_cq = p->scq->cq;
	attr->recv_cq = p->rcq->cq;
	attr->cap.max_send_wr = p->sq;
	attr->cap.max_recv_wr = p->rq;
	attr->cap.max_send_sge = p->sge;
	attr->cap.max_recv_sge = p->sge;
	attr->cap.max_inline_data = p->inline_len;
	attr->sq_sig_type = p->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	attr->qp_type = IB_QPT_RC;
	return q;
}

void kv_qp_abandon(struct kv_qp *q)
{
	kv_qp_mrs_free(q);
	if (q->pool)
		pool_free(q->pool);
	q->pool = NULL;
	q->in_use = false;
}

void kv_qp_created(struct kv_qp *q, struct ib_qp *ibqp, struct rdma_cm_id *id,
		   const struct ib_qp_init_attr *attr, u64 cmd_id)
{
	struct kv_rec r;

	q->qp = ibqp;
	q->id = id;
	q->pool->qp_num = ibqp->qp_num;
	q->in_use = true;
	kv_rec_begin(&r, "create");
	kv_rec_str(&r, "kind", "qp");
	kv_rec_str(&r, "name", q->name);
	kv_rec_uint(&r, "qp_num", ibqp->qp_num);
	kv_rec_bool(&r, "cm", !!id);
	kv_rec_str(&r, "scq", q->scq->name);
	kv_rec_str(&r, "rcq", q->rcq->name);
	kv_rec_bool(&r, "sig_all", q->sig_all);
	kv_rec_uint(&r, "max_send_wr", attr->cap.max_send_wr);
	kv_rec_uint(&r, "max_recv_wr", attr->cap.max_recv_wr);
	kv_rec_uint(&r, "max_send_sge", attr->cap.max_send_sge);
	kv_rec_uint(&r, "max_inline_data", attr->cap.max_inline_data);
	kv_rec_uint(&r, "cmd", cmd_id);
	kv_rec_commit(&r);
}

int kv_op_qp(struct hil_cmd *cmd)
{
	struct ib_qp_init_attr attr;
	struct kv_qp_params p;
	struct kv_qp *q;
	struct ib_qp *ibqp;
	int rc;

	rc = kv_qp_params_parse(cmd, &p);
	if (rc)
		return rc;
	q = kv_qp_alloc(cmd, &p, &attr);
	if (!q)
		return -ENOMEM;
	ibqp = ib_create_qp(p.pd->pd, &attr);
	if (IS_ERR(ibqp)) {
		kv_qp_abandon(q);
		return hil_fail(cmd, PTR_ERR(ibqp), "ib_create_qp failed");
	}
	kv_qp_created(q, ibqp, NULL, &attr, cmd->id);
	return 0;
}

/* Posted WRs that never completed (unsignaled SQ WRs older than a signaled success count as done). */
static void trace_unfinished(struct kv_rec *r, struct kv_pool *pool)
{
	u32 i, count = 0, listed = 0;

	kv_rec_printf(r, ",\"unfinished\":[");
	for (i = 0; i < pool->used; i++) {
		struct kv_ctx *c = &pool->chunks[i / KV_CHUNK][i % KV_CHUNK];

		if (c->state != KV_CTX_POSTED || c->bench || atomic_read(&c->ncqe))
			continue;
		if (c->queue == KV_SQ && !c->signaled && c->seq < pool->sq_done_upto)
			continue;
		if (listed < 8) {
			kv_rec_printf(r, "%s{\"queue\":\"%s\",\"wr_id\":%llu}", listed ? "," : "",
				      c->queue == KV_SQ ? "sq" : "rq", c->wr_id);
			listed++;
		}
		count++;
	}
	kv_rec_printf(r, "]");
	kv_rec_uint(r, "unfinished_count", count);
}

void kv_qp_destroy(struct kv_qp *q, const char *why)
{
	struct kv_rec r;
	int rc = 0;

	if (q->id) {
		rdma_destroy_qp(q->id);
		rdma_destroy_id(q->id);
	} else {
		rc = ib_destroy_qp(q->qp);
	}
	kv_rec_begin(&r, "destroy");
	kv_rec_str(&r, "kind", "qp");
	kv_rec_str(&r, "name", q->name);
	kv_rec_int(&r, "rc", rc);
	kv_rec_str(&r, "why", why);
	trace_unfinished(&r, q->pool);
	kv_rec_commit(&r);
	/* no WR of the QP can use its MRs any more */
	kv_qp_mrs_free(q);
	if (q->peer)
		q->peer->peer = NULL;
	q->peer = NULL;
	q->qp = NULL;
	q->id = NULL;
	q->in_use = false;
	/* completions already in a CQ may still point into the pool */
	list_add_tail(&q->pool->node, &kv.graveyard);
	q->pool = NULL;
}

static void trace_destroy(const char *kind, const char *name, const char *why)
{
	struct kv_rec r;

	kv_rec_begin(&r, "destroy");
	kv_rec_str(&r, "kind", kind);
	kv_rec_str(&r, "name", name);
	kv_rec_str(&r, "why", why);
	kv_rec_commit(&r);
}

static void cq_destroy(struct kv_cq *cq, const char *why)
{
	ib_free_cq(cq->cq);
	cq->cq = NULL;
	cq->in_use = false;
	trace_destroy("cq", cq->name, why);
	graveyard_flush(false);
}

static void pd_destroy(struct kv_pd *pd, const char *why)
{
	ib_dealloc_pd(pd->pd);
	pd->pd = NULL;
	pd->in_use = false;
	trace_destroy("pd", pd->name, why);
}

int kv_op_destroy(struct hil_cmd *cmd)
{
	const char *name;
	int i;

	if (cmd->nargs != 1)
		return hil_fail(cmd, -EINVAL, "destroy one of qp=, cq=, pd=, listen=");
	name = cmd->val[0];
	if (!strcmp(cmd->key[0], "qp")) {
		struct kv_qp *q = kv_find_qp(name);

		if (!q)
			return hil_fail(cmd, -ENOENT, "no QP %s", name);
		kv_qp_destroy(q, "command");
	} else if (!strcmp(cmd->key[0], "listen")) {
		struct kv_listener *l = kv_find_listener(name);

		if (!l)
			return hil_fail(cmd, -ENOENT, "no listener %s", name);
		kv_listener_destroy(l);
	} else if (!strcmp(cmd->key[0], "cq")) {
		struct kv_cq *cq = kv_find_cq(name);

		if (!cq)
			return hil_fail(cmd, -ENOENT, "no CQ %s", name);
		for (i = 0; i < KV_MAX_OBJS; i++) {
			if (kv.qps[i].in_use && (kv.qps[i].scq == cq || kv.qps[i].rcq == cq))
				return hil_fail(cmd, -EBUSY, "QP %s uses CQ %s", kv.qps[i].name, name);
			if (kv.listeners[i].in_use &&
			    (kv.listeners[i].qp.scq == cq || kv.listeners[i].qp.rcq == cq))
				return hil_fail(cmd, -EBUSY, "listener %s uses CQ %s",
						kv.listeners[i].name, name);
		}
		cq_destroy(cq, "command");
	} else {
		struct kv_pd *pd = kv_find_pd(name);

		if (!pd)
			return hil_fail(cmd, -ENOENT, "no PD %s", name);
		for (i = 0; i < KV_MAX_OBJS; i++) {
			if (kv.qps[i].in_use && kv.qps[i].pd == pd)
				return hil_fail(cmd, -EBUSY, "QP %s uses PD %s", kv.qps[i].name, name);
			if (kv.listeners[i].in_use && kv.listeners[i].qp.pd == pd)
				return hil_fail(cmd, -EBUSY, "listener %s uses PD %s",
						kv.listeners[i].name, name);
		}
		pd_destroy(pd, "command");
	}
	return 0;
}

/* Everything, in dependency order. The caller holds exec_lock. */
void kv_teardown_all(const char *why)
{
	int i;

	for (i = 0; i < KV_MAX_OBJS; i++)
		if (kv.qps[i].in_use)
			kv_qp_destroy(&kv.qps[i], why);
	for (i = 0; i < KV_MAX_OBJS; i++)
		if (kv.listeners[i].in_use)
			kv_listener_destroy(&kv.listeners[i]);
	for (i = 0; i < KV_MAX_OBJS; i++)
		if (kv.cqs[i].in_use)
			cq_destroy(&kv.cqs[i], why);
	graveyard_flush(true);
	for (i = 0; i < KV_MAX_OBJS; i++)
		if (kv.pds[i].in_use)
			pd_destroy(&kv.pds[i], why);
	if (kv.dev) {
		trace_destroy("device", dev_name(&kv.dev->dev), why);
		kv.dev = NULL;
	}
}

int kv_op_reset(struct hil_cmd *cmd)
{
	kv_teardown_all("reset");
	return 0;
}
