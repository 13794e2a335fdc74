/* SPDX-License-Identifier: GPL-2.0-only */
/* What the shared C of guest/common takes from libc, in hil-uverbs. */
#ifndef HIL_SYS_LIBC_H
#define HIL_SYS_LIBC_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* a failed command's error text, as its "done" record carries it */
#define HIL_ERR_LEN 160

/*
 * A number of the command language, read as the kernel's kstrtoull(s, 0) reads it (an optional
 * '+', never a '-', which strtoull would negate), at most `max`: 0 or -EINVAL.
 */
static inline int hil_strtou64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long n;
	char *end;

	if (*s == '-')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || *end || end == s || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

#endif
