// SPDX-License-Identifier: GPL-2.0-only
/*
 * Work requests and completions, each verbs call traced before it is made and after it returns
 * (a driver may complete, flush or call back inside the call itself):
 *
 *   post_send qp= wr_id=<first> [op=send|send_imm|write|write_imm|read|reg_mr|local_inv|send_inv]
 *             [count=1] [len=64] [batch=count] [signal=all|none|last|<n>] [inline=0|1] [fill=1]
 *             [imm=<u32>] [mr=0] [access=local_write,remote_read,remote_write] [bad=<i>]
 *       count WRs with wr_ids first, first+1, ...; `batch` of them chained per ib_post_send;
 *       signal=last signals the last WR of each call, <n> every n-th WR of the command.
 *       SEND payloads are the pattern of hil_fill_pattern(wr_id); WRITE goes to the peer's
 *       receive buffer of the same index, READ reads the peer's send buffer (pd rkey=global).
 *       reg_mr: IB_WR_REG_MR of the QP's MR mr+i (ib_alloc_mr(IB_MR_TYPE_MEM_REG) on first
 *       use) mapped with ib_map_mr_sg over `len` bytes (default: all) of SQ slot mr+i, its key
 *       bumped with ib_update_fast_reg_key; local_inv: IB_WR_LOCAL_INV of MR mr+i's rkey;
 *       send_inv: IB_WR_SEND_WITH_INV of the peer's MR mr+i (the receiver invalidates it).
 *       bad=<i>: WR i of each call has max_send_sge+1 SGEs, which the driver must refuse.
 *   post_recv qp= wr_id=<first> [count=1] [len=buf] [batch=count] [bad=<i>]
 *   poll cq= [min=0] [timeout=1000] [budget=0]   until `min` completions arrived on the CQ since
 *       the previous poll command returned: direct CQs are polled (ib_process_cq_direct, at most
 *       `budget` a pass, 0: all), others are waited on (their handler runs in its own context)
 *   modify qp= state=RESET|INIT|RTR|RTS|SQD|SQE|ERR    ib_modify_qp(IB_QP_STATE)
 *   query qp=                                    ib_query_qp(IB_QP_STATE)
 *   drain qp= [which=qp|sq|rq]                   ib_drain_qp / ib_drain_sq / ib_drain_rq
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "kv.h"
#include "names.h"
#include "payload.h"

#define HIL_MAX_BATCH 1024
#define KV_QPS_UNSET ((enum ib_qp_state)0x7f)

const char *kv_wc_opcode_name(enum ib_wc_opcode op)
{
	switch (op) {
	case IB_WC_SEND:
		return "SEND";
	case IB_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IB_WC_RDMA_READ:
		return "RDMA_READ";
	case IB_WC_COMP_SWAP:
		return "COMP_SWAP";
	case IB_WC_FETCH_ADD:
		return "FETCH_ADD";
	case IB_WC_LOCAL_INV:
		return "LOCAL_INV";
	case IB_WC_REG_MR:
		return "REG_MR";
	case IB_WC_RECV:
		return "RECV";
	case IB_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	default:
		return "OTHER";
	}
}

/* A work completion's status, opcode (numbers and names), qp_num and vendor_err */
void kv_rec_wc(struct kv_rec *r, const struct ib_wc *wc)
{
	kv_rec_uint(r, "status", wc->status);
	kv_rec_str(r, "status_name", hil_wc_status_name(wc->status));
	kv_rec_uint(r, "opcode", wc->opcode);
	kv_rec_str(r, "opcode_name", kv_wc_opcode_name(wc->opcode));
	kv_rec_uint(r, "qp_num", wc->qp ? wc->qp->qp_num : 0);
	kv_rec_uint(r, "vendor_err", wc->vendor_err);
}

/* How a send operation builds its WR: payload from the SQ slot, a peer's buffer, an MR. */
enum kv_send_kind { KV_SK_SEND, KV_SK_RDMA, KV_SK_REG, KV_SK_LINV, KV_SK_SINV };

struct kv_send_op {
	const char *name;
	enum ib_wr_opcode opcode;
	enum kv_send_kind kind;
	bool imm;
};

