// SPDX-License-Identifier: GPL-2.0-only
/*
 * hil_oops: makes the guest kernel report a crash of a chosen kind, so the console parser's golden
 * logs (test/fixtures/console/) hold real reports of kinds no run of the harness provokes on its
 * own. test/support/console-capture.ts loads it as `insmod hil_oops.ko what=<kind>`:
 *
 *   null        a NULL pointer write in process context (insmod's): "BUG: kernel NULL pointer
 *               dereference" and an Oops; insmod is killed, the kernel carries on
 *   bug         BUG() in process context: "kernel BUG at" and an Oops (invalid opcode)
 *   timer-null  a NULL pointer write in a timer callback (softirq) a second after loading, when
 *               the guest is idle (the interrupted task is the idle task, whose stack does not
 *               change from run to run): the Oops, then "Kernel panic - not syncing: Fatal
 *               exception in interrupt"
 *
 * The NULL write is LKDTM's (drivers/misc/lkdtm/bugs.c, lkdtm_EXCEPTION): through a volatile
 * pointer, so the compiler emits the store rather than a trap.
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/timer.h>

static char *what = "";
module_param(what, charp, 0444);
MODULE_PARM_DESC(what, "null | bug | timer-null");

static struct timer_list oops_timer;

static void write_null(void)
{
	*((volatile int *)NULL) = 0;
}

static void oops_in_timer(struct timer_list *t)
{
	write_null();
}

/* No exit function: after timer-null the module may never go away (it is "permanent"). */
static int __init hil_oops_init(void)
{
	if (!strcmp(what, "null")) {
		write_null();
	} else if (!strcmp(what, "bug")) {
		BUG();
	} else if (!strcmp(what, "timer-null")) {
		timer_setup(&oops_timer, oops_in_timer, 0);
		mod_timer(&oops_timer, jiffies + HZ);
		return 0;
	}
	pr_err("hil_oops: what=%s is not one of null, bug, timer-null\n", what);
	return -EINVAL;
}
module_init(hil_oops_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Provokes a kernel crash report of a chosen kind, for console parser fixtures");
