// SPDX-License-Identifier: GPL-2.0-only
/*
 * libibverbs under the core's objects (guest/common/core_obj.c): the devices librdmacm knows,
 * ibv_alloc_pd (userspace has no global rkey: rkey=global registers the QPs' buffers for remote
 * write and read, and WRITE/READ use the peer's MR rkey), ibv_create_cq (polled with
 * ibv_poll_cq: poll=direct only), a QP's buffers (one allocation, one MR), ibv_create_qp and QP
 * destruction.
 */
#include "uv.h"

/* ---- device ---- */

int hil_port_device_find(const char *name)
{
	for (int i = 0; uv.devs && uv.devs[i]; i++)
		if (!strcmp(ibv_get_device_name(uv.devs[i]->device), name)) {
			hil.dev.dev = uv.devs[i];
			return 0;
		}
	return -ENODEV;
}

int hil_port_device_of_id(struct rdma_cm_id *id)
{
	for (int i = 0; id->verbs && uv.devs && uv.devs[i]; i++)
		if (uv.devs[i] == id->verbs) {
			hil.dev.dev = id->verbs;
			return 0;
		}
	return -ENODEV;
}

int hil_port_device_open(struct hil_cmd *cmd)
{
	struct ibv_context *ctx = hil.dev.dev;
	struct hil_device *d = &hil.dev;
	struct ibv_device_attr attr;
	int rc = ibv_query_device(ctx, &attr);

	if (rc)
		return hil_fail(cmd, -rc, "ibv_query_device failed");
	hil_copy_str(d->name, ibv_get_device_name(ctx->device), sizeof(d->name));
	d->node_type = (uint32_t)ctx->device->node_type;
	d->max_qp_wr = (uint32_t)attr.max_qp_wr;
	d->max_cqe = (uint32_t)attr.max_cqe;
	d->max_qp_rd_atom = (uint32_t)attr.max_qp_rd_atom;
	d->max_qp_init_rd_atom = (uint32_t)attr.max_qp_init_rd_atom;
	/* the lesser of the send and receive limits (erdma: 1, while its provider takes 6 on a send) */
	d->max_send_sge = attr.max_sge > 0 ? (uint32_t)attr.max_sge : 0;
	d->max_recv_sge = d->max_send_sge;
	d->max_fast_reg_page_list_len = -1;
	return 0;
}

void hil_port_device_close(void)
{
	hil.dev.dev = NULL;
}

bool hil_port_id_on_device(struct rdma_cm_id *id)
{
	return id->verbs == hil.dev.dev;
}

const char *hil_port_id_device_name(struct rdma_cm_id *id)
{
	return id->verbs ? ibv_get_device_name(id->verbs->device) : NULL;
}

/* ---- PD and CQ ---- */

int hil_port_pd_alloc(struct hil_pd *pd)
{
	pd->pd = ibv_alloc_pd(hil.dev.dev);
	return pd->pd ? 0 : errno ? -errno : -ENOMEM;
}

void hil_port_pd_fields(struct hil_rec *r, const struct hil_pd *pd)
{
	(void)r;
	(void)pd;
}

int hil_port_pd_dealloc(struct hil_pd *pd)
{
	return -ibv_dealloc_pd(pd->pd);
}

int hil_port_cq_create(struct hil_cmd *cmd, struct hil_cq *cq, const char *poll, uint32_t depth,
		       uint32_t vector)
{
	/* other poll contexts are refused when the input is read (cmd.c) */
	(void)poll;
	if (vector >= (uint32_t)hil.dev.dev->num_comp_vectors)
		return hil_fail(cmd, -EINVAL, "vector=%u: the device has %d", vector,
				hil.dev.dev->num_comp_vectors);
	cq->cq = ibv_create_cq(hil.dev.dev, (int)depth, NULL, NULL, (int)vector);
	if (!cq->cq)
		return hil_fail(cmd, errno ? -errno : -ENOMEM, "ibv_create_cq failed");
	return 0;
}

int hil_port_cq_destroy(struct hil_cq *cq)
{
	return -ibv_destroy_cq(cq->cq);
}

/* ---- a QP's buffers ---- */

/* The buffers go with the QP: a graveyard MR would keep its PD from being deallocated. */
void hil_port_pool_retire(struct hil_pool *pool)
{
	if (pool->port.mr)
		ibv_dereg_mr(pool->port.mr);
	pool->port.mr = NULL;
	free(pool->port.buf);
	pool->port.buf = NULL;
}

void hil_port_pool_free(struct hil_pool *pool)
{
	hil_port_pool_retire(pool);
}

int hil_port_pool_alloc(struct hil_pool *pool, const struct hil_qp_params *p)
{
	size_t bytes = (size_t)(pool->nslots[HIL_SQ] + pool->nslots[HIL_RQ]) * pool->slot_len;
	int access = IBV_ACCESS_LOCAL_WRITE;

	bytes = (bytes + 4095) & ~(size_t)4095;
	pool->port.buf = aligned_alloc(4096, bytes);
	if (!pool->port.buf)
		return -ENOMEM;
	memset(pool->port.buf, 0, bytes);
	if (p->pd->global_rkey)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	pool->port.mr = ibv_reg_mr(p->pd->pd, pool->port.buf, bytes, access);
	return pool->port.mr ? 0 : -ENOMEM;
}

uint8_t *hil_port_slot(struct hil_pool *pool, enum hil_queue queue, uint32_t slot)
{
	size_t index = (queue == HIL_RQ ? pool->nslots[HIL_SQ] : 0) + slot % pool->nslots[queue];

	return pool->port.buf ? pool->port.buf + index * pool->slot_len : NULL;
}

/* the buffers are the program's own memory: nothing to hand over */
void hil_port_slot_sync(struct hil_pool *pool, enum hil_queue queue, uint32_t slot,
			bool for_device)
{
	(void)pool;
	(void)queue;
	(void)slot;
	(void)for_device;
}

/* ---- QPs ---- */

void hil_port_qp_attr(struct hil_qp *q, struct ibv_qp_init_attr *attr)
{
	attr->sq_sig_all = q->sig_all;
	attr->qp_type = IBV_QPT_RC;
}

int hil_port_qp_create(struct hil_cmd *cmd, struct hil_qp *q, struct ibv_qp_init_attr *attr)
{
	q->qp = ibv_create_qp(q->pd->pd, attr);
	if (!q->qp)
		return hil_fail(cmd, errno ? -errno : -EINVAL, "ibv_create_qp failed");
	return 0;
}

int hil_port_qp_destroy(struct hil_qp *q)
{
	if (!q->id)
		return -ibv_destroy_qp(q->qp);
	rdma_destroy_qp(q->id);
	return rdma_destroy_id(q->id) ? -errno : 0;
}

void hil_port_qp_release(struct hil_qp *q)
{
	(void)q;
}
