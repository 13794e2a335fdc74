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
 * and, for the debug kernel (guest/kconfig/debug.config), reports the kernel's checkers make and
 * the kernel survives; the module then stays loaded (an init that fails would run twice: busybox's
 * insmod retries a failed finit_module with init_module):
 *
 *   uaf           a read of a kmalloc'd object after kfree: KASAN's use-after-free report with
 *                 the allocation and free stacks
 *   kfence-uaf    the same with an object KFENCE sampled (allocations repeat until one comes from
 *                 its pool, about every 100 ms): KFENCE's report, from the fault on its guard page
 *   atomic-sleep  might_sleep() under a spinlock: "BUG: sleeping function called from invalid
 *                 context" (DEBUG_ATOMIC_SLEEP)
 *   lockdep       two mutexes taken in one order, then the other: lockdep's "possible circular
 *                 locking dependency" (PROVE_LOCKING); one task, so no deadlock
 *   refcount      refcount_inc() on a refcount_t of 0: "refcount_t: addition on 0;
 *                 use-after-free." and its WARN (every config)
 *
 * The NULL write is LKDTM's (drivers/misc/lkdtm/bugs.c, lkdtm_EXCEPTION): through a volatile
 * pointer, so the compiler emits the store rather than a trap.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kfence.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timer.h>

static char *what = "";
module_param(what, charp, 0444);
MODULE_PARM_DESC(what, "null | bug | timer-null | uaf | kfence-uaf | atomic-sleep | lockdep | refcount");

static struct timer_list oops_timer;

static void write_null(void)
{
	*((volatile int *)NULL) = 0;
}

static void oops_in_timer(struct timer_list *t)
{
	write_null();
}

static noinline void read_after_free(void)
{
	volatile char *object = kmalloc(64, GFP_KERNEL);

	if (!object)
		return;
	kfree((void *)object);
	pr_info("hil_oops: read after free: %d\n", object[8]);
}

static noinline void kfence_read_after_free(void)
{
	unsigned long deadline = jiffies + 30 * HZ;
	char *object;

	while (time_before(jiffies, deadline)) {
		object = kmalloc(32, GFP_KERNEL);
		if (!object)
			return;
		if (is_kfence_address(object)) {
			kfree(object);
			pr_info("hil_oops: read after free: %d\n", READ_ONCE(object[8]));
			return;
		}
		kfree(object);
		msleep(1);
	}
	pr_err("hil_oops: KFENCE gave no allocation in 30 s\n");
}

static DEFINE_SPINLOCK(atomic_lock);

static noinline void sleep_in_atomic(void)
{
	spin_lock(&atomic_lock);
	might_sleep();
	spin_unlock(&atomic_lock);
}

static DEFINE_MUTEX(lock_a);
static DEFINE_MUTEX(lock_b);

static noinline void inverted_lock_order(void)
{
	mutex_lock(&lock_a);
	mutex_lock(&lock_b);
	mutex_unlock(&lock_b);
	mutex_unlock(&lock_a);

	mutex_lock(&lock_b);
	mutex_lock(&lock_a);
	mutex_unlock(&lock_a);
	mutex_unlock(&lock_b);
}

static noinline void refcount_from_zero(void)
{
	refcount_t count = REFCOUNT_INIT(0);

	refcount_inc(&count);
}

/* No exit function: after timer-null the module may never go away (it is "permanent"). */
static int __init hil_oops_init(void)
{
	void (*checked)(void) = NULL;

	if (!strcmp(what, "uaf"))
		checked = read_after_free;
	else if (!strcmp(what, "kfence-uaf"))
		checked = kfence_read_after_free;
	else if (!strcmp(what, "atomic-sleep"))
		checked = sleep_in_atomic;
	else if (!strcmp(what, "lockdep"))
		checked = inverted_lock_order;
	else if (!strcmp(what, "refcount"))
		checked = refcount_from_zero;
	if (checked) {
		checked();
		pr_info("hil_oops: %s done\n", what);
		return 0;
	}
	if (!strcmp(what, "null")) {
		write_null();
	} else if (!strcmp(what, "bug")) {
		BUG();
	} else if (!strcmp(what, "timer-null")) {
		timer_setup(&oops_timer, oops_in_timer, 0);
		mod_timer(&oops_timer, jiffies + HZ);
		return 0;
	}
	pr_err("hil_oops: what=%s is not one of null, bug, timer-null, uaf, kfence-uaf, atomic-sleep, lockdep, refcount\n",
	       what);
	return -EINVAL;
}
module_init(hil_oops_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Provokes a kernel crash report of a chosen kind, for console parser fixtures");
