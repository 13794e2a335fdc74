// SPDX-License-Identifier: GPL-2.0-only
/*
 * The trace: one JSON object per line, appended to a fixed buffer from any context (completion
 * handlers run in softirq), read through debugfs by byte offset. Every record starts with
 * "seq" (a counter that never goes back, not even when the trace is cleared) and "ns" (time since
 * the module loaded), then "ev" and the event's fields. When the buffer is full, one
 * {"ev":"overflow"} record is written and later records are counted as dropped.
 */
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "kv.h"

#define KV_OVERFLOW_RESERVE 128

static struct {
	spinlock_t lock;
	/* serialises readers against clear */
	struct mutex read_lock;
	char *buf;
	size_t len;
	size_t cap;
	u64 seq;
	u64 dropped;
	bool overflowed;
	u64 t0;
} tr;

int kv_trace_init(size_t bytes)
{
	spin_lock_init(&tr.lock);
	mutex_init(&tr.read_lock);
	tr.buf = vmalloc(bytes);
	if (!tr.buf)
		return -ENOMEM;
	tr.cap = bytes;
	tr.t0 = ktime_get_ns();
	return 0;
}

void kv_trace_exit(void)
{
	vfree(tr.buf);
	tr.buf = NULL;
}

void kv_trace_clear(void)
{
	unsigned long flags;

	mutex_lock(&tr.read_lock);
	spin_lock_irqsave(&tr.lock, flags);
	tr.len = 0;
	tr.dropped = 0;
	tr.overflowed = false;
	spin_unlock_irqrestore(&tr.lock, flags);
	mutex_unlock(&tr.read_lock);
}

size_t kv_trace_bytes(void)
{
	return READ_ONCE(tr.len);
}

u64 kv_trace_dropped(void)
{
	return READ_ONCE(tr.dropped);
}

ssize_t kv_trace_read(char __user *ubuf, size_t count, loff_t *ppos)
{
	unsigned long flags;
	size_t len, n;
	loff_t pos = *ppos;

	if (pos < 0)
		return -EINVAL;
	mutex_lock(&tr.read_lock);
	spin_lock_irqsave(&tr.lock, flags);
	len = tr.len;
	spin_unlock_irqrestore(&tr.lock, flags);
	if (pos >= len) {
		mutex_unlock(&tr.read_lock);
		return 0;
	}
	/* bytes below len are never rewritten until a clear, which read_lock keeps out */
	n = min_t(size_t, count, len - pos);
	if (copy_to_user(ubuf, tr.buf + pos, n)) {
		mutex_unlock(&tr.read_lock);
		return -EFAULT;
	}
	mutex_unlock(&tr.read_lock);
	*ppos = pos + n;
	return n;
}

static void rec_put(struct kv_rec *r, const char *s, size_t n)
{
	if (r->len + n >= sizeof(r->buf)) {
		r->trunc = true;
		return;
	}
	memcpy(r->buf + r->len, s, n);
	r->len += n;
}

void kv_rec_printf(struct kv_rec *r, const char *fmt, ...)
{
	va_list ap;
	size_t room = sizeof(r->buf) - r->len;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		r->buf[r->len] = '\0';
		r->trunc = true;
		return;
	}
	r->len += n;
}

static void rec_key(struct kv_rec *r, const char *key)
{
	kv_rec_printf(r, ",\"%s\":", key);
}

static void rec_escaped(struct kv_rec *r, const char *s)
{
	rec_put(r, "\"", 1);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', c };

			rec_put(r, esc, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			kv_rec_printf(r, "\\u%04x", c);
		} else {
			rec_put(r, s, 1);
		}
	}
	rec_put(r, "\"", 1);
}

void kv_rec_begin(struct kv_rec *r, const char *ev)
{
	r->len = 0;
	r->trunc = false;
	kv_rec_printf(r, "\"ev\":\"%s\"", ev);
}

void kv_rec_str(struct kv_rec *r, const char *key, const char *val)
{
	rec_key(r, key);
	if (val)
		rec_escaped(r, val);
	else
		rec_put(r, "null", 4);
}

void kv_rec_int(struct kv_rec *r, const char *key, s64 val)
{
	kv_rec_printf(r, ",\"%s\":%lld", key, val);
}

void kv_rec_uint(struct kv_rec *r, const char *key, u64 val)
{
	kv_rec_printf(r, ",\"%s\":%llu", key, val);
}

void kv_rec_bool(struct kv_rec *r, const char *key, bool val)
{
	kv_rec_printf(r, ",\"%s\":%s", key, val ? "true" : "false");
}

void kv_rec_null(struct kv_rec *r, const char *key)
{
	kv_rec_printf(r, ",\"%s\":null", key);
}

void kv_rec_raw(struct kv_rec *r, const char *key, const char *json)
{
	rec_key(r, key);
	rec_put(r, json, strlen(json));
}

void kv_rec_commit(struct kv_rec *r)
{
	char head[64];
	unsigned long flags;
	size_t need;
	int hn;

	if (r->trunc)
		kv_rec_printf(r, ",\"truncated\":true");
	spin_lock_irqsave(&tr.lock, flags);
	hn = scnprintf(head, sizeof(head), "{\"seq\":%llu,\"ns\":%llu,", tr.seq,
		       ktime_get_ns() - tr.t0);
	need = hn + r->len + 2;
	if (tr.overflowed || tr.len + need + KV_OVERFLOW_RESERVE > tr.cap) {
		if (!tr.overflowed) {
			tr.len += scnprintf(tr.buf + tr.len, tr.cap - tr.len,
					    "{\"seq\":%llu,\"ns\":%llu,\"ev\":\"overflow\"}\n",
					    tr.seq, ktime_get_ns() - tr.t0);
			tr.seq++;
			tr.overflowed = true;
		}
		tr.dropped++;
		spin_unlock_irqrestore(&tr.lock, flags);
		return;
	}
	memcpy(tr.buf + tr.len, head, hn);
	memcpy(tr.buf + tr.len + hn, r->buf, r->len);
	tr.buf[tr.len + hn + r->len] = '}';
	tr.buf[tr.len + hn + r->len + 1] = '\n';
	tr.len += need;
	tr.seq++;
	spin_unlock_irqrestore(&tr.lock, flags);
}
