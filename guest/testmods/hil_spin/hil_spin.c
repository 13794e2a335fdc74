// SPDX-License-Identifier: GPL-2.0
/*
 * A test module that freezes a guest the way a driver bug can: its init spins with preemption
 * off, so on the harness's single-CPU, non-preemptible guest nothing else runs again (no SSH, no
 * hung-task detector) while QEMU goes on. The harness's freeze handling (harness/suite/freeze.ts)
 * must then take the CPU's stack with an NMI and name hil_spin_forever in it. Never loaded by a
 * scenario: only the integration test of that handling inserts it.
 */
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/processor.h>

static noinline void hil_spin_forever(void)
{
	for (;;)
		cpu_relax();
}

static int __init hil_spin_init(void)
{
	pr_info("hil_spin: spinning with preemption off\n");
	preempt_disable();
	hil_spin_forever();
	return 0;
}

module_init(hil_spin_init);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("erdma-hil test: freezes the guest's CPU");
