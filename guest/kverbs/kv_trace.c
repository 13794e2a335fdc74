// SPDX-License-Identifier: GPL-2.0-only
/*
 * The trace: one JSON object per line (the records guest/common/record.c builds), appended to a
 * fixed buffer from any context (completion handlers run in softirq), read through debugfs by
 * byte offset. Every record starts with "seq" (a counter that never goes back, not even when the
 * trace is cleared) and "ns" (time since the module loaded), then "ev" and the event's fields.
 * When the buffer is full, one {"ev":"overflow"} record is written and later records are counted
 * as dropped.
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

void hil_trace_emit(const char *fields, size_t len)
{
	char head[64];
	unsigned long flags;
	size_t need;
	int hn;

	spin_lock_irqsave(&tr.lock, flags);
	hn = scnprintf(head, sizeof(head), "{\"seq\":%llu,\"ns\":%llu,", tr.seq,
		       ktime_get_ns() - tr.t0);
	need = hn + len + 2;
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
	memcpy(tr.buf + tr.len + hn, fields, len);
	tr.buf[tr.len + hn + len] = '}';
	tr.buf[tr.len + hn + len + 1] = '\n';
	tr.len += need;
	tr.seq++;
	spin_unlock_irqrestore(&tr.lock, flags);
}
