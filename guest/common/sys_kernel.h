/* SPDX-License-Identifier: GPL-2.0-only */
/* What the shared C of guest/common takes from the kernel, in hil_kverbs. */
#ifndef HIL_SYS_KERNEL_H
#define HIL_SYS_KERNEL_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/types.h>

/* the <stdint.h> limits the shared C uses */
#define UINT32_MAX U32_MAX
#define UINT64_MAX U64_MAX
#define INT32_MAX S32_MAX

/* a failed command's error text, as its "done" record carries it */
#define HIL_ERR_LEN 120
/* a trace record as it is built (on the stack of whoever writes it) */
#define HIL_REC_LEN 640

/* a verbs call's name in an error text: HIL_VERB("post_send") */
#define HIL_VERB(name) "ib_" name

/* A number of the command language (kstrtoull(s, 0)), at most `max`: 0 or -EINVAL. */
static inline int hil_strtou64(const char *s, uint64_t max, uint64_t *out)
{
	u64 n;

	if (kstrtou64(s, 0, &n) || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

static inline uint64_t hil_now_ns(void)
{
	return ktime_get_ns();
}

/* Commands run in process context (the worker), where allocations may sleep. */
static inline void *hil_calloc(size_t n, size_t size)
{
	return kcalloc(n, size, GFP_KERNEL);
}

static inline void hil_free(const void *p)
{
	kfree(p);
}

/* `src` into `dst` of `size` bytes, cut to fit, always terminated */
static inline void hil_copy_str(char *dst, const char *src, size_t size)
{
	strscpy(dst, src, size);
}

/* Dotted-quad IPv4 text to a network-order address: true when it is one. */
static inline bool hil_ipv4(const char *text, __be32 *addr)
{
	return in4_pton(text, -1, (u8 *)addr, -1, NULL);
}

/* an rdma_cm call's return as 0 or a negative errno (the kernel's are that already) */
#define HIL_CM_RC(call) (call)

/*
 * What completion handlers and rdma_cm event handlers (softirq, workqueues, rdma_cm's threads)
 * share with the worker running commands.
 */
typedef atomic_t hil_atomic_t;
#define hil_atomic_read(a) atomic_read(a)
#define hil_atomic_set(a, v) atomic_set(a, v)
#define hil_atomic_inc_return(a) atomic_inc_return(a)
#define hil_set_bit(nr, word) set_bit(nr, word)
#define hil_read_once(x) READ_ONCE(x)
#define hil_write_once(x, v) WRITE_ONCE(x, v)
typedef spinlock_t hil_lock_t;
#define hil_lock_init(l) spin_lock_init(l)
#define hil_lock(l) spin_lock(l)
#define hil_unlock(l) spin_unlock(l)

#endif