static const struct kv_send_op send_ops[] = {
	{ "send", IB_WR_SEND, KV_SK_SEND, false },
	{ "send_imm", IB_WR_SEND_WITH_IMM, KV_SK_SEND, true },
	{ "write", IB_WR_RDMA_WRITE, KV_SK_RDMA, false },
	{ "write_imm", IB_WR_RDMA_WRITE_WITH_IMM, KV_SK_RDMA, true },
	{ "read", IB_WR_RDMA_READ, KV_SK_RDMA, false },
	{ "reg_mr", IB_WR_REG_MR, KV_SK_REG, false },
	{ "local_inv", IB_WR_LOCAL_INV, KV_SK_LINV, false },
	{ "send_inv", IB_WR_SEND_WITH_INV, KV_SK_SINV, false },
};

static bool send_op_has_payload(const struct kv_send_op *op)
{
	return op->kind == KV_SK_SEND || op->kind == KV_SK_RDMA || op->kind == KV_SK_SINV;
}

void kv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_ctx *c = container_of(wc->wr_cqe, struct kv_ctx, cqe);
	struct kv_cq *kcq = cq->cq_context;
	struct kv_pool *pool = c->pool;
	int n = atomic_inc_return(&c->ncqe);
	struct kv_rec r;

	if (c->bench) {
		kv_bench_done(c, kcq, wc);
		return;
	}
	if (c->queue == KV_SQ && wc->status == IB_WC_SUCCESS && c->seq + 1 > pool->sq_done_upto)
		pool->sq_done_upto = c->seq + 1;

	kv_rec_begin(&r, "cqe");
	kv_rec_str(&r, "cq", kcq->name);
	kv_rec_str(&r, "qp", pool->name);
	kv_rec_str(&r, "queue", c->queue == KV_SQ ? "sq" : "rq");
	kv_rec_uint(&r, "wr_id", c->wr_id);
	kv_rec_wc(&r, wc);
	kv_rec_uint(&r, "byte_len", wc->byte_len);
	kv_rec_uint(&r, "call", c->call);
	if (n > 1)
		kv_rec_int(&r, "n", n);
	if (wc->wc_flags & IB_WC_WITH_IMM)
		kv_rec_uint(&r, "imm", be32_to_cpu(wc->ex.imm_data));
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		kv_rec_uint(&r, "inv", wc->ex.invalidate_rkey);
	if (wc->status == IB_WC_SUCCESS && wc->opcode == IB_WC_RECV && c->queue == KV_RQ) {
		struct kv_slot *s = &pool->slots[KV_RQ][c->slot];
		u32 len = min(wc->byte_len, pool->slot_len);

		ib_dma_sync_single_for_cpu(pool->dev, s->dma, pool->slot_len, DMA_BIDIRECTIONAL);
		kv_rec_uint(&r, "sum", hil_fnv1a(s->va, len));
	}
	kv_rec_commit(&r);
	atomic_inc(&kcq->ncqe);
	wake_up_all(&kcq->wq);
}

void kv_qp_event(struct ib_event *ev, void *context)
{
	struct kv_pool *pool = context;
	struct kv_rec r;

	kv_rec_begin(&r, "async");
	kv_rec_str(&r, "qp", pool->name);
	kv_rec_str(&r, "event", ib_event_msg(ev->event));
	kv_rec_uint(&r, "code", ev->event);
	kv_rec_commit(&r);
}

static struct kv_qp *need_qp(struct hil_cmd *cmd)
{
	struct kv_qp *q = kv_find_qp(hil_arg(cmd, "qp"));

	if (!q)
		hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	return q;
}

static void trace_post(u64 call, struct kv_qp *q, const char *queue, const char *op,
		       const struct hil_post_args *a, u64 first, u32 index, u32 n, s64 mr,
		       const char *access, int invalid)
{
	struct kv_rec r;

	kv_rec_begin(&r, "post");
	kv_rec_uint(&r, "call", call);
	kv_rec_str(&r, "qp", q->name);
	kv_rec_str(&r, "queue", queue);
	kv_rec_str(&r, "op", op);
	kv_rec_uint(&r, "wr_id", first);
	kv_rec_uint(&r, "count", n);
	kv_rec_uint(&r, "index", index);
	kv_rec_uint(&r, "len", a->len);
	if (a->signal_text)
		kv_rec_str(&r, "signal", a->signal_text);
	if (mr >= 0)
		kv_rec_uint(&r, "mr", mr);
	if (access)
		kv_rec_str(&r, "access", access);
	if (invalid >= 0)
		kv_rec_int(&r, "invalid", invalid);
	kv_rec_commit(&r);
}

