// SPDX-License-Identifier: GPL-2.0-only
/*
 * Throughput and latency of one QP of a local connected pair, measured in the kernel:
 *
 *   bench qp= [op=send|write] [iters=10000] [depth=16] [len=64] [signal=1] [timeout=60000]
 *
 * keeps up to `depth` WRs in flight, signals every `signal`-th (and the last), and for SEND
 * keeps the peer's receive queue full (each receive is reposted as it completes). Both CQs must
 * be poll=direct: the worker polls them itself. Latency is post -> completion polled, for the
 * signaled WRs. One {"ev":"bench"} record has the result; the WRs themselves are not traced.
 * The receives a SEND bench posts on the peer (one per RQ slot) stay posted for the next bench;
 * they are flushed, untraced, when the peer is destroyed.
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>

#include "kv.h"

#define KV_BENCH_MAX_SAMPLES (1U << 20)
/* how long an idle bench loop spins with yield() before it sleeps */
#define KV_BENCH_SPIN_NS (20 * NSEC_PER_MSEC)

static struct {
	bool active;
	u64 acked;
	u64 recvd;
	u32 errors;
	int first_status;
	u32 *lat;
	u32 nlat;
	u32 maxlat;
	struct hil_qp *receiver;
} bs;

static int repost_recv(struct hil_qp *receiver, struct hil_ctx *c)
{
	struct ib_recv_wr *wr = &receiver->pool->port.bench_rwrs[c->slot];
	int rc;

	wr->next = NULL;
	c->state = HIL_CTX_POSTED;
	rc = ib_post_recv(receiver->qp, wr, NULL);
	if (rc)
		c->state = HIL_CTX_FREE;
	return rc;
}

void kv_bench_done(struct hil_ctx *c, struct ib_wc *wc)
{
	if (c->queue == HIL_RQ)
		c->state = HIL_CTX_FREE;
	if (!bs.active)
		return;
	if (wc->status != IB_WC_SUCCESS) {
		if (!bs.errors++)
			bs.first_status = wc->status;
		return;
	}
	if (c->queue == HIL_SQ) {
		bs.acked = max_t(u64, bs.acked, (u64)c->seq + 1);
		if (bs.nlat < bs.maxlat)
			bs.lat[bs.nlat++] = (u32)min_t(u64, ktime_get_ns() - c->t_post, U32_MAX);
	} else {
		bs.recvd++;
		if (repost_recv(bs.receiver, c) && !bs.errors++)
			bs.first_status = -1;
	}
}

