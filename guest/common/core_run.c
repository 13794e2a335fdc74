// SPDX-License-Identifier: GPL-2.0-only
/*
 * Running a command: its operation (the table is commands.def's), between a "cmd" record (its
 * line) and a "done" record (its return, how long it took, its error text); and the operations
 * that take a value and hand it to the executor: sleep and mark.
 */
#include "core.h"

static int (*const hil_ops[HIL_OP_COUNT])(struct hil_cmd *cmd) = {
#define HIL_COMMAND(name, keys, about) [HIL_OP_##name] = hil_op_##name,
#include "commands.def"
#undef HIL_COMMAND
};

int hil_execute(struct hil_cmd *cmd)
{
	uint64_t t0 = hil_now_ns();
	struct hil_rec r;
	int rc;

	hil_rec_begin(&r, "cmd");
	hil_rec_uint(&r, "id", cmd->id);
	hil_rec_str(&r, "line", cmd->line);
	hil_rec_commit(&r);

	rc = hil_ops[cmd->op->id](cmd);

	hil_rec_begin(&r, "done");
	hil_rec_uint(&r, "id", cmd->id);
	hil_rec_str(&r, "op", cmd->op->name);
	hil_rec_int(&r, "rc", rc);
	hil_rec_uint(&r, "us", (hil_now_ns() - t0) / 1000);
	if (cmd->err[0])
		hil_rec_str(&r, "err", cmd->err);
	hil_rec_commit(&r);
	return rc;
}

/* sleep ms=<n>: at most ten minutes */
int hil_op_sleep(struct hil_cmd *cmd)
{
	uint32_t ms;
	int rc = hil_arg_u32(cmd, "ms", 0, &ms);

	if (rc)
		return rc;
	if (ms > 600000)
		return hil_fail(cmd, -EINVAL, "ms=%u is more than 600000", ms);
	return hil_port_sleep(cmd, ms);
}

/* mark id=<n>: "hil-mark <n>" in the kernel log, where a scenario's console slice ends */
int hil_op_mark(struct hil_cmd *cmd)
{
	uint32_t id;
	int rc = hil_arg_u32(cmd, "id", 0, &id);

	if (rc)
		return rc;
	return hil_port_mark(cmd, id);
}
