// SPDX-License-Identifier: GPL-2.0-only
/*
 * hil_kverbs: runs verbs scenarios through the kernel verbs API and rdma_cm, so that
 * ib_drain_qp() and the driver's kernel paths are what runs. Driven from userspace through
 * debugfs, /sys/kernel/debug/hil_kverbs/:
 *
 *   ctl      (write) commands, one a line (guest/common/commands.def); a write is checked and
 *            queued at once, and fails with EINVAL if any of its lines is malformed (an
 *            {"ev":"reject"} record says why). The worker thread runs the queue in order.
 *   trace    (read)  the JSON-lines trace from the given offset (kv_trace.c)
 *   status   (read)  one JSON object: worker pid, the running command, queue length, ...
 *   wait     (read)  like status, after waiting up to wait_ms for the queue to run empty
 *   wait_ms  (rw)    how long a read of wait waits (default 10000)
 *   cut      (write) a command id: while that command runs, reads of wait return at once, as if
 *            wait_ms had run out (the harness tells a hung drain early: harness/suite/early-hang.ts)
 *
 * Blocking verbs (connect, drain, a poll that waits) run on the worker thread "hil_kverbs", so
 * a hung drain leaves that thread stuck (see /proc/<pid>/stack) and nothing else: reads of wait
 * time out, and rmmod is refused while a command is queued or running.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>

#include "kv.h"

#define KV_VERSION 1
#define KV_CTL_MAX 4096

static unsigned int trace_kb = 8192;
module_param(trace_kb, uint, 0444);
MODULE_PARM_DESC(trace_kb, "trace buffer size in KiB (default 8192)");

static unsigned int max_wrs = 65536;
module_param(max_wrs, uint, 0444);
MODULE_PARM_DESC(max_wrs, "work requests a QP may post over its lifetime (default 65536)");

struct kv_state kv;

/* A command accepted by a write of ctl, waiting for the worker or running. */
struct kv_queued {
	struct list_head node;
	struct hil_cmd cmd;
};

static struct {
	spinlock_t lock;
	struct list_head queue;
	unsigned int queued;
	struct kv_queued *busy;
	u64 busy_since;
	u64 next_id;
	u64 last_done;
	/* the command the waits were cut for (0: none) */
	u64 cut_id;
	wait_queue_head_t cmd_wq;
	wait_queue_head_t done_wq;
	struct task_struct *task;
} wk;

static u32 wait_ms = 10000;
static struct dentry *kv_dir;

/* ---- the devices the ib_client has seen ---- */

struct kv_devent {
	struct list_head node;
	struct ib_device *dev;
};

static LIST_HEAD(kv_devs);
static DEFINE_MUTEX(kv_devs_lock);

struct ib_device *kv_device_by_name(const char *name)
{
	struct kv_devent *e;
	struct ib_device *found = NULL;

	mutex_lock(&kv_devs_lock);
	list_for_each_entry(e, &kv_devs, node) {
		if (!strcmp(dev_name(&e->dev->dev), name)) {
			found = e->dev;
			break;
		}
	}
	mutex_unlock(&kv_devs_lock);
	return found;
}

bool kv_device_known(struct ib_device *dev)
{
	struct kv_devent *e;
	bool found = false;

	mutex_lock(&kv_devs_lock);
	list_for_each_entry(e, &kv_devs, node)
		if (e->dev == dev)
			found = true;
	mutex_unlock(&kv_devs_lock);
	return found;
}

static int kv_add_one(struct ib_device *dev)
{
	struct kv_devent *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e)
		return -ENOMEM;
	e->dev = dev;
	mutex_lock(&kv_devs_lock);
	list_add_tail(&e->node, &kv_devs);
	mutex_unlock(&kv_devs_lock);
	hil_trace_ibdev(dev_name(&dev->dev), "add");
	return 0;
}

static void kv_remove_one(struct ib_device *dev, void *client_data)
{
	struct kv_devent *e, *tmp;

	/* waits for the running command: a stuck drain keeps the device from going away */
	mutex_lock(&kv.exec_lock);
	if (hil.dev.dev == dev)
		hil_teardown_all("device removed");
	mutex_unlock(&kv.exec_lock);
	mutex_lock(&kv_devs_lock);
	list_for_each_entry_safe(e, tmp, &kv_devs, node) {
		if (e->dev == dev) {
			list_del(&e->node);
			kfree(e);
		}
	}
	mutex_unlock(&kv_devs_lock);
	hil_trace_ibdev(dev_name(&dev->dev), "remove");
}

static struct ib_client kv_client = {
	.name = "hil_kverbs",
	.add = kv_add_one,
	.remove = kv_remove_one,
};

/* ---- the worker ---- */