/* The contexts of a call that never happened. */
static void unpost(struct kv_ctx **ctxs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		ctxs[i]->state = KV_CTX_FAILED;
}

/* Marks the WRs from the bad one on as not posted; traces the call's return. */
static void post_ret(u64 call, int rc, int bad_index, struct kv_ctx **ctxs, u32 n)
{
	struct kv_rec r;
	u32 i;

	if (rc) {
		/* without a bad_wr nothing is known to be posted */
		u32 from = bad_index < 0 ? 0 : bad_index;

		for (i = from; i < n; i++)
			ctxs[i]->state = KV_CTX_FAILED;
	}
	kv_rec_begin(&r, "post_ret");
	kv_rec_uint(&r, "call", call);
	kv_rec_int(&r, "rc", rc);
	/* a bad_wr that came back with rc 0 is kept as the evidence of a driver inconsistency */
	if (bad_index >= 0)
		kv_rec_int(&r, "bad", bad_index);
	else
		kv_rec_null(&r, "bad");
	kv_rec_commit(&r);
}

/* ---- fast-registration MRs: MR i of a QP maps its SQ buffer slot i ---- */

static void trace_mr(struct kv_qp *q, u32 idx, const char *action, struct ib_mr *mr)
{
	struct kv_rec r;

	kv_rec_begin(&r, "mr");
	kv_rec_str(&r, "qp", q->name);
	kv_rec_uint(&r, "mr", idx);
	kv_rec_str(&r, "action", action);
	kv_rec_uint(&r, "lkey", mr->lkey);
	kv_rec_uint(&r, "rkey", mr->rkey);
	kv_rec_commit(&r);
}

/* MR `idx` of the QP, allocated with ib_alloc_mr(IB_MR_TYPE_MEM_REG) on first use. */
static struct ib_mr *qp_mr(struct hil_cmd *cmd, struct kv_qp *q, u32 idx)
{
	u32 max_sg = DIV_ROUND_UP(q->pool->slot_len, PAGE_SIZE) + 1;
	struct ib_mr *mr;

	if (!q->mrs) {
		q->nmrs = q->pool->nslots[KV_SQ];
		q->mrs = kcalloc(q->nmrs, sizeof(*q->mrs), GFP_KERNEL);
		if (!q->mrs) {
			q->nmrs = 0;
			hil_fail(cmd, -ENOMEM, "no memory for the MR table of %s", q->name);
			return NULL;
		}
	}
	if (idx >= q->nmrs) {
		hil_fail(cmd, -EINVAL, "mr=%u: QP %s has MRs 0..%u (one per SQ slot)", idx, q->name,
			 q->nmrs - 1);
		return NULL;
	}
	if (q->mrs[idx])
		return q->mrs[idx];
	mr = ib_alloc_mr(q->pd->pd, IB_MR_TYPE_MEM_REG, max_sg);
	if (IS_ERR(mr)) {
		hil_fail(cmd, PTR_ERR(mr), "ib_alloc_mr(MEM_REG, %u) failed", max_sg);
		return NULL;
	}
	q->mrs[idx] = mr;
	trace_mr(q, idx, "alloc", mr);
	return mr;
}

void kv_qp_mrs_free(struct kv_qp *q)
{
	struct kv_rec r;
	u32 i;

	for (i = 0; i < q->nmrs; i++) {
		int rc;

		if (!q->mrs[i])
			continue;
		rc = ib_dereg_mr(q->mrs[i]);
		kv_rec_begin(&r, "mr");
		kv_rec_str(&r, "qp", q->name);
		kv_rec_uint(&r, "mr", i);
		kv_rec_str(&r, "action", "dereg");
		kv_rec_int(&r, "rc", rc);
		kv_rec_commit(&r);
	}
	kfree(q->mrs);
	q->mrs = NULL;
	q->nmrs = 0;
}

