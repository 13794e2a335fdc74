// SPDX-License-Identifier: GPL-2.0-only
/*
 * Posting work requests, each post call traced before it is made ("post") and after it returns
 * ("post_ret"):
 *
 *   post_send qp= wr_id=<first> [op=send|send_imm|write|write_imm|read|reg_mr|local_inv|send_inv]
 *             [count=1] [len=64] [batch=count] [signal=all|none|last|<n>] [inline=0|1] [fill=1]
 *             [imm=<u32>] [mr=0] [access=local_write,remote_read,remote_write] [bad=<i>]
 *       count WRs with wr_ids first, first+1, ...; `batch` of them chained per post call;
 *       signal=last signals the last WR of each call, <n> every n-th WR of the command.
 *       SEND payloads are the pattern of hil_fill_pattern(wr_id); WRITE goes to the peer's
 *       receive buffer of the same index, READ reads the peer's send buffer (pd rkey=global).
 *       reg_mr, local_inv, send_inv: the kernel executor's fast-registration MRs (kv_mr.c;
 *       hil-uverbs refuses them when it reads its input, but send_inv, which invalidates the
 *       peer QP's buffer MR). bad=<i>: WR i of each call has more SGEs than the device takes
 *       (hil_port_bad_sges), which the driver must refuse at post time (a partial post).
 *   post_recv qp= wr_id=<first> [count=1] [len=buf] [batch=count] [bad=<i>]
 */
#include "core.h"
#include "payload.h"

static const struct hil_send_op send_ops[] = {
	{ "send", HIL_WR_SEND, HIL_SK_SEND, false },
	{ "send_imm", HIL_WR_SEND_IMM, HIL_SK_SEND, true },
	{ "write", HIL_WR_WRITE, HIL_SK_RDMA, false },
	{ "write_imm", HIL_WR_WRITE_IMM, HIL_SK_RDMA, true },
	{ "read", HIL_WR_READ, HIL_SK_RDMA, false },
	{ "reg_mr", HIL_WR_REG_MR, HIL_SK_REG, false },
	{ "local_inv", HIL_WR_LOCAL_INV, HIL_SK_LINV, false },
	{ "send_inv", HIL_WR_SEND_INV, HIL_SK_SINV, false },
};

/* A post command as it runs, a call of `batch` WRs at a time. */
struct post_job {
	struct hil_cmd *cmd;
	struct hil_qp *q;
	enum hil_queue queue;
	/* NULL for a receive */
	const struct hil_send_req *s;
	const struct hil_post_args *a;
	/* bad=: the index in each call of the WR made invalid, UINT32_MAX: none */
	uint32_t bad_at;
	struct hil_port_batch *b;
	struct hil_ctx **ctxs;
};

static bool has_payload(const struct hil_send_op *op)
{
	return op->kind == HIL_SK_SEND || op->kind == HIL_SK_RDMA || op->kind == HIL_SK_SINV;
}

static void trace_post(const struct post_job *j, uint64_t call, uint32_t done, uint32_t n)
{
	const struct hil_send_req *s = j->s;
	struct hil_rec r;

	hil_rec_begin(&r, "post");
	hil_rec_uint(&r, "call", call);
	hil_rec_str(&r, "qp", j->q->name);
	hil_rec_str(&r, "queue", j->queue == HIL_SQ ? "sq" : "rq");
	hil_rec_str(&r, "op", s ? s->op->name : "recv");
	hil_rec_uint(&r, "wr_id", j->a->wr_id + done);
	hil_rec_uint(&r, "count", n);
	hil_rec_uint(&r, "index", done);
	hil_rec_uint(&r, "len", j->a->len);
	if (j->a->signal_text)
		hil_rec_str(&r, "signal", j->a->signal_text);
	if (s && s->op->kind != HIL_SK_SEND && s->op->kind != HIL_SK_RDMA)
		hil_rec_uint(&r, "mr", (uint64_t)s->mr + done);
	if (s && s->access_text)
		hil_rec_str(&r, "access", s->access_text);
	if (j->bad_at < n)
		hil_rec_uint(&r, "invalid", j->bad_at);
	hil_rec_commit(&r);
}

/* The contexts of WRs that were never handed to the driver. */
static void unpost(struct hil_ctx **ctxs, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < n; i++)
		ctxs[i]->state = HIL_CTX_FAILED;
}