static void kv_execute(struct hil_cmd *cmd)
{
	mutex_lock(&kv.exec_lock);
	if (hil_execute(cmd))
		WRITE_ONCE(kv.failed, kv.failed + 1);
	mutex_unlock(&kv.exec_lock);
}

static bool kv_has_work(void)
{
	bool work;

	spin_lock(&wk.lock);
	work = !list_empty(&wk.queue);
	spin_unlock(&wk.lock);
	return work || kthread_should_stop();
}

static int kv_worker(void *unused)
{
	for (;;) {
		struct kv_queued *q = NULL;

		/* TASK_IDLE: an idle worker is not a hung task */
		wait_event_idle(wk.cmd_wq, kv_has_work());
		spin_lock(&wk.lock);
		if (!list_empty(&wk.queue)) {
			q = list_first_entry(&wk.queue, struct kv_queued, node);
			list_del(&q->node);
			wk.queued--;
			wk.busy = q;
			wk.busy_since = ktime_get_ns();
		}
		spin_unlock(&wk.lock);
		if (!q) {
			if (kthread_should_stop())
				break;
			continue;
		}
		kv_execute(&q->cmd);
		spin_lock(&wk.lock);
		wk.busy = NULL;
		wk.last_done = q->cmd.id;
		spin_unlock(&wk.lock);
		wake_up_all(&wk.done_wq);
		kfree(q);
		module_put(THIS_MODULE);
	}
	return 0;
}

/* a read of wait ends: the worker is idle, or the command running is the one the waits were cut for */
static bool kv_wait_over(void)
{
	bool over;

	spin_lock(&wk.lock);
	over = (list_empty(&wk.queue) && !wk.busy) || (wk.busy && wk.busy->cmd.id == wk.cut_id);
	spin_unlock(&wk.lock);
	return over;
}

static int kv_status_json(char *buf, size_t size)
{
	int n;

	spin_lock(&wk.lock);
	n = scnprintf(buf, size, "{\"version\":%d,\"pid\":%d,\"idle\":%s,\"queued\":%u,\"last_done\":%llu,",
		      KV_VERSION, task_pid_nr(wk.task),
		      list_empty(&wk.queue) && !wk.busy ? "true" : "false", wk.queued, wk.last_done);
	if (wk.busy)
		n += scnprintf(buf + n, size - n, "\"busy\":{\"id\":%llu,\"op\":\"%s\",\"ms\":%llu},",
			       wk.busy->cmd.id, wk.busy->cmd.op->name,
			       (ktime_get_ns() - wk.busy_since) / NSEC_PER_MSEC);
	else
		n += scnprintf(buf + n, size - n, "\"busy\":null,");
	spin_unlock(&wk.lock);
	n += scnprintf(buf + n, size - n, "\"failed\":%llu,\"trace_bytes\":%zu,\"dropped\":%llu,\"release\":\"%s\"}\n",
		       READ_ONCE(kv.failed), kv_trace_bytes(), kv_trace_dropped(), init_utsname()->release);
	return n;
}

/* ---- debugfs ---- */

static ssize_t ctl_write(struct file *file, const char __user *ubuf, size_t count, loff_t *ppos)
{
	LIST_HEAD(batch);
	struct kv_queued *q, *tmp;
	char *text, *p;
	int rc = 0, n = 0;

	if (count > KV_CTL_MAX)
		return -E2BIG;
	text = memdup_user_nul(ubuf, count);
	if (IS_ERR(text))
		return PTR_ERR(text);
	p = text;
	while (p && *p) {
		char *line = strsep(&p, "\n;");
		size_t len = strlen(line);
		const char *why = NULL;

		while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
			line[--len] = '\0';
		while (*line == ' ' || *line == '\t') {
			line++;
			len--;
		}
		if (!len || *line == '#')
			continue;
		q = kzalloc(sizeof(*q), GFP_KERNEL);
		if (!q) {
			rc = -ENOMEM;
			break;
		}
		rc = hil_parse(line, len, &q->cmd, NULL, &why);
		if (rc) {
			hil_trace_reject(line, why);
			kfree(q);
			break;
		}
		list_add_tail(&q->node, &batch);
		n++;
	}
	kfree(text);
	if (rc) {
		list_for_each_entry_safe(q, tmp, &batch, node)
			kfree(q);
		return rc;
	}
	spin_lock(&wk.lock);
	list_for_each_entry(q, &batch, node) {
		q->cmd.id = ++wk.next_id;
		/* rmmod is refused while a command waits or runs */
		__module_get(THIS_MODULE);
	}
	wk.queued += n;
	list_splice_tail(&batch, &wk.queue);
	spin_unlock(&wk.lock);
	wake_up(&wk.cmd_wq);
	return count;
}