/* access=local_write,remote_read,remote_write|none (a comma-separated list) */
static int parse_access(struct hil_cmd *cmd, const char *text, int *out)
{
	char buf[64];
	char *p = buf, *tok;

	*out = 0;
	if (strscpy(buf, text, sizeof(buf)) < 0)
		return hil_fail(cmd, -EINVAL, "access= is too long");
	while ((tok = strsep(&p, ","))) {
		if (!strcmp(tok, "local_write"))
			*out |= IB_ACCESS_LOCAL_WRITE;
		else if (!strcmp(tok, "remote_read"))
			*out |= IB_ACCESS_REMOTE_READ;
		else if (!strcmp(tok, "remote_write"))
			*out |= IB_ACCESS_REMOTE_WRITE;
		else if (strcmp(tok, "none"))
			return hil_fail(cmd, -EINVAL,
					"access=%s: a list of local_write, remote_read, remote_write or none",
					text);
	}
	return 0;
}

/* Maps MR `mr` over `len` bytes of SQ slot `idx` and gives it a fresh key: the REG_MR WR. */
static int prepare_reg(struct hil_cmd *cmd, struct kv_qp *q, struct ib_mr *mr, u32 idx, u32 len,
		       int access, struct ib_reg_wr *wr)
{
	struct kv_slot *s = &q->pool->slots[KV_SQ][idx];
	struct scatterlist sg;
	int n;

	sg_init_table(&sg, 1);
	sg.length = len;
	sg_dma_address(&sg) = s->dma;
	sg_dma_len(&sg) = len;
	n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	if (n != 1)
		return hil_fail(cmd, n < 0 ? n : -EINVAL, "ib_map_mr_sg of slot %u (%u bytes): %d",
				idx, len, n);
	ib_update_fast_reg_key(mr, (u8)ib_inc_rkey(mr->rkey));
	wr->mr = mr;
	wr->key = mr->rkey;
	wr->access = access;
	return 0;
}

/* ---- posting ---- */

union kv_send_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_reg_wr reg;
};

struct kv_send_req {
	const struct kv_send_op *op;
	struct hil_post_args a;
	u32 inl;
	u32 fill;
	u32 imm;
	bool imm_given;
	u32 mr;
	int access;
	const char *access_text;
	union kv_send_wr *wrs;
	struct ib_sge *sges;
	struct ib_sge *bad_sges;
	struct kv_ctx **ctxs;
};

/* Fills WR i of a call: the QP's slot for its payload, the peer's slot, or an MR. */
static int fill_send_wr(struct hil_cmd *cmd, struct kv_qp *q, struct kv_send_req *s, u32 i,
			u32 index)
{
	const struct kv_send_op *op = s->op;
	struct kv_pool *pool = q->pool;
	struct kv_ctx *c = s->ctxs[i];
	union kv_send_wr *w = &s->wrs[i];
	struct ib_send_wr *wr = &w->wr;
	struct ib_mr *mr;
	u32 mr_idx = s->mr + index;
	int rc;

	wr->wr_cqe = &c->cqe;
	wr->opcode = op->opcode;
	wr->send_flags = c->signaled ? IB_SEND_SIGNALED : 0;
	if (send_op_has_payload(op)) {
		struct kv_slot *sl = &pool->slots[KV_SQ][c->slot];

		if (s->fill && op->opcode != IB_WR_RDMA_READ) {
			hil_fill_pattern(sl->va, s->a.len, c->wr_id);
			ib_dma_sync_single_for_device(pool->dev, sl->dma, pool->slot_len,
						      DMA_BIDIRECTIONAL);
		}
		/* an inline payload is copied by the driver from a kernel virtual address, not a DMA one */
		s->sges[i].addr = s->inl ? (u64)(uintptr_t)sl->va : sl->dma;
		s->sges[i].length = s->a.len;
		s->sges[i].lkey = q->pd->pd->local_dma_lkey;
		wr->sg_list = s->a.len ? &s->sges[i] : NULL;
		wr->num_sge = s->a.len ? 1 : 0;
		if (s->inl)
			wr->send_flags |= IB_SEND_INLINE;
	}
	if (op->imm)
		wr->ex.imm_data = cpu_to_be32(s->imm_given ? s->imm : (u32)c->wr_id);
	switch (op->kind) {
	case KV_SK_RDMA: {
		struct kv_pool *pp = q->peer->pool;
		enum kv_queue pq = op->opcode == IB_WR_RDMA_READ ? KV_SQ : KV_RQ;

		w->rdma.remote_addr = pp->slots[pq][c->seq % pp->nslots[pq]].dma;
		w->rdma.rkey = q->peer->pd->pd->unsafe_global_rkey;
		break;
	}
	case KV_SK_REG:
		mr = qp_mr(cmd, q, mr_idx);
		if (!mr)
			return -EINVAL;
		rc = prepare_reg(cmd, q, mr, mr_idx, s->a.len, s->access, &w->reg);
		if (rc)
			return rc;
		trace_mr(q, mr_idx, "map", mr);
		break;
	case KV_SK_LINV:
		mr = qp_mr(cmd, q, mr_idx);
		if (!mr)
			return -EINVAL;
		wr->ex.invalidate_rkey = mr->rkey;
		break;
	case KV_SK_SINV:
		/* the peer's MR of that number: the receiver invalidates it */
		mr = qp_mr(cmd, q->peer, mr_idx);
		if (!mr)
			return -EINVAL;
		wr->ex.invalidate_rkey = mr->rkey;
		break;
	default:
		break;
	}
	return 0;
}