/* Marks the WRs from the bad one on as not posted; traces the call's return. */
static void post_ret(uint64_t call, int rc, int bad_index, struct hil_ctx **ctxs, uint32_t n)
{
	struct hil_rec r;

	/* without a bad_wr nothing is known to be posted */
	if (rc)
		unpost(ctxs, bad_index < 0 ? 0 : (uint32_t)bad_index, n);
	hil_rec_begin(&r, "post_ret");
	hil_rec_uint(&r, "call", call);
	hil_rec_int(&r, "rc", rc);
	/* a bad_wr that came back with rc 0 (libsiw's post_send does that) is kept as evidence */
	if (bad_index >= 0)
		hil_rec_int(&r, "bad", bad_index);
	else
		hil_rec_null(&r, "bad");
	hil_rec_commit(&r);
}

/* WR i of a call: its context, its payload, the executor's WR. */
static int build_wr(struct post_job *j, uint64_t call, uint32_t done, uint32_t i, uint32_t n)
{
	struct hil_pool *pool = j->q->pool;
	const struct hil_send_req *s = j->s;
	struct hil_ctx *c = hil_ctx_get(pool);
	int rc;

	if (!c) {
		unpost(j->ctxs, 0, i);
		return hil_fail(j->cmd, -ENOSPC, "QP %s has posted max_wrs WRs", j->q->name);
	}
	j->ctxs[i] = c;
	c->wr_id = j->a->wr_id + done + i;
	c->call = call;
	c->queue = (uint8_t)j->queue;
	c->seq = pool->posted[j->queue]++;
	c->slot = c->seq % pool->nslots[j->queue];
	c->signaled = s ? hil_signaled(j->a, done + i, i == n - 1) : 1;
	c->state = HIL_CTX_POSTED;
	if (!s) {
		hil_port_recv_wr(j->q, j->a->len, j->b, i, c);
	} else {
		if (has_payload(s->op) && s->fill && s->op->opcode != HIL_WR_READ) {
			hil_fill_pattern(hil_port_slot(pool, HIL_SQ, c->slot), s->a.len, c->wr_id);
			hil_port_slot_sync(pool, HIL_SQ, c->slot, true);
		}
		rc = hil_port_send_wr(j->cmd, j->q, s, j->b, i, c);
		if (rc) {
			unpost(j->ctxs, 0, i + 1);
			return rc;
		}
	}
	if (i == j->bad_at)
		hil_port_make_invalid(j->b, i);
	c->t_post = hil_now_ns();
	return 0;
}

/*
 * One post call of n WRs from `done` on: its return, or (*fatal) the command failed before
 * anything was posted.
 */
static int post_call(struct post_job *j, uint32_t done, uint32_t n, bool *fatal)
{
	uint64_t call = ++hil.calls;
	int bad = -1, rc;

	for (uint32_t i = 0; i < n; i++) {
		rc = build_wr(j, call, done, i, n);
		if (rc) {
			*fatal = true;
			return rc;
		}
	}
	trace_post(j, call, done, n);
	rc = hil_port_post(j->q, j->queue, j->b, n, &bad);
	post_ret(call, rc, bad, j->ctxs, n);
	if (rc)
		hil_fail(j->cmd, rc, "%s failed",
			 j->queue == HIL_SQ ? HIL_VERB("post_send") : HIL_VERB("post_recv"));
	return rc;
}

/* bad=<i>, if the device takes fewer SGEs than the invalid WR gets. */
static int bad_arg(struct hil_cmd *cmd, enum hil_queue queue, uint32_t *bad_at)
{
	uint32_t max = queue == HIL_SQ ? hil.dev.max_send_sge : hil.dev.max_recv_sge;
	int rc = hil_arg_u32(cmd, "bad", UINT32_MAX, bad_at);

	if (rc)
		return rc;
	if (*bad_at != UINT32_MAX && hil_port_bad_sges(queue) <= max)
		return hil_fail(cmd, -EINVAL, "bad=: the device's max_sge %u is not below %u", max,
				hil_port_bad_sges(queue));
	return 0;
}

/* Every call of the command; with bad= every call runs (each has its invalid WR). */
static int post_all(struct post_job *j)
{
	uint32_t batch = j->a->batch;
	bool fatal = false;
	int rc = 0;

	j->b = hil_port_batch_alloc(j->queue, batch,
				    j->bad_at == UINT32_MAX ? 0 : hil_port_bad_sges(j->queue));
	j->ctxs = hil_calloc(batch, sizeof(*j->ctxs));
	if (!j->b || !j->ctxs) {
		rc = hil_fail(j->cmd, -ENOMEM, "no memory for %u WRs", batch);
		goto out;
	}
	for (uint32_t done = 0; done < j->a->count && !fatal && (!rc || j->bad_at != UINT32_MAX);
	     done += batch) {
		uint32_t n = j->a->count - done < batch ? j->a->count - done : batch;
		int call_rc = post_call(j, done, n, &fatal);

		if (!rc || fatal)
			rc = call_rc;
	}
out:
	hil_free(j->ctxs);
	if (j->b)
		hil_port_batch_free(j->b);
	return rc;
}

