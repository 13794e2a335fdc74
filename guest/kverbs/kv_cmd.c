// SPDX-License-Identifier: GPL-2.0-only
/*
 * This executor's side of the command language (guest/common/commands.def, checked by
 * guest/common/cmdlang.c when ctl is written): its operation table, clear, sleep and mark.
 */
#include <linux/delay.h>
#include <linux/kernel.h>

#include "kv.h"

static int (*const kv_ops[HIL_OP_COUNT])(struct hil_cmd *cmd) = {
#define HIL_COMMAND(name, keys, about) [HIL_OP_##name] = kv_op_##name,
#include "commands.def"
#undef HIL_COMMAND
};

int kv_run(struct hil_cmd *cmd)
{
	return kv_ops[cmd->op->id](cmd);
}

int kv_op_clear(struct hil_cmd *cmd)
{
	kv_trace_clear();
	WRITE_ONCE(kv.failed, 0);
	return 0;
}

int kv_op_sleep(struct hil_cmd *cmd)
{
	u32 ms;
	int rc = hil_arg_u32(cmd, "ms", 0, &ms);

	if (rc)
		return rc;
	if (ms > 600000)
		return hil_fail(cmd, -EINVAL, "ms=%u is more than 600000", ms);
	/* interruptible: a long sleep step is the scenario's wait, not a task the hung-task detector should report */
	msleep_interruptible(ms);
	return 0;
}

int kv_op_mark(struct hil_cmd *cmd)
{
	u32 id;
	int rc = hil_arg_u32(cmd, "id", 0, &id);

	if (rc)
		return rc;
	pr_info("hil-mark %u\n", id);
	return 0;
}
