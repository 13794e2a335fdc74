// SPDX-License-Identifier: GPL-2.0-only
/*
 * The trace: one JSON object per line on stdout, in the in-kernel executor's format. Every
 * record starts with "seq" (counts up from 0) and "ns" (CLOCK_MONOTONIC since the program
 * started), then "ev" and the event's fields. Each line is flushed as it is written, so a run
 * killed from outside leaves whole lines up to the moment it stopped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "uv.h"

/* room kept at the end of a record for ,"truncated":true */
#define UV_REC_RESERVE 24

static uint64_t seq;
static uint64_t t0;

uint64_t uv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void uv_trace_init(void)
{
	t0 = uv_now_ns();
	seq = 0;
}

static void rec_put(struct uv_rec *r, const char *s, size_t n)
{
	if (r->trunc || r->len + n + UV_REC_RESERVE >= sizeof(r->buf)) {
		r->trunc = true;
		return;
	}
	memcpy(r->buf + r->len, s, n);
	r->len += n;
}

void uv_rec_printf(struct uv_rec *r, const char *fmt, ...)
{
	char tmp[UV_REC_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		r->trunc = true;
		return;
	}
	rec_put(r, tmp, (size_t)n);
}

static void rec_escaped(struct uv_rec *r, const char *s)
{
	rec_put(r, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };

			rec_put(r, esc, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			uv_rec_printf(r, "\\u%04x", c);
		} else {
			rec_put(r, s, 1);
		}
	}
	rec_put(r, "\"", 1);
}

void uv_rec_begin(struct uv_rec *r, const char *ev)
{
	r->len = 0;
	r->trunc = false;
	uv_rec_printf(r, "\"ev\":\"%s\"", ev);
}

void uv_rec_str(struct uv_rec *r, const char *key, const char *val)
{
	uv_rec_printf(r, ",\"%s\":", key);
	if (val)
		rec_escaped(r, val);
	else
		rec_put(r, "null", 4);
}

void uv_rec_int(struct uv_rec *r, const char *key, int64_t val)
{
	uv_rec_printf(r, ",\"%s\":%lld", key, (long long)val);
}

void uv_rec_uint(struct uv_rec *r, const char *key, uint64_t val)
{
	uv_rec_printf(r, ",\"%s\":%llu", key, (unsigned long long)val);
}

void uv_rec_bool(struct uv_rec *r, const char *key, bool val)
{
	uv_rec_printf(r, ",\"%s\":%s", key, val ? "true" : "false");
}

void uv_rec_null(struct uv_rec *r, const char *key)
{
	uv_rec_printf(r, ",\"%s\":null", key);
}

void uv_rec_commit(struct uv_rec *r)
{
	if (r->trunc) {
		/* the reserve keeps room for this */
		memcpy(r->buf + r->len, ",\"truncated\":true", 17);
		r->len += 17;
	}
	printf("{\"seq\":%llu,\"ns\":%llu,%.*s}\n", (unsigned long long)seq,
	       (unsigned long long)(uv_now_ns() - t0), (int)r->len, r->buf);
	fflush(stdout);
	seq++;
}