/*
 * bad=<i>: WR i of each call gets one SGE more than the device's maximum, which a driver must
 * refuse at post time (returning it as *bad_wr), so a partial post can be made on an empty queue.
 */
static void make_invalid(struct ib_sge *bad_sges, u32 nbad, const struct ib_sge *like,
			 int *num_sge)
{
	u32 j;

	for (j = 0; j < nbad; j++)
		bad_sges[j] = *like;
	*num_sge = nbad;
}

static int send_request(struct hil_cmd *cmd, struct kv_qp *q, struct kv_send_req *s)
{
	const char *opname = hil_arg(cmd, "op") ?: "send";
	struct kv_pool *pool = q->pool;
	u32 def_len, i;
	int rc;

	s->op = NULL;
	for (i = 0; i < ARRAY_SIZE(send_ops); i++)
		if (!strcmp(send_ops[i].name, opname))
			s->op = &send_ops[i];
	if (!s->op)
		return hil_fail(cmd, -EINVAL,
				"op=%s: send, send_imm, write, write_imm, read, reg_mr, local_inv or send_inv",
				opname);
	/* reg_mr maps the whole slot unless len= says otherwise */
	def_len = s->op->kind == KV_SK_REG ? pool->slot_len : min_t(u32, 64, pool->slot_len);
	rc = hil_post_args(cmd, pool->slot_len, def_len, &s->a) ?:
	     hil_arg_u32(cmd, "inline", 0, &s->inl) ?: hil_arg_u32(cmd, "fill", 1, &s->fill) ?:
	     hil_arg_u32(cmd, "imm", 0, &s->imm) ?: hil_arg_u32(cmd, "mr", 0, &s->mr);
	if (rc)
		return rc;
	s->imm_given = hil_arg(cmd, "imm");
	s->access_text = NULL;
	if (hil_arg(cmd, "access") && s->op->kind != KV_SK_REG)
		return hil_fail(cmd, -EINVAL, "access= is for op=reg_mr");
	if (hil_arg(cmd, "mr") && s->op->kind != KV_SK_REG && s->op->kind != KV_SK_LINV &&
	    s->op->kind != KV_SK_SINV)
		return hil_fail(cmd, -EINVAL, "mr= is for op=reg_mr, local_inv and send_inv");
	if (s->op->kind == KV_SK_REG) {
		s->access_text = hil_arg(cmd, "access") ?: "local_write,remote_read,remote_write";
		rc = parse_access(cmd, s->access_text, &s->access);
		if (rc)
			return rc;
		if (!s->a.len)
			return hil_fail(cmd, -EINVAL, "op=reg_mr needs len>0");
	}
	if (s->op->kind == KV_SK_RDMA && (!q->peer || !q->pd->global_rkey || !q->peer->pd->global_rkey))
		return hil_fail(cmd, -EINVAL, "op=%s needs a connected local peer and pd rkey=global",
				opname);
	if (s->op->kind == KV_SK_SINV && !q->peer)
		return hil_fail(cmd, -EINVAL, "op=send_inv needs a connected local peer (its MR mr=)");
	return 0;
}