static ssize_t cut_write(struct file *file, const char __user *ubuf, size_t count, loff_t *ppos)
{
	u64 id;
	int rc = kstrtou64_from_user(ubuf, count, 10, &id);

	if (rc)
		return rc;
	spin_lock(&wk.lock);
	wk.cut_id = id;
	spin_unlock(&wk.lock);
	wake_up_all(&wk.done_wq);
	return count;
}

static ssize_t trace_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	return kv_trace_read(ubuf, count, ppos);
}

#define KV_STATUS_LEN 512

static int status_open(struct inode *inode, struct file *file)
{
	file->private_data = NULL;
	return nonseekable_open(inode, file);
}

static int status_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

/* status and wait: the text is made on the first read and served from the file after that */
static ssize_t status_text_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos,
				bool wait)
{
	char *text = file->private_data;

	if (!text) {
		text = kzalloc(KV_STATUS_LEN, GFP_KERNEL);
		if (!text)
			return -ENOMEM;
		if (wait) {
			long left = wait_event_interruptible_timeout(wk.done_wq, kv_wait_over(),
								     msecs_to_jiffies(READ_ONCE(wait_ms)));
			if (left < 0) {
				kfree(text);
				return left;
			}
		}
		kv_status_json(text, KV_STATUS_LEN);
		file->private_data = text;
	}
	return simple_read_from_buffer(ubuf, count, ppos, text, strlen(text));
}

static ssize_t status_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	return status_text_read(file, ubuf, count, ppos, false);
}

static ssize_t wait_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	return status_text_read(file, ubuf, count, ppos, true);
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.write = ctl_write,
};

static const struct file_operations cut_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.write = cut_write,
};

static const struct file_operations trace_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = trace_read,
	.llseek = default_llseek,
};

static const struct file_operations status_fops = {
	.owner = THIS_MODULE,
	.open = status_open,
	.release = status_release,
	.read = status_read,
};

static const struct file_operations wait_fops = {
	.owner = THIS_MODULE,
	.open = status_open,
	.release = status_release,
	.read = wait_read,
};

static int __init kv_init(void)
{
	int i, rc;

	mutex_init(&kv.exec_lock);
	hil.max_wrs = max_wrs;
	for (i = 0; i < HIL_MAX_OBJS; i++) {
		init_waitqueue_head(&hil.cqs[i].port.wq);
		init_waitqueue_head(&hil.qps[i].cm.port.wq);
		init_waitqueue_head(&hil.listeners[i].cm.port.wq);
		hil_lock_init(&hil.listeners[i].lock);
	}
	spin_lock_init(&wk.lock);
	INIT_LIST_HEAD(&wk.queue);
	init_waitqueue_head(&wk.cmd_wq);
	init_waitqueue_head(&wk.done_wq);

	rc = kv_trace_init((size_t)max(trace_kb, 64U) * 1024);
	if (rc)
		return rc;
	wk.task = kthread_run(kv_worker, NULL, "hil_kverbs");
	if (IS_ERR(wk.task)) {
		rc = PTR_ERR(wk.task);
		goto err_trace;
	}
	hil_trace_hello(KV_VERSION, init_utsname()->release, task_pid_nr(wk.task));
	rc = ib_register_client(&kv_client);
	if (rc)
		goto err_thread;
	kv_dir = debugfs_create_dir("hil_kverbs", NULL);
	if (IS_ERR(kv_dir)) {
		rc = PTR_ERR(kv_dir);
		goto err_client;
	}
	debugfs_create_file("ctl", 0200, kv_dir, NULL, &ctl_fops);
	debugfs_create_file("trace", 0400, kv_dir, NULL, &trace_fops);
	debugfs_create_file("status", 0400, kv_dir, NULL, &status_fops);
	debugfs_create_file("wait", 0400, kv_dir, NULL, &wait_fops);
	debugfs_create_u32("wait_ms", 0600, kv_dir, &wait_ms);
	debugfs_create_file("cut", 0200, kv_dir, NULL, &cut_fops);
	return 0;

err_client:
	ib_unregister_client(&kv_client);
err_thread:
	kthread_stop(wk.task);
err_trace:
	kv_trace_exit();
	return rc;
}

static void __exit kv_exit(void)
{
	debugfs_remove_recursive(kv_dir);
	/* nothing is queued: every queued command holds a module reference */
	kthread_stop(wk.task);
	mutex_lock(&kv.exec_lock);
	hil_teardown_all("module unload");
	mutex_unlock(&kv.exec_lock);
	ib_unregister_client(&kv_client);
	kv_trace_exit();
}

module_init(kv_init);
module_exit(kv_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("erdma-hil in-kernel verbs executor (kernel verbs and rdma_cm scenarios)");
MODULE_AUTHOR("erdma-hil");
