// SPDX-License-Identifier: GPL-2.0-only
/*
 * Post building (guest/common/core_post.c runs the commands): a call's ib_send_wr/ib_recv_wr
 * chain and their SGEs over the QP's DMA-mapped slots, each WR's ib_cqe its context's, and
 * ib_post_send/ib_post_recv.
 */
#include <linux/kernel.h>
#include <linux/slab.h>

#include "kv.h"

union kv_send_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_reg_wr reg;
};

struct hil_port_batch {
	enum hil_queue queue;
	/* the queue's WRs: send or receive */
	union kv_send_wr *swrs;
	struct ib_recv_wr *rwrs;
	struct ib_sge *sges;
	/* what an invalid WR (bad=) carries: copies of its own SGE */
	struct ib_sge *bad_sges;
	u32 nbad;
};

static const enum ib_wr_opcode opcodes[] = {
	[HIL_WR_SEND] = IB_WR_SEND,
	[HIL_WR_SEND_IMM] = IB_WR_SEND_WITH_IMM,
	[HIL_WR_WRITE] = IB_WR_RDMA_WRITE,
	[HIL_WR_WRITE_IMM] = IB_WR_RDMA_WRITE_WITH_IMM,
	[HIL_WR_READ] = IB_WR_RDMA_READ,
	[HIL_WR_REG_MR] = IB_WR_REG_MR,
	[HIL_WR_LOCAL_INV] = IB_WR_LOCAL_INV,
	[HIL_WR_SEND_INV] = IB_WR_SEND_WITH_INV,
};

void hil_port_batch_free(struct hil_port_batch *b)
{
	kfree(b->swrs);
	kfree(b->rwrs);
	kfree(b->sges);
	kfree(b->bad_sges);
	kfree(b);
}

struct hil_port_batch *hil_port_batch_alloc(enum hil_queue queue, u32 n, u32 nbad)
{
	struct hil_port_batch *b = kzalloc(sizeof(*b), GFP_KERNEL);

	if (!b)
		return NULL;
	b->queue = queue;
	b->nbad = nbad;
	if (queue == HIL_SQ)
		b->swrs = kcalloc(n, sizeof(*b->swrs), GFP_KERNEL);
	else
		b->rwrs = kcalloc(n, sizeof(*b->rwrs), GFP_KERNEL);
	b->sges = kcalloc(n, sizeof(*b->sges), GFP_KERNEL);
	if (nbad)
		b->bad_sges = kcalloc(nbad, sizeof(*b->bad_sges), GFP_KERNEL);
	if ((!b->swrs && !b->rwrs) || !b->sges || (nbad && !b->bad_sges)) {
		hil_port_batch_free(b);
		return NULL;
	}
	return b;
}

/* one SGE more than the device takes on the queue */
u32 hil_port_bad_sges(enum hil_queue queue)
{
	return (queue == HIL_SQ ? hil.dev.max_send_sge : hil.dev.max_recv_sge) + 1;
}

/* The SGE of WR i over slot `slot` of the QP's queue: none when len is 0. */
static struct ib_sge *slot_sge(struct hil_qp *q, struct hil_port_batch *b, u32 i,
			       enum hil_queue queue, u32 slot, u32 len, bool inl)
{
	struct kv_slot *s = &q->pool->port.slots[queue][slot];

	/* an inline payload is copied by the driver from a kernel virtual address, not a DMA one */
	b->sges[i].addr = inl ? (u64)(uintptr_t)s->va : s->dma;
	b->sges[i].length = len;
	b->sges[i].lkey = q->pd->pd->local_dma_lkey;
	return len ? &b->sges[i] : NULL;
}

/* The MR a reg_mr, local_inv or send_inv WR names, and what the WR does with it. */
static int mr_wr(struct hil_cmd *cmd, struct hil_qp *q, const struct hil_send_req *s,
		 union kv_send_wr *w, u32 mr_idx)
{
	enum hil_send_kind kind = s->op->kind;
	/* send_inv: the peer's MR of that number, which the receiver invalidates */
	struct ib_mr *mr = kv_qp_mr(cmd, kind == HIL_SK_SINV ? q->peer : q, mr_idx);
	int rc;