int kv_op_post_send(struct hil_cmd *cmd)
{
	struct kv_qp *q = need_qp(cmd);
	struct kv_send_req s = {};
	struct kv_pool *pool;
	u32 done, i, bad_at = U32_MAX, nbad = 0;
	int rc, first_rc = 0;

	if (!q)
		return -ENOENT;
	pool = q->pool;
	rc = send_request(cmd, q, &s) ?: hil_arg_u32(cmd, "bad", U32_MAX, &bad_at);
	if (rc)
		return rc;
	s.wrs = kcalloc(s.a.batch, sizeof(*s.wrs), GFP_KERNEL);
	s.sges = kcalloc(s.a.batch, sizeof(*s.sges), GFP_KERNEL);
	s.ctxs = kcalloc(s.a.batch, sizeof(*s.ctxs), GFP_KERNEL);
	if (bad_at != U32_MAX) {
		nbad = kv.dev->attrs.max_send_sge + 1;
		s.bad_sges = kcalloc(nbad, sizeof(*s.bad_sges), GFP_KERNEL);
	}
	if (!s.wrs || !s.sges || !s.ctxs || (nbad && !s.bad_sges)) {
		rc = hil_fail(cmd, -ENOMEM, "no memory for %u WRs", s.a.batch);
		goto out;
	}
	/* with bad= every call runs (each has its invalid WR); otherwise the first failure stops */
	for (done = 0; done < s.a.count && (!first_rc || nbad); done += s.a.batch) {
		u32 n = min(s.a.batch, s.a.count - done);
		const struct ib_send_wr *bad = NULL;
		int bad_index = -1;
		u64 call = ++kv.calls;

		memset(s.wrs, 0, n * sizeof(*s.wrs));
		for (i = 0; i < n; i++) {
			struct kv_ctx *c = kv_ctx_get(pool);

			if (!c) {
				rc = hil_fail(cmd, -ENOSPC, "QP %s has posted max_wrs WRs", q->name);
				unpost(s.ctxs, i);
				goto out;
			}
			s.ctxs[i] = c;
			c->wr_id = s.a.wr_id + done + i;
			c->call = call;
			c->queue = KV_SQ;
			c->seq = pool->posted[KV_SQ]++;
			c->slot = c->seq % pool->nslots[KV_SQ];
			c->opcode = s.op->opcode;
			c->signaled = hil_signaled(&s.a, done + i, i == n - 1);
			c->state = KV_CTX_POSTED;
			rc = fill_send_wr(cmd, q, &s, i, done + i);
			if (rc) {
				unpost(s.ctxs, i + 1);
				goto out;
			}
			if (i == bad_at) {
				make_invalid(s.bad_sges, nbad, &s.sges[i], &s.wrs[i].wr.num_sge);
				s.wrs[i].wr.sg_list = s.bad_sges;
			}
			if (i)
				s.wrs[i - 1].wr.next = &s.wrs[i].wr;
			c->t_post = ktime_get_ns();
		}
		trace_post(call, q, "sq", s.op->name, &s.a, s.a.wr_id + done, done, n,
			   s.op->kind == KV_SK_SEND || s.op->kind == KV_SK_RDMA ? -1 : (s64)s.mr + done,
			   s.access_text, bad_at < n ? (int)bad_at : -1);
		rc = ib_post_send(q->qp, &s.wrs[0].wr, &bad);
		if (bad) {
			for (i = 0; i < n; i++)
				if (&s.wrs[i].wr == bad)
					bad_index = i;
		}
		post_ret(call, rc, bad_index, s.ctxs, n);
		if (rc) {
			hil_fail(cmd, rc, "ib_post_send failed");
			if (!first_rc)
				first_rc = rc;
		}
	}
	rc = first_rc;
out:
	kfree(s.bad_sges);
	kfree(s.ctxs);
	kfree(s.sges);
	kfree(s.wrs);
	return rc;
}