/* Posts a receive on every RQ slot of the receiver that has none (the ring is made once). */
static int fill_receives(struct hil_cmd *cmd, struct hil_qp *receiver)
{
	struct hil_pool *pp = receiver->pool;
	u32 n = pp->nslots[HIL_RQ], i;
	int rc;

	if (!pp->port.bench_rq) {
		struct hil_ctx **ring = kcalloc(n, sizeof(*ring), GFP_KERNEL);
		struct ib_recv_wr *wrs = kcalloc(n, sizeof(*wrs), GFP_KERNEL);
		struct ib_sge *sges = kcalloc(n, sizeof(*sges), GFP_KERNEL);

		if (!ring || !wrs || !sges) {
			kfree(ring);
			kfree(wrs);
			kfree(sges);
			return hil_fail(cmd, -ENOMEM, "no memory");
		}
		for (i = 0; i < n; i++) {
			struct hil_ctx *c = hil_ctx_get(pp);

			if (!c) {
				kfree(ring);
				kfree(wrs);
				kfree(sges);
				return hil_fail(cmd, -ENOSPC, "QP %s has posted max_wrs WRs", pp->name);
			}
			c->bench = 1;
			c->port.cqe.done = kv_done;
			c->queue = HIL_RQ;
			c->slot = i;
			c->state = HIL_CTX_FREE;
			ring[i] = c;
			sges[i].addr = pp->port.slots[HIL_RQ][i].dma;
			sges[i].length = pp->slot_len;
			sges[i].lkey = receiver->pd->pd->local_dma_lkey;
			wrs[i].wr_cqe = &c->port.cqe;
			wrs[i].sg_list = &sges[i];
			wrs[i].num_sge = 1;
		}
		pp->port.bench_rq = ring;
		pp->port.bench_rwrs = wrs;
		pp->port.bench_rsges = sges;
	}
	for (i = 0; i < n; i++) {
		if (pp->port.bench_rq[i]->state == HIL_CTX_POSTED)
			continue;
		rc = repost_recv(receiver, pp->port.bench_rq[i]);
		if (rc)
			return hil_fail(cmd, rc, "ib_post_recv on %s failed", pp->name);
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static void trace_result(struct hil_qp *q, const char *op, u32 iters, u32 depth, u32 len,
			 u32 signal, u64 posted, u64 ns, int rc)
{
	struct hil_rec r;
	u64 sum = 0;
	u32 i;

	hil_rec_begin(&r, "bench");
	hil_rec_str(&r, "qp", q->name);
	hil_rec_str(&r, "op", op);
	hil_rec_uint(&r, "iters", iters);
	hil_rec_uint(&r, "depth", depth);
	hil_rec_uint(&r, "len", len);
	hil_rec_uint(&r, "signal", signal);
	hil_rec_uint(&r, "posted", posted);
	hil_rec_uint(&r, "completed", bs.acked);
	hil_rec_uint(&r, "ns", ns);
	hil_rec_uint(&r, "wrs_per_s", ns ? div64_u64(bs.acked * NSEC_PER_SEC, ns) : 0);
	hil_rec_uint(&r, "bytes", bs.acked * len);
	hil_rec_uint(&r, "errors", bs.errors);
	if (bs.errors)
		hil_rec_int(&r, "first_status", bs.first_status);
	hil_rec_uint(&r, "samples", bs.nlat);
	if (bs.nlat) {
		sort(bs.lat, bs.nlat, sizeof(u32), cmp_u32, NULL);
		for (i = 0; i < bs.nlat; i++)
			sum += bs.lat[i];
		hil_rec_uint(&r, "lat_min_ns", bs.lat[0]);
		hil_rec_uint(&r, "lat_p50_ns", bs.lat[bs.nlat / 2]);
		hil_rec_uint(&r, "lat_p99_ns", bs.lat[(u64)bs.nlat * 99 / 100]);
		hil_rec_uint(&r, "lat_max_ns", bs.lat[bs.nlat - 1]);
		hil_rec_uint(&r, "lat_avg_ns", div_u64(sum, bs.nlat));
	}
	hil_rec_int(&r, "rc", rc);
	hil_rec_commit(&r);
}

int hil_op_bench(struct hil_cmd *cmd)
{
	const char *op = hil_arg(cmd, "op") ?: "send";
	struct hil_qp *q = hil_find_qp(hil_arg(cmd, "qp"));
	struct hil_ctx **ring = NULL;
	struct ib_rdma_wr *wrs = NULL;
	struct ib_sge *sges = NULL;
	u32 iters, depth, len, signal, ms, nrecv = 0, i;
	unsigned long deadline;
	bool send;
	u64 posted = 0, idle_since = 0, t0;
	int rc;

	if (!q)
		return hil_fail(cmd, -ENOENT, "no QP %s", hil_arg(cmd, "qp"));
	rc = hil_arg_u32(cmd, "iters", 10000, &iters) ?: hil_arg_u32(cmd, "depth", 16, &depth) ?:
	     hil_arg_u32(cmd, "len", 64, &len) ?: hil_arg_u32(cmd, "signal", 1, &signal) ?:
	     hil_arg_u32(cmd, "timeout", 60000, &ms);
	if (rc)
		return rc;
	if (strcmp(op, "send") && strcmp(op, "write"))
		return hil_fail(cmd, -EINVAL, "op=%s: send or write", op);
	send = !strcmp(op, "send");
	if (!q->peer)
		return hil_fail(cmd, -EINVAL, "QP %s has no local peer", q->name);
	if (q->scq->port.poll != IB_POLL_DIRECT || q->peer->rcq->port.poll != IB_POLL_DIRECT)
		return hil_fail(cmd, -EINVAL, "bench needs poll=direct CQs");
	if (!iters || !depth || depth > q->pool->nslots[HIL_SQ] || !signal || signal > depth)
		return hil_fail(cmd, -EINVAL, "need 0 < signal <= depth <= sq, iters > 0");
	if (len > q->pool->slot_len || len > q->peer->pool->slot_len)
		return hil_fail(cmd, -EINVAL, "len=%u is more than buf", len);
	if (!send && (!q->pd->global_rkey || !q->peer->pd->global_rkey))
		return hil_fail(cmd, -EINVAL, "op=write needs pd rkey=global");

	memset(&bs, 0, sizeof(bs));
	bs.maxlat = min(iters, KV_BENCH_MAX_SAMPLES);
	bs.lat = vmalloc(bs.maxlat * sizeof(u32));
	ring = kcalloc(depth, sizeof(*ring), GFP_KERNEL);
	wrs = kcalloc(depth, sizeof(*wrs), GFP_KERNEL);
	sges = kcalloc(depth, sizeof(*sges), GFP_KERNEL);
	if (!bs.lat || !ring || !wrs || !sges) {
		rc = hil_fail(cmd, -ENOMEM, "no memory");
		goto out;
	}
	for (i = 0; i < depth; i++) {
		ring[i] = hil_ctx_get(q->pool);
		if (!ring[i]) {
			rc = hil_fail(cmd, -ENOSPC, "QP %s has posted max_wrs WRs", q->name);
			goto out;
		}
		ring[i]->bench = 1;
		ring[i]->port.cqe.done = kv_done;
		ring[i]->queue = HIL_SQ;
		ring[i]->state = HIL_CTX_POSTED;
	}
	bs.receiver = q->peer;
	if (send) {
		nrecv = q->peer->pool->nslots[HIL_RQ];
		if (depth > nrecv) {
			rc = hil_fail(cmd, -EINVAL, "depth=%u is more than the peer's rq=%u", depth,
				      nrecv);
			goto out;
		}
		rc = fill_receives(cmd, q->peer);
		if (rc)
			goto out;
	}
	bs.active = true;

	deadline = jiffies + msecs_to_jiffies(ms);
	t0 = ktime_get_ns();
	while (bs.acked < iters && !bs.errors) {
		struct ib_send_wr *first = NULL, *prev = NULL;
		u64 before = bs.acked + bs.recvd;

		while (posted < iters && posted - bs.acked < depth &&
		       (!send || posted - bs.recvd < nrecv)) {
			struct hil_ctx *c = ring[posted % depth];
			struct ib_rdma_wr *w = &wrs[posted % depth];
			struct ib_sge *sge = &sges[posted % depth];
			bool sig = (posted + 1) % signal == 0 || posted + 1 == iters;

			c->seq = posted;
			c->t_post = ktime_get_ns();
			memset(w, 0, sizeof(*w));
			sge->addr = q->pool->port.slots[HIL_SQ][posted % q->pool->nslots[HIL_SQ]].dma;
			sge->length = len;
			sge->lkey = q->pd->pd->local_dma_lkey;
			w->wr.wr_cqe = &c->port.cqe;
			w->wr.sg_list = len ? sge : NULL;
			w->wr.num_sge = len ? 1 : 0;
			w->wr.send_flags = sig ? IB_SEND_SIGNALED : 0;
			if (send) {
				w->wr.opcode = IB_WR_SEND;
			} else {
				struct hil_pool *pp = q->peer->pool;

				w->wr.opcode = IB_WR_RDMA_WRITE;
				w->remote_addr = pp->port.slots[HIL_RQ][posted % pp->nslots[HIL_RQ]].dma;
				w->rkey = q->peer->pd->pd->unsafe_global_rkey;
			}
			if (prev)
				prev->next = &w->wr;
			else
				first = &w->wr;
			prev = &w->wr;
			posted++;
		}
		if (first) {
			rc = ib_post_send(q->qp, first, NULL);
			if (rc) {
				hil_fail(cmd, rc, "ib_post_send failed after %llu WRs", posted);
				break;
			}
		}
		ib_process_cq_direct(q->scq->cq, 64);
		if (send && q->peer->rcq != q->scq)
			ib_process_cq_direct(q->peer->rcq->cq, 64);
		if (bs.acked + bs.recvd == before) {
			u64 now = ktime_get_ns();

			if (time_after(jiffies, deadline)) {
				rc = hil_fail(cmd, -ETIMEDOUT, "%llu of %u WRs completed", bs.acked,
					      iters);
				break;
			}
			if (!idle_since)
				idle_since = now;
			/*
			 * Let the device's threads (siw's, on a one-CPU guest) run: yield() while
			 * spinning (cond_resched() would wait for the tick, measured at 50x worse
			 * latency), then sleep (a whole tick without high-resolution timers). The
			 * spin outlasts the emulated device's round trip (a host process, 0.2-2 ms
			 * under TCG): with a 200 us spin every slower completion cost a 4 ms tick and
			 * the latency figures measured the tick, not the device.
			 */
			if (now - idle_since < KV_BENCH_SPIN_NS)
				yield();
			else
				usleep_range(5, 10);
		} else {
			idle_since = 0;
		}
	}
	if (!rc && bs.errors)
		rc = hil_fail(cmd, -EIO, "%u error completions (first status %d)", bs.errors,
			      bs.first_status);
	trace_result(q, op, iters, depth, len, signal, posted, ktime_get_ns() - t0, rc);
out:
	bs.active = false;
	vfree(bs.lat);
	bs.lat = NULL;
	kfree(sges);
	kfree(wrs);
	kfree(ring);
	return rc;
}
