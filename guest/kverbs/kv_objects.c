// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel verbs under the core's objects (guest/common/core_obj.c): the device the ib_client
 * saw, ib_alloc_pd (IB_PD_UNSAFE_GLOBAL_RKEY for rkey=global, which RDMA WRITE/READ to a peer's
 * buffers needs), ib_alloc_cq with the poll context asked for, a QP's buffers (one kmalloc'd,
 * DMA-mapped slot per WQE), ib_create_qp and QP destruction.
 */
#include <linux/kernel.h>
#include <linux/slab.h>

#include "kv.h"

/* ---- device ---- */

int hil_port_device_find(const char *name)
{
	hil.dev.dev = kv_device_by_name(name);
	return hil.dev.dev ? 0 : -ENODEV;
}

int hil_port_device_of_id(struct rdma_cm_id *id)
{
	if (!id->device || !kv_device_known(id->device))
		return -ENODEV;
	hil.dev.dev = id->device;
	return 0;
}

int hil_port_device_open(struct hil_cmd *cmd)
{
	struct ib_device *dev = hil.dev.dev;
	struct hil_device *d = &hil.dev;

	strscpy(d->name, dev_name(&dev->dev), sizeof(d->name));
	d->node_type = dev->node_type;
	d->max_qp_wr = dev->attrs.max_qp_wr;
	d->max_cqe = dev->attrs.max_cqe;
	d->max_qp_rd_atom = dev->attrs.max_qp_rd_atom;
	d->max_qp_init_rd_atom = dev->attrs.max_qp_init_rd_atom;
	d->max_send_sge = dev->attrs.max_send_sge;
	d->max_recv_sge = dev->attrs.max_recv_sge;
	d->max_fast_reg_page_list_len = dev->attrs.max_fast_reg_page_list_len;
	return 0;
}

void hil_port_device_close(void)
{
	hil.dev.dev = NULL;
}

bool hil_port_id_on_device(struct rdma_cm_id *id)
{
	return id->device == hil.dev.dev;
}

const char *hil_port_id_device_name(struct rdma_cm_id *id)
{
	return id->device ? dev_name(&id->device->dev) : NULL;
}

/* ---- PD and CQ ---- */

int hil_port_pd_alloc(struct hil_pd *pd)
{
	struct ib_pd *ibpd = ib_alloc_pd(hil.dev.dev, pd->global_rkey ? IB_PD_UNSAFE_GLOBAL_RKEY : 0);

	if (IS_ERR(ibpd))
		return PTR_ERR(ibpd);
	pd->pd = ibpd;
	return 0;
}

void hil_port_pd_fields(struct hil_rec *r, const struct hil_pd *pd)
{
	hil_rec_uint(r, "local_dma_lkey", pd->pd->local_dma_lkey);
	if (pd->global_rkey)
		hil_rec_uint(r, "rkey", pd->pd->unsafe_global_rkey);
}

int hil_port_pd_dealloc(struct hil_pd *pd)
{
	ib_dealloc_pd(pd->pd);
	return HIL_NO_RC;
}

static const char *const poll_names[] = {
	[IB_POLL_SOFTIRQ] = "softirq",
	[IB_POLL_WORKQUEUE] = "workqueue",
	[IB_POLL_UNBOUND_WORKQUEUE] = "unbound",
	[IB_POLL_DIRECT] = "direct",
};

int hil_port_cq_create(struct hil_cmd *cmd, struct hil_cq *cq, const char *poll, u32 depth,
		       u32 vector)
{
	struct ib_cq *ibcq;
	unsigned int ctx;

	for (ctx = 0; ctx < ARRAY_SIZE(poll_names); ctx++)
		if (poll_names[ctx] && !strcmp(poll_names[ctx], poll))
			break;
	if (ctx == ARRAY_SIZE(poll_names))
		return hil_fail(cmd, -EINVAL, "poll=%s: direct, softirq, workqueue or unbound", poll);
	ibcq = ib_alloc_cq(hil.dev.dev, cq, depth, vector, ctx);
	if (IS_ERR(ibcq))
		return hil_fail(cmd, PTR_ERR(ibcq), "ib_alloc_cq failed");
	cq->cq = ibcq;
	cq->port.poll = ctx;
	return 0;
}

