/* SPDX-License-Identifier: GPL-2.0-only */
/* What the shared C of guest/common takes from the kernel, in hil_kverbs. */
#ifndef HIL_SYS_KERNEL_H
#define HIL_SYS_KERNEL_H

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/string.h>
#include <linux/types.h>

/* the <stdint.h> limits the shared C uses */
#define UINT32_MAX U32_MAX
#define UINT64_MAX U64_MAX

/* a failed command's error text, as its "done" record carries it */
#define HIL_ERR_LEN 120

/* A number of the command language (kstrtoull(s, 0)), at most `max`: 0 or -EINVAL. */
static inline int hil_strtou64(const char *s, uint64_t max, uint64_t *out)
{
	u64 n;

	if (kstrtou64(s, 0, &n) || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

#endif
