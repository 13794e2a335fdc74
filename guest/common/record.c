// SPDX-License-Identifier: GPL-2.0-only
/* Trace records, built field by field (record.h). Compiled into both executors. */
#include "record.h"

/* room kept at the end of a record for ,"truncated":true */
#define HIL_REC_RESERVE 24
#define HIL_TRUNCATED ",\"truncated\":true"

static void rec_put(struct hil_rec *r, const char *s, size_t n)
{
	if (r->trunc || r->len + n + HIL_REC_RESERVE >= sizeof(r->buf)) {
		r->trunc = true;
		return;
	}
	memcpy(r->buf + r->len, s, n);
	r->len += n;
}

void hil_rec_printf(struct hil_rec *r, const char *fmt, ...)
{
	size_t room = sizeof(r->buf) - HIL_REC_RESERVE - r->len;
	va_list ap;
	int n;

	if (r->trunc)
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		r->buf[r->len] = '\0';
		r->trunc = true;
		return;
	}
	r->len += (size_t)n;
}

static void rec_escaped(struct hil_rec *r, const char *s)
{
	rec_put(r, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };

			rec_put(r, esc, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			hil_rec_printf(r, "\\u%04x", c);
		} else {
			rec_put(r, s, 1);
		}
	}
	rec_put(r, "\"", 1);
}

void hil_rec_begin(struct hil_rec *r, const char *ev)
{
	r->len = 0;
	r->trunc = false;
	hil_rec_printf(r, "\"ev\":\"%s\"", ev);
}

void hil_rec_str(struct hil_rec *r, const char *key, const char *val)
{
	hil_rec_printf(r, ",\"%s\":", key);
	if (val)
		rec_escaped(r, val);
	else
		rec_put(r, "null", 4);
}

void hil_rec_int(struct hil_rec *r, const char *key, int64_t val)
{
	hil_rec_printf(r, ",\"%s\":%lld", key, (long long)val);
}

void hil_rec_uint(struct hil_rec *r, const char *key, uint64_t val)
{
	hil_rec_printf(r, ",\"%s\":%llu", key, (unsigned long long)val);
}

void hil_rec_bool(struct hil_rec *r, const char *key, bool val)
{
	hil_rec_printf(r, ",\"%s\":%s", key, val ? "true" : "false");
}

void hil_rec_null(struct hil_rec *r, const char *key)
{
	hil_rec_printf(r, ",\"%s\":null", key);
}

void hil_rec_commit(struct hil_rec *r)
{
	if (r->trunc) {
		/* the reserve keeps room for this */
		memcpy(r->buf + r->len, HIL_TRUNCATED, sizeof(HIL_TRUNCATED) - 1);
		r->len += sizeof(HIL_TRUNCATED) - 1;
	}
	hil_trace_emit(r->buf, r->len);
}

void hil_trace_hello(int version, const char *release, int pid)
{
	struct hil_rec r;

	hil_rec_begin(&r, "hello");
	hil_rec_int(&r, "version", version);
	hil_rec_str(&r, "release", release);
	hil_rec_int(&r, "pid", pid);
	hil_rec_commit(&r);
}

void hil_trace_ibdev(const char *name, const char *action)
{
	struct hil_rec r;

	hil_rec_begin(&r, "ibdev");
	hil_rec_str(&r, "name", name);
	hil_rec_str(&r, "action", action);
	hil_rec_commit(&r);
}

void hil_trace_reject(const char *line, const char *why)
{
	struct hil_rec r;

	hil_rec_begin(&r, "reject");
	hil_rec_str(&r, "line", line);
	hil_rec_str(&r, "why", why);
	hil_rec_commit(&r);
}
