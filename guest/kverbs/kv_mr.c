// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fast-registration MRs, a kernel verb (hil-uverbs refuses what needs them): MR i of a QP maps
 * its SQ buffer slot i.
 *
 *   post_send op=reg_mr mr=<i> [len=] [access=]   IB_WR_REG_MR of MR mr+k
 *       (ib_alloc_mr(IB_MR_TYPE_MEM_REG) on first use), mapped with ib_map_mr_sg over `len`
 *       bytes (default: all) of SQ slot mr+k, its key bumped with ib_update_fast_reg_key
 *   post_send op=local_inv mr=<i>                 IB_WR_LOCAL_INV of MR mr+k's rkey
 *   post_send op=send_inv mr=<i>                  IB_WR_SEND_WITH_INV of the peer's MR mr+k
 *
 * Each MR's allocation, mapping and deregistration (when its QP is destroyed) is an "mr" record.
 */
#include <linux/kernel.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "kv.h"

void kv_trace_mr(struct hil_qp *q, u32 idx, const char *action, struct ib_mr *mr)
{
	struct hil_rec r;

	hil_rec_begin(&r, "mr");
	hil_rec_str(&r, "qp", q->name);
	hil_rec_uint(&r, "mr", idx);
	hil_rec_str(&r, "action", action);
	hil_rec_uint(&r, "lkey", mr->lkey);
	hil_rec_uint(&r, "rkey", mr->rkey);
	hil_rec_commit(&r);
}

struct ib_mr *kv_qp_mr(struct hil_cmd *cmd, struct hil_qp *q, u32 idx)
{
	u32 max_sg = DIV_ROUND_UP(q->pool->slot_len, PAGE_SIZE) + 1;
	struct hil_qp_port *qp = &q->port;
	struct ib_mr *mr;

	if (!qp->mrs) {
		qp->nmrs = q->pool->nslots[HIL_SQ];
		qp->mrs = kcalloc(qp->nmrs, sizeof(*qp->mrs), GFP_KERNEL);
		if (!qp->mrs) {
			qp->nmrs = 0;
			hil_fail(cmd, -ENOMEM, "no memory for the MR table of %s", q->name);
			return NULL;
		}
	}
	if (idx >= qp->nmrs) {
		hil_fail(cmd, -EINVAL, "mr=%u: QP %s has MRs 0..%u (one per SQ slot)", idx, q->name,
			 qp->nmrs - 1);
		return NULL;
	}
	if (qp->mrs[idx])
		return qp->mrs[idx];
	mr = ib_alloc_mr(q->pd->pd, IB_MR_TYPE_MEM_REG, max_sg);
	if (IS_ERR(mr)) {
		hil_fail(cmd, PTR_ERR(mr), "ib_alloc_mr(MEM_REG, %u) failed", max_sg);
		return NULL;
	}
	qp->mrs[idx] = mr;
	kv_trace_mr(q, idx, "alloc", mr);
	return mr;
}

void kv_qp_mrs_free(struct hil_qp *q)
{
	struct hil_qp_port *qp = &q->port;
	struct hil_rec r;

	for (u32 i = 0; i < qp->nmrs; i++) {
		int rc;

		if (!qp->mrs[i])
			continue;
		rc = ib_dereg_mr(qp->mrs[i]);
		hil_rec_begin(&r, "mr");
		hil_rec_str(&r, "qp", q->name);
		hil_rec_uint(&r, "mr", i);
		hil_rec_str(&r, "action", "dereg");
		hil_rec_int(&r, "rc", rc);
		hil_rec_commit(&r);
	}
	kfree(qp->mrs);
	qp->mrs = NULL;
	qp->nmrs = 0;
}

int kv_mr_prepare_reg(struct hil_cmd *cmd, struct hil_qp *q, struct ib_mr *mr, u32 idx, u32 len,
		      int access, struct ib_reg_wr *wr)
{
	struct kv_slot *s = &q->pool->port.slots[HIL_SQ][idx];
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
