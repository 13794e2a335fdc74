// SPDX-License-Identifier: GPL-2.0-only
/*
 * This executor's side of the command language (guest/common/commands.def, checked by
 * guest/common/cmdlang.c): the kernel executor's operations and values it refuses when the input
 * is checked, before anything runs, and sleep and mark as a program does them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "uv.h"

#define REFUSED "not run by the user executor: "

/* Operations of the kernel executor this one refuses, and why. */
static const char *const uv_refused[HIL_OP_COUNT] = {
	[HIL_OP_clear] = REFUSED "it empties the kernel executor's trace buffer; this executor's "
				 "trace is its stdout",
	[HIL_OP_bench] = REFUSED "it is the kernel executor's throughput loop "
				 "(ib_process_cq_direct)",
};

/* refused when the input is read: never run */
int hil_op_clear(struct hil_cmd *cmd)
{
	return hil_fail(cmd, -EOPNOTSUPP, "%s", uv_refused[HIL_OP_clear]);
}

int hil_op_bench(struct hil_cmd *cmd)
{
	return hil_fail(cmd, -EOPNOTSUPP, "%s", uv_refused[HIL_OP_bench]);
}

int hil_port_sleep(struct hil_cmd *cmd, uint32_t ms)
{
	(void)cmd;
	uv_sleep_us(ms * 1000U);
	return 0;
}

int hil_port_mark(struct hil_cmd *cmd, uint32_t id)
{
	char line[48];
	int fd, n, rc;

	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return hil_fail(cmd, -errno, "cannot open /dev/kmsg");
	n = snprintf(line, sizeof(line), "hil-mark %u\n", id);
	rc = write(fd, line, n) == n ? 0 : -errno;
	close(fd);
	if (rc)
		return hil_fail(cmd, rc, "cannot write to /dev/kmsg");
	return 0;
}

/*
 * A user-only check of values the line fixes: kernel poll contexts, and the send operations
 * libibverbs cannot post here. There is no IBV_WR_REG_MR (fast registration is a kernel verb), and
 * IBV_WR_LOCAL_INV invalidates a memory window or a fast-registered MR, neither of which this
 * executor makes; libsiw and rdma-core's erdma provider refuse the opcode besides.
 */
static int check_user_values(const struct hil_cmd *cmd, const char **why)
{
	const char *poll = hil_arg(cmd, "poll");
	const char *op = hil_arg(cmd, "op");

	if (cmd->op->id == HIL_OP_cq && poll && strcmp(poll, "direct")) {
		*why = REFUSED "poll= other than direct is a kernel poll context; this executor polls "
			       "with ibv_poll_cq (poll=direct)";
		return -EOPNOTSUPP;
	}
	if (cmd->op->id != HIL_OP_post_send)
		return 0;
	if (op && !strcmp(op, "reg_mr")) {
		*why = REFUSED "op=reg_mr is fast registration (IB_WR_REG_MR), a kernel verb; "
			       "libibverbs has no IBV_WR_REG_MR";
		return -EOPNOTSUPP;
	}
	if (op && !strcmp(op, "local_inv")) {
		*why = REFUSED "op=local_inv (IBV_WR_LOCAL_INV) needs a memory window or "
			       "fast-registered MR, which it does not make; libsiw and liberdma "
			       "refuse the opcode";
		return -EOPNOTSUPP;
	}
	if (hil_arg(cmd, "access") || hil_arg(cmd, "mr")) {
		*why = REFUSED "access= and mr= name fast-registration MRs (op=reg_mr), a kernel verb";
		return -EOPNOTSUPP;
	}
	return 0;
}

int uv_parse(const char *line, size_t len, struct hil_cmd *cmd, const char **why)
{
	return hil_parse(line, len, cmd, uv_refused, why) ?: check_user_values(cmd, why);
}
