// SPDX-License-Identifier: GPL-2.0
/*
 * A test module that freezes a guest the way a driver bug can (a spin under a lock taken with
 * irqsave): its init spins with preemption and interrupts off, so on the harness's single-CPU
 * guest nothing else runs again (no SSH, no hung-task detector, no timer) while QEMU goes on. The
 * harness's freeze handling (harness/suite/freeze.ts) must then take the CPU's stack with an NMI
 * and name hil_spin_forever in it. With interrupts on, the NMI could land in a timer interrupt
 * taken on top of the spin, and the interrupted context would change from capture to capture.
 * Never loaded by a scenario: only the integration tests of that handling insert it.
 */
#include <linux/irqflags.h>
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
	pr_info("hil_spin: spinning with preemption and interrupts off\n");
	preempt_disable();
	local_irq_disable();
	hil_spin_forever();
	return 0;
}

module_init(hil_spin_init);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("erdma-hil test: freezes the guest's CPU");
