// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel executor's own operations (guest/common/commands.def): clear empties its trace
 * buffer; sleep and mark (checked by the core, core_run.c) as the kernel does them.
 */
#include <linux/delay.h>
#include <linux/kernel.h>

#include "kv.h"

int hil_op_clear(struct hil_cmd *cmd)
{
	kv_trace_clear();
	WRITE_ONCE(kv.failed, 0);
	return 0;
}

int hil_port_sleep(struct hil_cmd *cmd, u32 ms)
{
	/* interruptible: a long sleep step is the scenario's wait, not a task the hung-task detector should report */
	msleep_interruptible(ms);
	return 0;
}

int hil_port_mark(struct hil_cmd *cmd, u32 id)
{
	pr_info("hil-mark %u\n", id);
	return 0;
}