int hil_port_cq_destroy(struct hil_cq *cq)
{
	ib_free_cq(cq->cq);
	return HIL_NO_RC;
}

/* ---- a QP's buffers ---- */

void hil_port_pool_free(struct hil_pool *pool)
{
	struct hil_pool_port *pp = &pool->port;

	for (unsigned int q = 0; q < 2; q++) {
		if (!pp->slots[q])
			continue;
		for (u32 i = 0; i < pool->nslots[q]; i++) {
			struct kv_slot *s = &pp->slots[q][i];

			if (!s->va)
				continue;
			ib_dma_unmap_single(pp->dev, s->dma, pool->slot_len, DMA_BIDIRECTIONAL);
			kfree(s->va);
		}
		kfree(pp->slots[q]);
		pp->slots[q] = NULL;
	}
	kfree(pp->bench_rq);
	kfree(pp->bench_rwrs);
	kfree(pp->bench_rsges);
	pp->bench_rq = NULL;
	pp->bench_rwrs = NULL;
	pp->bench_rsges = NULL;
}

int hil_port_pool_alloc(struct hil_pool *pool, const struct hil_qp_params *p)
{
	struct hil_pool_port *pp = &pool->port;

	pp->dev = hil.dev.dev;
	for (unsigned int q = 0; q < 2; q++) {
		pp->slots[q] = kcalloc(pool->nslots[q], sizeof(struct kv_slot), GFP_KERNEL);
		if (!pp->slots[q])
			return -ENOMEM;
		for (u32 i = 0; i < pool->nslots[q]; i++) {
			void *va = kzalloc(pool->slot_len, GFP_KERNEL);
			u64 dma;

			if (!va)
				return -ENOMEM;
			dma = ib_dma_map_single(pp->dev, va, pool->slot_len, DMA_BIDIRECTIONAL);
			if (ib_dma_mapping_error(pp->dev, dma)) {
				kfree(va);
				return -ENOMEM;
			}
			pp->slots[q][i].va = va;
			pp->slots[q][i].dma = dma;
		}
	}
	return 0;
}

/* Completions of a destroyed QP's WRs may still be in a CQ: its buffers stay until the pool goes. */
void hil_port_pool_retire(struct hil_pool *pool)
{
}

u8 *hil_port_slot(struct hil_pool *pool, enum hil_queue queue, u32 slot)
{
	return pool->port.slots[queue] ? pool->port.slots[queue][slot].va : NULL;
}

void hil_port_slot_sync(struct hil_pool *pool, enum hil_queue queue, u32 slot, bool for_device)
{
	u64 dma = pool->port.slots[queue][slot].dma;

	if (for_device)
		ib_dma_sync_single_for_device(pool->port.dev, dma, pool->slot_len,
					      DMA_BIDIRECTIONAL);
	else
		ib_dma_sync_single_for_cpu(pool->port.dev, dma, pool->slot_len, DMA_BIDIRECTIONAL);
}

/* ---- QPs ---- */

void hil_port_qp_attr(struct hil_qp *q, struct ib_qp_init_attr *attr)
{
	attr->event_handler = kv_qp_event;
	attr->qp_context = q->pool;
	attr->sq_sig_type = q->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	attr->qp_type = IB_QPT_RC;
}

int hil_port_qp_create(struct hil_cmd *cmd, struct hil_qp *q, struct ib_qp_init_attr *attr)
{
	struct ib_qp *ibqp = ib_create_qp(q->pd->pd, attr);

	if (IS_ERR(ibqp))
		return hil_fail(cmd, PTR_ERR(ibqp), "ib_create_qp failed");
	q->qp = ibqp;
	return 0;
}

int hil_port_qp_destroy(struct hil_qp *q)
{
	q->pool->port.destroyed_qp = q->qp;
	if (!q->id)
		return ib_destroy_qp(q->qp);
	rdma_destroy_qp(q->id);
	rdma_destroy_id(q->id);
	return 0;
}

void hil_port_qp_release(struct hil_qp *q)
{
	kv_qp_mrs_free(q);
}
