// SPDX-License-Identifier: GPL-2.0-only
/*
 * hil-verbs-lifecycle: creates and destroys the verbs objects of one RDMA device from userspace,
 * through libibverbs and the device's provider (liberdma for erdma), and says what it did.
 *
 *   hil-verbs-lifecycle [-d DEVICE] [-r ROUNDS]
 *
 * Each round: open the device, allocate a PD, register two MRs (64 KiB with local write, remote
 * read and remote write; 8 KiB with local write only), create a completion channel and two CQs,
 * arm the first one, create an RC QP on them, query it, move it to ERROR, query it again, then
 * destroy everything in reverse order. One line per step on stdout:
 *
 *   ok <step> key=value ...
 *   FAIL <step>: <reason>          (then exit status 1; what was created is still destroyed)
 *
 * Built on the host against bookworm's libibverbs-dev, dynamically linked: the guest runs the
 * same bookworm libibverbs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int failed;

static void fail(const char *step, const char *why)
{
	printf("FAIL %s: %s\n", step, why);
	fflush(stdout);
	failed = 1;
}

static void fail_errno(const char *step, int err)
{
	fail(step, strerror(err ? err : EIO));
}

/* A release call's line: "ok " and what `fmt` says, or its FAIL line when it returned `err`. */
static void __attribute__((format(printf, 3, 4))) released(const char *step, int err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		fail_errno(step, err);
		return;
	}
	printf("ok ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void dereg(struct ibv_mr *mr, const char *name)
{
	unsigned int key = mr->lkey;

	released("dereg_mr", ibv_dereg_mr(mr), "dereg_mr name=%s lkey=0x%x", name, key);
}

static const char *state_name(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "UNKNOWN";
	}
}

static struct ibv_device *find_device(struct ibv_device **list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!name || strcmp(ibv_get_device_name(list[i]), name) == 0)
			return list[i];
	return NULL;
}

static int query_state(struct ibv_qp *qp, const char *step)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int err = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);

	if (err) {
		fail_errno(step, err);
		return -1;
	}
	printf("ok %s qpn=%u state=%s\n", step, qp->qp_num, state_name(attr.qp_state));
	return 0;
}

static void one_round(struct ibv_device *dev, int round)
{
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr_a = NULL, *mr_b = NULL;
	struct ibv_comp_channel *chan = NULL;
	struct ibv_cq *scq = NULL, *rcq = NULL;
	struct ibv_qp *qp = NULL;
	void *buf_a = NULL, *buf_b = NULL;
	const size_t len_a = 64 << 10, len_b = 8 << 10;
	const int access_a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	const int access_b = IBV_ACCESS_LOCAL_WRITE;
	int err;

	printf("ok round n=%d device=%s\n", round, ibv_get_device_name(dev));
	ctx = ibv_open_device(dev);
	if (!ctx) {
		fail_errno("open_device", errno);
		goto out;
	}
	printf("ok open_device\n");

	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fail_errno("alloc_pd", errno);
		goto out;
	}
	printf("ok alloc_pd handle=%u\n", pd->handle);

	if (posix_memalign(&buf_a, 4096, len_a) || posix_memalign(&buf_b, 4096, len_b)) {
		fail("alloc_buffers", "out of memory");
		goto out;
	}
	memset(buf_a, 0xa5, len_a);
	memset(buf_b, 0x5a, len_b);
	mr_a = ibv_reg_mr(pd, buf_a, len_a, access_a);
	if (!mr_a) {
		fail_errno("reg_mr", errno);
		goto out;
	}
	printf("ok reg_mr name=a lkey=0x%x rkey=0x%x length=%zu access=local_write,remote_read,remote_write\n",
	       mr_a->lkey, mr_a->rkey, len_a);
	mr_b = ibv_reg_mr(pd, buf_b, len_b, access_b);
	if (!mr_b) {
		fail_errno("reg_mr", errno);
		goto out;
	}
	printf("ok reg_mr name=b lkey=0x%x rkey=0x%x length=%zu access=local_write\n", mr_b->lkey,
	       mr_b->rkey, len_b);

	chan = ibv_create_comp_channel(ctx);
	if (!chan) {
		fail_errno("create_comp_channel", errno);
		goto out;
	}
	printf("ok create_comp_channel fd=%d\n", chan->fd);
	scq = ibv_create_cq(ctx, 64, NULL, chan, 0);
	if (!scq) {
		fail_errno("create_cq", errno);
		goto out;
	}
	printf("ok create_cq name=send cqe=%d\n", scq->cqe);
	rcq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	if (!rcq) {
		fail_errno("create_cq", errno);
		goto out;
	}
	printf("ok create_cq name=recv cqe=%d\n", rcq->cqe);
	err = ibv_req_notify_cq(scq, 0);
	if (err) {
		fail_errno("req_notify_cq", err);
		goto out;
	}
	printf("ok req_notify_cq name=send solicited=0\n");

	struct ibv_qp_init_attr qpa = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
	qp = ibv_create_qp(pd, &qpa);
	if (!qp) {
		fail_errno("create_qp", errno);
		goto out;
	}
	printf("ok create_qp qpn=%u max_send_wr=%u max_recv_wr=%u\n", qp->qp_num, qpa.cap.max_send_wr,
	       qpa.cap.max_recv_wr);
	if (query_state(qp, "query_qp"))
		goto out;

	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	err = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (err) {
		fail_errno("modify_qp", err);
		goto out;
	}
	printf("ok modify_qp qpn=%u to=ERR\n", qp->qp_num);
	if (query_state(qp, "query_qp"))
		goto out;

out:
	if (qp) {
		unsigned int qpn = qp->qp_num;

		released("destroy_qp", ibv_destroy_qp(qp), "destroy_qp qpn=%u", qpn);
	}
	if (rcq)
		released("destroy_cq", ibv_destroy_cq(rcq), "destroy_cq name=recv");
	if (scq)
		released("destroy_cq", ibv_destroy_cq(scq), "destroy_cq name=send");
	if (chan)
		released("destroy_comp_channel", ibv_destroy_comp_channel(chan), "destroy_comp_channel");
	if (mr_b)
		dereg(mr_b, "b");
	if (mr_a)
		dereg(mr_a, "a");
	if (pd)
		released("dealloc_pd", ibv_dealloc_pd(pd), "dealloc_pd");
	if (ctx)
		released("close_device", ibv_close_device(ctx), "close_device");
	free(buf_a);
	free(buf_b);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	int rounds = 1, opt, n = 0;
	struct ibv_device **list, *dev;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:r:h")) != -1) {
		switch (opt) {
		case 'd':
			name = optarg;
			break;
		case 'r':
			rounds = atoi(optarg);
			if (rounds < 1) {
				fprintf(stderr, "hil-verbs-lifecycle: -r wants a count >= 1\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: hil-verbs-lifecycle [-d DEVICE] [-r ROUNDS]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		fail_errno("get_device_list", errno);
		return 1;
	}
	dev = find_device(list, n, name);
	if (!dev) {
		fail("get_device_list", name ? "no such RDMA device" : "no RDMA device");
		ibv_free_device_list(list);
		return 1;
	}
	for (int r = 1; r <= rounds && !failed; r++)
		one_round(dev, r);
	ibv_free_device_list(list);
	return failed ? 1 : 0;
}