int kv_op_post_recv(struct hil_cmd *cmd)
{
	struct kv_qp *q = need_qp(cmd);
	struct hil_post_args a;
	struct ib_recv_wr *wrs = NULL;
	struct ib_sge *sges = NULL, *bad_sges = NULL;
	struct kv_ctx **ctxs = NULL;
	struct kv_pool *pool;
	u32 done, i, bad_at, nbad = 0;
	int rc, first_rc = 0;

	if (!q)
		return -ENOENT;
	pool = q->pool;
	rc = hil_post_args(cmd, pool->slot_len, pool->slot_len, &a) ?:
	     hil_arg_u32(cmd, "bad", U32_MAX, &bad_at);
	if (rc)
		return rc;
	a.signal_text = NULL;
	wrs = kcalloc(a.batch, sizeof(*wrs), GFP_KERNEL);
	sges = kcalloc(a.batch, sizeof(*sges), GFP_KERNEL);
	ctxs = kcalloc(a.batch, sizeof(*ctxs), GFP_KERNEL);
	if (bad_at != U32_MAX) {
		nbad = kv.dev->attrs.max_recv_sge + 1;
		bad_sges = kcalloc(nbad, sizeof(*bad_sges), GFP_KERNEL);
	}
	if (!wrs || !sges || !ctxs || (nbad && !bad_sges)) {
		rc = hil_fail(cmd, -ENOMEM, "no memory for %u WRs", a.batch);
		goto out;
	}
	for (done = 0; done < a.count && (!first_rc || nbad); done += a.batch) {
		u32 n = min(a.batch, a.count - done);
		const struct ib_recv_wr *bad = NULL;
		int bad_index = -1;
		u64 call = ++kv.calls;

		memset(wrs, 0, n * sizeof(*wrs));
		for (i = 0; i < n; i++) {
			struct kv_ctx *c = kv_ctx_get(pool);
			struct kv_slot *s;

			if (!c) {
				rc = hil_fail(cmd, -ENOSPC, "QP %s has posted max_wrs WRs", q->name);
				unpost(ctxs, i);
				goto out;
			}
			ctxs[i] = c;
			c->wr_id = a.wr_id + done + i;
			c->call = call;
			c->queue = KV_RQ;
			c->seq = pool->posted[KV_RQ]++;
			c->slot = c->seq % pool->nslots[KV_RQ];
			c->signaled = 1;
			c->state = KV_CTX_POSTED;
			s = &pool->slots[KV_RQ][c->slot];
			sges[i].addr = s->dma;
			sges[i].length = a.len;
			sges[i].lkey = q->pd->pd->local_dma_lkey;
			wrs[i].wr_cqe = &c->cqe;
			wrs[i].sg_list = a.len ? &sges[i] : NULL;
			wrs[i].num_sge = a.len ? 1 : 0;
			if (i == bad_at) {
				make_invalid(bad_sges, nbad, &sges[i], &wrs[i].num_sge);
				wrs[i].sg_list = bad_sges;
			}
			if (i)
				wrs[i - 1].next = &wrs[i];
			c->t_post = ktime_get_ns();
		}
		trace_post(call, q, "rq", "recv", &a, a.wr_id + done, done, n, -1, NULL,
			   bad_at < n ? (int)bad_at : -1);
		rc = ib_post_recv(q->qp, &wrs[0], &bad);
		if (bad) {
			for (i = 0; i < n; i++)
				if (&wrs[i] == bad)
					bad_index = i;
		}
		post_ret(call, rc, bad_index, ctxs, n);
		if (rc) {
			hil_fail(cmd, rc, "ib_post_recv failed");
			if (!first_rc)
				first_rc = rc;
		}
	}
	rc = first_rc;
out:
	kfree(bad_sges);
	kfree(ctxs);
	kfree(sges);
	kfree(wrs);
	return rc;
}

int kv_op_poll(struct hil_cmd *cmd)
{
	struct kv_cq *cq = kv_find_cq(hil_arg(cmd, "cq"));
	u32 min, ms, budget;
	unsigned long deadline;
	struct kv_rec r;
	int start, got, rc;

	if (!cq)
		return hil_fail(cmd, -ENOENT, "no CQ %s", hil_arg(cmd, "cq"));
	rc = hil_arg_u32(cmd, "min", 0, &min) ?: hil_arg_u32(cmd, "timeout", 1000, &ms) ?:
	     hil_arg_u32(cmd, "budget", 0, &budget);
	if (rc)
		return rc;
	start = cq->polled;
	deadline = jiffies + msecs_to_jiffies(ms);
	if (cq->poll == IB_POLL_DIRECT) {
		for (;;) {
			int n = ib_process_cq_direct(cq->cq, budget ? budget : -1);

			if (atomic_read(&cq->ncqe) - start >= min)
				break;
			if (time_after(jiffies, deadline))
				break;
			if (!n)
				usleep_range(200, 500);
		}
	} else {
		wait_event_idle_timeout(cq->wq, atomic_read(&cq->ncqe) - start >= min,
					msecs_to_jiffies(ms));
	}
	cq->polled = atomic_read(&cq->ncqe);
	got = cq->polled - start;
	kv_rec_begin(&r, "poll");
	kv_rec_str(&r, "cq", cq->name);
	kv_rec_int(&r, "got", got);
	kv_rec_uint(&r, "min", min);
	kv_rec_int(&r, "total", cq->polled);
	kv_rec_commit(&r);
	if (got < min)
		return hil_fail(cmd, -ETIMEDOUT, "%d of %u completions in %u ms", got, min, ms);
	return 0;
}

