/* SPDX-License-Identifier: GPL-2.0-only */
/* What the shared C of guest/common takes from libc, in hil-uverbs. */
#ifndef HIL_SYS_LIBC_H
#define HIL_SYS_LIBC_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* a failed command's error text, as its "done" record carries it */
#define HIL_ERR_LEN 160
/* a trace record as it is built */
#define HIL_REC_LEN 2048

/* a verbs call's name in an error text: HIL_VERB("post_send") */
#define HIL_VERB(name) "ibv_" name

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

static inline uint64_t hil_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void *hil_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

static inline void hil_free(const void *p)
{
	free((void *)p);
}

/* `src` into `dst` of `size` bytes, cut to fit, always terminated */
static inline void hil_copy_str(char *dst, const char *src, size_t size)
{
	snprintf(dst, size, "%s", src);
}

/* Dotted-quad IPv4 text to a network-order address: true when it is one. */
static inline bool hil_ipv4(const char *text, uint32_t *addr)
{
	return inet_pton(AF_INET, text, addr) == 1;
}

/* an rdma_cm call's return as 0 or a negative errno (librdmacm's are -1 with errno) */
#define HIL_CM_RC(call) ((call) ? -errno : 0)

/* hil-uverbs has one thread: what the kernel executor shares between contexts is plain here */
typedef struct {
	int counter;
} hil_atomic_t;
#define hil_atomic_read(a) ((a)->counter)
#define hil_atomic_set(a, v) ((a)->counter = (v))
#define hil_atomic_inc_return(a) (++(a)->counter)
#define hil_set_bit(nr, word) (*(word) |= 1UL << (nr))
#define hil_read_once(x) (x)
#define hil_write_once(x, v) ((x) = (v))
typedef int hil_lock_t;
#define hil_lock_init(l) ((void)(l))
#define hil_lock(l) ((void)(l))
#define hil_unlock(l) ((void)(l))

#endif
