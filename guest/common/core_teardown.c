// SPDX-License-Identifier: GPL-2.0-only
/*
 * The teardown of the executor's objects, by name or all at once:
 *
 *   destroy qp=N | cq=N | pd=N | listen=N
 *   reset                                  destroy everything, release the device
 *
 * A destroyed QP's trace record lists the WRs it posted that never completed.
 */
#include "core.h"

#define HIL_UNFINISHED_LISTED 8

static bool unfinished(struct hil_pool *pool, struct hil_ctx *c)
{
	if (c->state != HIL_CTX_POSTED || c->bench || hil_atomic_read(&c->ncqe))
		return false;
	/* an unsignaled send older than a successful signaled one is done */
	return !(c->queue == HIL_SQ && !c->signaled && c->seq < pool->sq_done_upto);
}

/* Posted WRs that never completed. */
static void trace_unfinished(struct hil_rec *r, struct hil_pool *pool)
{
	uint32_t count = 0;

	hil_rec_printf(r, ",\"unfinished\":[");
	for (uint32_t i = 0; i < pool->used; i++) {
		struct hil_ctx *c = hil_ctx_at(pool, i);

		if (!unfinished(pool, c))
			continue;
		if (count < HIL_UNFINISHED_LISTED)
			hil_rec_printf(r, "%s{\"queue\":\"%s\",\"wr_id\":%llu}", count ? "," : "",
				       c->queue == HIL_SQ ? "sq" : "rq",
				       (unsigned long long)c->wr_id);
		count++;
	}
	hil_rec_printf(r, "]");
	hil_rec_uint(r, "unfinished_count", count);
}

void hil_qp_destroy(struct hil_qp *q, const char *why)
{
	int rc = hil_port_qp_destroy(q);
	struct hil_rec r;

	hil_rec_begin(&r, "destroy");
	hil_rec_str(&r, "kind", "qp");
	hil_rec_str(&r, "name", q->name);
	hil_rec_int(&r, "rc", rc);
	hil_rec_str(&r, "why", why);
	trace_unfinished(&r, q->pool);
	hil_rec_commit(&r);
	/* no WR of the QP can use what it has (its MRs) any more */
	hil_port_qp_release(q);
	if (q->peer)
		q->peer->peer = NULL;
	q->peer = NULL;
	q->qp = NULL;
	q->id = NULL;
	q->in_use = false;
	/* completions already in a CQ may still point into the pool */
	hil_port_pool_retire(q->pool);
	q->pool->next_dead = hil.graveyard;
	hil.graveyard = q->pool;
	q->pool = NULL;
}

static void trace_destroy(const char *kind, const char *name, const char *why, int rc)
{
	struct hil_rec r;

	hil_rec_begin(&r, "destroy");
	hil_rec_str(&r, "kind", kind);
	hil_rec_str(&r, "name", name);
	hil_rec_str(&r, "why", why);
	if (rc != HIL_NO_RC)
		hil_rec_int(&r, "rc", rc);
	hil_rec_commit(&r);
}

static void cq_destroy(struct hil_cq *cq, const char *why)
{
	int rc = hil_port_cq_destroy(cq);

	cq->cq = NULL;
	cq->in_use = false;
	trace_destroy("cq", cq->name, why, rc);
	hil_graveyard_flush(false);
}

static void pd_destroy(struct hil_pd *pd, const char *why)
{
	int rc = hil_port_pd_dealloc(pd);

	pd->pd = NULL;
	pd->in_use = false;
	trace_destroy("pd", pd->name, why, rc);
}

/* The QP or listener of another table that uses the CQ or PD, as a command's error. */
static int in_use_by(struct hil_cmd *cmd, const void *obj, const char *what, const char *name)
{
	for (int i = 0; i < HIL_MAX_OBJS; i++) {
		const struct hil_qp *q = &hil.qps[i];
		const struct hil_listener *l = &hil.listeners[i];

		if (q->in_use && (q->scq == obj || q->rcq == obj || q->pd == obj))
			return hil_fail(cmd, -EBUSY, "QP %s uses %s %s", q->name, what, name);
		if (l->in_use && (l->qp.scq == obj || l->qp.rcq == obj || l->qp.pd == obj))
			return hil_fail(cmd, -EBUSY, "listener %s uses %s %s", l->name, what, name);
	}
	return 0;
}

int hil_op_destroy(struct hil_cmd *cmd)
{
	const char *kind, *name;
	int rc;

	if (cmd->nargs != 1)
		return hil_fail(cmd, -EINVAL, "destroy one of qp=, cq=, pd=, listen=");
	kind = cmd->key[0];
	name = cmd->val[0];
	if (!strcmp(kind, "qp")) {
		struct hil_qp *q = hil_find_qp(name);

		if (!q)
			return hil_fail(cmd, -ENOENT, "no QP %s", name);
		hil_qp_destroy(q, "command");
	} else if (!strcmp(kind, "listen")) {
		struct hil_listener *l = hil_find_listener(name);

		if (!l)
			return hil_fail(cmd, -ENOENT, "no listener %s", name);
		hil_listener_destroy(l);
	} else if (!strcmp(kind, "cq")) {
		struct hil_cq *cq = hil_find_cq(name);

		if (!cq)
			return hil_fail(cmd, -ENOENT, "no CQ %s", name);
		rc = in_use_by(cmd, cq, "CQ", name);
		if (rc)
			return rc;
		cq_destroy(cq, "command");
	} else {
		struct hil_pd *pd = hil_find_pd(name);

		if (!pd)
			return hil_fail(cmd, -ENOENT, "no PD %s", name);
		rc = in_use_by(cmd, pd, "PD", name);
		if (rc)
			return rc;
		pd_destroy(pd, "command");
	}
	return 0;
}

void hil_teardown_all(const char *why)
{
	for (int i = 0; i < HIL_MAX_OBJS; i++)
		if (hil.qps[i].in_use)
			hil_qp_destroy(&hil.qps[i], why);
	for (int i = 0; i < HIL_MAX_OBJS; i++)
		if (hil.listeners[i].in_use)
			hil_listener_destroy(&hil.listeners[i]);
	hil_port_cm_idle();
	for (int i = 0; i < HIL_MAX_OBJS; i++)
		if (hil.cqs[i].in_use)
			cq_destroy(&hil.cqs[i], why);
	hil_graveyard_flush(true);
	for (int i = 0; i < HIL_MAX_OBJS; i++)
		if (hil.pds[i].in_use)
			pd_destroy(&hil.pds[i], why);
	if (hil.dev.dev) {
		trace_destroy("device", hil.dev.name, why, HIL_NO_RC);
		hil_port_device_close();
	}
}

int hil_op_reset(struct hil_cmd *cmd)
{
	(void)cmd;
	hil_teardown_all("reset");
	return 0;
}
