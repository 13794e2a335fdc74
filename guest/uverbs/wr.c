// SPDX-License-Identifier: GPL-2.0-only
/*
 * Post building (guest/common/core_post.c runs the commands): a call's ibv_send_wr/ibv_recv_wr
 * chain and their SGEs over the QP's registered buffer, and ibv_post_send/ibv_post_recv. The
 * device sees a WR's index in its QP's pool as its wr_id (a completion is traced with the
 * scenario's); drain markers (drain.c) have wr_ids of their own.
 */
#include "uv.h"

/*
 * bad=<i>: WR i of a call gets UV_BAD_SGES SGEs. ibv_device_attr.max_sge is the lesser of the
 * send and receive limits (erdma: 1, while its provider takes 6 SGEs on a send), so max_sge+1
 * can be a valid WR; 64 is more than erdma's or siw's limit on either queue (6).
 */
#define UV_BAD_SGES 64

struct hil_port_batch {
	enum hil_queue queue;
	struct ibv_send_wr swrs[HIL_MAX_BATCH];
	struct ibv_recv_wr rwrs[HIL_MAX_BATCH];
	struct ibv_sge sges[HIL_MAX_BATCH];
	struct ibv_sge bad_sges[UV_BAD_SGES];
};

static const enum ibv_wr_opcode opcodes[] = {
	[HIL_WR_SEND] = IBV_WR_SEND,
	[HIL_WR_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
	[HIL_WR_WRITE] = IBV_WR_RDMA_WRITE,
	[HIL_WR_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[HIL_WR_READ] = IBV_WR_RDMA_READ,
	/* reg_mr and local_inv are refused when the input is read (cmd.c) */
	[HIL_WR_LOCAL_INV] = IBV_WR_LOCAL_INV,
	[HIL_WR_SEND_INV] = IBV_WR_SEND_WITH_INV,
};

struct hil_port_batch *hil_port_batch_alloc(enum hil_queue queue, uint32_t n, uint32_t nbad)
{
	struct hil_port_batch *b = n <= HIL_MAX_BATCH && nbad <= UV_BAD_SGES ?
					   malloc(sizeof(*b)) :
					   NULL;

	if (b)
		b->queue = queue;
	return b;
}

void hil_port_batch_free(struct hil_port_batch *b)
{
	free(b);
}

uint32_t hil_port_bad_sges(enum hil_queue queue)
{
	(void)queue;
	return UV_BAD_SGES;
}

/* The SGE of WR i over slot `slot` of the QP's queue: none when len is 0. */
static struct ibv_sge *slot_sge(struct hil_pool *pool, struct hil_port_batch *b, uint32_t i,
				enum hil_queue queue, uint32_t slot, uint32_t len)
{
	b->sges[i].addr = (uintptr_t)hil_port_slot(pool, queue, slot);
	b->sges[i].length = len;
	b->sges[i].lkey = pool->port.mr->lkey;
	return len ? &b->sges[i] : NULL;
}

int hil_port_send_wr(struct hil_cmd *cmd, struct hil_qp *q, const struct hil_send_req *s,
		     struct hil_port_batch *b, uint32_t i, struct hil_ctx *c)
{
	struct ibv_send_wr *wr = &b->swrs[i];

	(void)cmd;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = c->index;
	wr->opcode = opcodes[s->op->opcode];
	wr->sg_list = slot_sge(q->pool, b, i, HIL_SQ, c->slot, s->a.len);
	wr->num_sge = s->a.len ? 1 : 0;
	wr->send_flags = (c->signaled ? IBV_SEND_SIGNALED : 0) | (s->inl ? IBV_SEND_INLINE : 0);
	if (s->op->imm)
		wr->imm_data = htonl(s->imm_given ? s->imm : (uint32_t)c->wr_id);
	/* send_inv: the receiver invalidates the peer QP's buffer MR */
	if (s->op->kind == HIL_SK_SINV)
		wr->invalidate_rkey = q->peer->pool->port.mr->rkey;
	if (s->op->kind == HIL_SK_RDMA) {
		struct hil_pool *pp = q->peer->pool;
		enum hil_queue pq = s->op->opcode == HIL_WR_READ ? HIL_SQ : HIL_RQ;

		wr->wr.rdma.remote_addr = (uintptr_t)hil_port_slot(pp, pq, c->seq);
		wr->wr.rdma.rkey = pp->port.mr->rkey;
	}
	return 0;
}

void hil_port_recv_wr(struct hil_qp *q, uint32_t len, struct hil_port_batch *b, uint32_t i,
		      struct hil_ctx *c)
{
	struct ibv_recv_wr *wr = &b->rwrs[i];

	memset(wr, 0, sizeof(*wr));
	wr->wr_id = c->index;
	wr->sg_list = slot_sge(q->pool, b, i, HIL_RQ, c->slot, len);
	wr->num_sge = len ? 1 : 0;
}

/* Makes WR i carry UV_BAD_SGES SGEs, copies of its own first SGE. */
void hil_port_make_invalid(struct hil_port_batch *b, uint32_t i)
{
	for (uint32_t j = 0; j < UV_BAD_SGES; j++)
		b->bad_sges[j] = b->sges[i];
	if (b->queue == HIL_SQ) {
		b->swrs[i].sg_list = b->bad_sges;
		b->swrs[i].num_sge = UV_BAD_SGES;
	} else {
		b->rwrs[i].sg_list = b->bad_sges;
		b->rwrs[i].num_sge = UV_BAD_SGES;
	}
}

int hil_port_post(struct hil_qp *q, enum hil_queue queue, struct hil_port_batch *b, uint32_t n,
		  int *bad)
{
	int rc;

	*bad = -1;
	if (queue == HIL_SQ) {
		struct ibv_send_wr *bad_wr = NULL;

		for (uint32_t i = 1; i < n; i++)
			b->swrs[i - 1].next = &b->swrs[i];
		rc = -ibv_post_send(q->qp, &b->swrs[0], &bad_wr);
		for (uint32_t i = 0; bad_wr && i < n; i++)
			if (&b->swrs[i] == bad_wr)
				*bad = (int)i;
	} else {
		struct ibv_recv_wr *bad_wr = NULL;

		for (uint32_t i = 1; i < n; i++)
			b->rwrs[i - 1].next = &b->rwrs[i];
		rc = -ibv_post_recv(q->qp, &b->rwrs[0], &bad_wr);
		for (uint32_t i = 0; bad_wr && i < n; i++)
			if (&b->rwrs[i] == bad_wr)
				*bad = (int)i;
	}
	return rc;
}