int kv_op_modify(struct hil_cmd *cmd)
{
	struct kv_qp *q = need_qp(cmd);
	struct ib_qp_attr attr = {};
	struct kv_rec r;
	int rc, state;
	u64 call;

	if (!q)
		return -ENOENT;
	if (hil_qp_state_parse(hil_arg(cmd, "state"), &state))
		return hil_fail(cmd, -EINVAL, "state=%s", hil_arg(cmd, "state"));
	attr.qp_state = state;
	call = ++kv.calls;
	kv_rec_begin(&r, "modify");
	kv_rec_uint(&r, "call", call);
	kv_rec_str(&r, "qp", q->name);
	kv_rec_str(&r, "state", hil_qp_state_name(state));
	kv_rec_commit(&r);
	rc = ib_modify_qp(q->qp, &attr, IB_QP_STATE);
	kv_rec_begin(&r, "modify_ret");
	kv_rec_uint(&r, "call", call);
	kv_rec_int(&r, "rc", rc);
	kv_rec_commit(&r);
	if (rc)
		hil_fail(cmd, rc, "ib_modify_qp to %s failed", hil_qp_state_name(state));
	return rc;
}

int kv_op_query(struct hil_cmd *cmd)
{
	struct kv_qp *q = need_qp(cmd);
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	struct kv_rec r;
	int rc;

	if (!q)
		return -ENOENT;
	/* a driver that does not fill a field leaves it at this value: traced as "UNSET" */
	attr.qp_state = KV_QPS_UNSET;
	attr.cur_qp_state = KV_QPS_UNSET;
	rc = ib_query_qp(q->qp, &attr, IB_QP_STATE, &init);
	kv_rec_begin(&r, "query");
	kv_rec_str(&r, "qp", q->name);
	kv_rec_int(&r, "rc", rc);
	if (!rc) {
		kv_rec_str(&r, "state", attr.qp_state == KV_QPS_UNSET ? "UNSET" :
					hil_qp_state_name(attr.qp_state));
		kv_rec_str(&r, "cur_state", attr.cur_qp_state == KV_QPS_UNSET ? "UNSET" :
					hil_qp_state_name(attr.cur_qp_state));
	}
	kv_rec_commit(&r);
	return rc;
}

int kv_op_drain(struct hil_cmd *cmd)
{
	const char *which = hil_arg(cmd, "which") ?: "qp";
	struct kv_qp *q = need_qp(cmd);
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	struct kv_rec r;
	u64 call, t0, us;
	int qrc;

	if (!q)
		return -ENOENT;
	if (strcmp(which, "qp") && strcmp(which, "sq") && strcmp(which, "rq"))
		return hil_fail(cmd, -EINVAL, "which=%s: qp, sq or rq", which);
	call = ++kv.calls;
	kv_rec_begin(&r, "drain");
	kv_rec_uint(&r, "call", call);
	kv_rec_str(&r, "qp", q->name);
	kv_rec_str(&r, "which", which);
	kv_rec_commit(&r);
	t0 = ktime_get_ns();
	kv_tap_begin(q, call);
	if (!strcmp(which, "qp"))
		ib_drain_qp(q->qp);
	else if (!strcmp(which, "sq"))
		ib_drain_sq(q->qp);
	else
		ib_drain_rq(q->qp);
	kv_tap_end();
	us = (ktime_get_ns() - t0) / 1000;
	/* the state the drain left, as the driver reports it (not assumed) */
	attr.qp_state = KV_QPS_UNSET;
	qrc = ib_query_qp(q->qp, &attr, IB_QP_STATE, &init);
	kv_rec_begin(&r, "drain_ret");
	kv_rec_uint(&r, "call", call);
	kv_rec_uint(&r, "us", us);
	if (!qrc)
		kv_rec_str(&r, "state", attr.qp_state == KV_QPS_UNSET ? "UNSET" :
					hil_qp_state_name(attr.qp_state));
	kv_rec_commit(&r);
	return 0;
}