	if (!mr)
		return -EINVAL;
	if (kind != HIL_SK_REG) {
		w->wr.ex.invalidate_rkey = mr->rkey;
		return 0;
	}
	rc = kv_mr_prepare_reg(cmd, q, mr, mr_idx, s->a.len, s->access, &w->reg);
	if (rc)
		return rc;
	kv_trace_mr(q, mr_idx, "map", mr);
	return 0;
}

int hil_port_send_wr(struct hil_cmd *cmd, struct hil_qp *q, const struct hil_send_req *s,
		     struct hil_port_batch *b, u32 i, struct hil_ctx *c)
{
	union kv_send_wr *w = &b->swrs[i];
	struct ib_send_wr *wr = &w->wr;
	enum hil_send_kind kind = s->op->kind;

	memset(w, 0, sizeof(*w));
	c->port.cqe.done = kv_done;
	wr->wr_cqe = &c->port.cqe;
	wr->opcode = opcodes[s->op->opcode];
	wr->send_flags = c->signaled ? IB_SEND_SIGNALED : 0;
	if (kind == HIL_SK_SEND || kind == HIL_SK_RDMA || kind == HIL_SK_SINV) {
		wr->sg_list = slot_sge(q, b, i, HIL_SQ, c->slot, s->a.len, s->inl);
		wr->num_sge = s->a.len ? 1 : 0;
		if (s->inl)
			wr->send_flags |= IB_SEND_INLINE;
	}
	if (s->op->imm)
		wr->ex.imm_data = cpu_to_be32(s->imm_given ? s->imm : (u32)c->wr_id);
	if (kind == HIL_SK_RDMA) {
		struct hil_pool *pp = q->peer->pool;
		enum hil_queue pq = s->op->opcode == HIL_WR_READ ? HIL_SQ : HIL_RQ;

		w->rdma.remote_addr = pp->port.slots[pq][c->seq % pp->nslots[pq]].dma;
		w->rdma.rkey = q->peer->pd->pd->unsafe_global_rkey;
	}
	if (kind == HIL_SK_REG || kind == HIL_SK_LINV || kind == HIL_SK_SINV)
		return mr_wr(cmd, q, s, w, s->mr + (u32)(c->wr_id - s->a.wr_id));
	return 0;
}

void hil_port_recv_wr(struct hil_qp *q, u32 len, struct hil_port_batch *b, u32 i,
		      struct hil_ctx *c)
{
	struct ib_recv_wr *wr = &b->rwrs[i];

	memset(wr, 0, sizeof(*wr));
	c->port.cqe.done = kv_done;
	wr->wr_cqe = &c->port.cqe;
	wr->sg_list = slot_sge(q, b, i, HIL_RQ, c->slot, len, false);
	wr->num_sge = len ? 1 : 0;
}

/*
 * bad=<i>: the WR gets one SGE more than the device's maximum, which a driver must refuse at
 * post time (returning it as *bad_wr), so a partial post can be made on an empty queue.
 */
void hil_port_make_invalid(struct hil_port_batch *b, u32 i)
{
	for (u32 j = 0; j < b->nbad; j++)
		b->bad_sges[j] = b->sges[i];
	if (b->queue == HIL_SQ) {
		b->swrs[i].wr.sg_list = b->bad_sges;
		b->swrs[i].wr.num_sge = b->nbad;
	} else {
		b->rwrs[i].sg_list = b->bad_sges;
		b->rwrs[i].num_sge = b->nbad;
	}
}

int hil_port_post(struct hil_qp *q, enum hil_queue queue, struct hil_port_batch *b, u32 n,
		  int *bad)
{
	int rc;

	*bad = -1;
	if (queue == HIL_SQ) {
		const struct ib_send_wr *bad_wr = NULL;

		for (u32 i = 1; i < n; i++)
			b->swrs[i - 1].wr.next = &b->swrs[i].wr;
		rc = ib_post_send(q->qp, &b->swrs[0].wr, &bad_wr);
		for (u32 i = 0; bad_wr && i < n; i++)
			if (&b->swrs[i].wr == bad_wr)
				*bad = i;
	} else {
		const struct ib_recv_wr *bad_wr = NULL;

		for (u32 i = 1; i < n; i++)
			b->rwrs[i - 1].next = &b->rwrs[i];
		rc = ib_post_recv(q->qp, &b->rwrs[0], &bad_wr);
		for (u32 i = 0; bad_wr && i < n; i++)
			if (&b->rwrs[i] == bad_wr)
				*bad = i;
	}
	return rc;
}