/* access=local_write,remote_read,remote_write|none (a comma-separated list) */
static int parse_access(struct hil_cmd *cmd, const char *text, int *out)
{
	char buf[64];
	char *p = buf, *tok;

	*out = 0;
	if (strlen(text) >= sizeof(buf))
		return hil_fail(cmd, -EINVAL, "access= is too long");
	hil_copy_str(buf, text, sizeof(buf));
	while ((tok = strsep(&p, ","))) {
		if (!strcmp(tok, "local_write"))
			*out |= HIL_ACCESS_LOCAL_WRITE;
		else if (!strcmp(tok, "remote_read"))
			*out |= HIL_ACCESS_REMOTE_READ;
		else if (!strcmp(tok, "remote_write"))
			*out |= HIL_ACCESS_REMOTE_WRITE;
		else if (strcmp(tok, "none"))
			return hil_fail(cmd, -EINVAL,
					"access=%s: a list of local_write, remote_read, remote_write or none",
					text);
	}
	return 0;
}

static int send_request(struct hil_cmd *cmd, struct hil_qp *q, struct hil_send_req *s)
{
	const char *opname = hil_arg(cmd, "op") ?: "send";
	uint32_t slot_len = q->pool->slot_len;
	enum hil_send_kind kind;
	uint32_t def_len;
	int rc;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < sizeof(send_ops) / sizeof(send_ops[0]); i++)
		if (!strcmp(send_ops[i].name, opname))
			s->op = &send_ops[i];
	if (!s->op)
		return hil_fail(cmd, -EINVAL,
				"op=%s: send, send_imm, write, write_imm, read, reg_mr, local_inv or send_inv",
				opname);
	kind = s->op->kind;
	/* reg_mr maps the whole slot unless len= says otherwise */
	def_len = kind == HIL_SK_REG ? slot_len : slot_len < 64 ? slot_len : 64;
	rc = hil_post_args(cmd, slot_len, def_len, &s->a) ?:
	     hil_arg_u32(cmd, "inline", 0, &s->inl) ?: hil_arg_u32(cmd, "fill", 1, &s->fill) ?:
	     hil_arg_u32(cmd, "imm", 0, &s->imm) ?: hil_arg_u32(cmd, "mr", 0, &s->mr);
	if (rc)
		return rc;
	s->imm_given = hil_arg(cmd, "imm") != NULL;
	if (hil_arg(cmd, "access") && kind != HIL_SK_REG)
		return hil_fail(cmd, -EINVAL, "access= is for op=reg_mr");
	if (hil_arg(cmd, "mr") && kind != HIL_SK_REG && kind != HIL_SK_LINV && kind != HIL_SK_SINV)
		return hil_fail(cmd, -EINVAL, "mr= is for op=reg_mr, local_inv and send_inv");
	if (kind == HIL_SK_REG) {
		s->access_text = hil_arg(cmd, "access") ?: "local_write,remote_read,remote_write";
		rc = parse_access(cmd, s->access_text, &s->access);
		if (rc)
			return rc;
		if (!s->a.len)
			return hil_fail(cmd, -EINVAL, "op=reg_mr needs len>0");
	}
	if (kind == HIL_SK_RDMA && (!q->peer || !q->pd->global_rkey || !q->peer->pd->global_rkey))
		return hil_fail(cmd, -EINVAL, "op=%s needs a connected local peer and pd rkey=global",
				opname);
	if (kind == HIL_SK_SINV && !q->peer)
		return hil_fail(cmd, -EINVAL, "op=send_inv needs a connected local peer (its MR)");
	return 0;
}

int hil_op_post_send(struct hil_cmd *cmd)
{
	struct hil_qp *q = hil_need_qp(cmd);
	struct post_job j = { .cmd = cmd, .q = q, .queue = HIL_SQ };
	struct hil_send_req s;
	int rc;

	if (!q)
		return -ENOENT;
	rc = send_request(cmd, q, &s) ?: bad_arg(cmd, HIL_SQ, &j.bad_at);
	if (rc)
		return rc;
	j.s = &s;
	j.a = &s.a;
	return post_all(&j);
}

int hil_op_post_recv(struct hil_cmd *cmd)
{
	struct hil_qp *q = hil_need_qp(cmd);
	struct post_job j = { .cmd = cmd, .q = q, .queue = HIL_RQ };
	struct hil_post_args a;
	int rc;

	if (!q)
		return -ENOENT;
	rc = hil_post_args(cmd, q->pool->slot_len, q->pool->slot_len, &a) ?:
	     bad_arg(cmd, HIL_RQ, &j.bad_at);
	if (rc)
		return rc;
	a.signal_text = NULL;
	j.a = &a;
	return post_all(&j);
}
