// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command language: one command a line, "<op> key=value ...". A line is checked when it is
 * written (known operation, known keys, required keys present, no key twice); what the values
 * name is checked when the worker runs it.
 */
#include <linux/ctype.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/string.h>

#include "kv.h"

static int kv_op_clear(struct kv_cmd *cmd)
{
	kv_trace_clear();
	return 0;
}

static int kv_op_sleep(struct kv_cmd *cmd)
{
	u32 ms;
	int rc = kv_arg_u32(cmd, "ms", 0, &ms);

	if (rc)
		return rc;
	if (ms > 600000)
		return kv_fail(cmd, -EINVAL, "ms=%u is more than 600000", ms);
	msleep(ms);
	return 0;
}

#define KV_QP_KEYS "sq rq sge inline buf max_wrs sig"

static const struct kv_op kv_ops[] = {
	{ "device", kv_op_device, "name addr" },
	{ "pd", kv_op_pd, "!name rkey" },
	{ "cq", kv_op_cq, "!name depth poll vector" },
	{ "qp", kv_op_qp, "!name !pd !scq !rcq " KV_QP_KEYS },
	{ "listen", kv_op_listen, "!name !addr !port !qp !pd !scq !rcq " KV_QP_KEYS },
	{ "connect", kv_op_connect,
	  "!name !addr !port !pd !scq !rcq src timeout " KV_QP_KEYS },
	{ "disconnect", kv_op_disconnect, "!qp" },
	{ "post_send", kv_op_post_send, "!qp !wr_id op count len batch signal inline fill imm mr access bad" },
	{ "post_recv", kv_op_post_recv, "!qp !wr_id count len batch bad" },
	{ "poll", kv_op_poll, "!cq min timeout budget" },
	{ "modify", kv_op_modify, "!qp !state" },
	{ "query", kv_op_query, "!qp" },
	{ "drain", kv_op_drain, "!qp which" },
	{ "bench", kv_op_bench, "!qp op iters depth len signal timeout" },
	{ "destroy", kv_op_destroy, "qp cq pd listen" },
	{ "reset", kv_op_reset, "" },
	{ "clear", kv_op_clear, "" },
	{ "sleep", kv_op_sleep, "!ms" },
};

/* Is `key` one of the space-separated words of `keys` ('!' marks required ones)? */
static bool key_listed(const char *keys, const char *key)
{
	size_t klen = strlen(key);
	const char *p = keys;

	while (*p) {
		const char *w = p;
		size_t wlen;

		if (*w == '!')
			w++;
		wlen = strcspn(w, " ");
		if (wlen == klen && !strncmp(w, key, klen))
			return true;
		p = w + wlen;
		while (*p == ' ')
			p++;
	}
	return false;
}

static bool valid_key(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!islower(*k) && !isdigit(*k) && *k != '_')
			return false;
	return true;
}

int kv_parse(const char *line, size_t len, struct kv_cmd *cmd, const char **why)
{
	const struct kv_op *op = NULL;
	char *p, *tok;
	size_t i;

	if (len > KV_LINE_LEN) {
		*why = "line too long";
		return -E2BIG;
	}
	for (i = 0; i < len; i++) {
		if (line[i] < 0x20 || line[i] >= 0x7f) {
			if (line[i] == '\t')
				continue;
			*why = "control or non-ASCII character";
			return -EINVAL;
		}
	}
	memcpy(cmd->line, line, len);
	cmd->line[len] = '\0';
	memcpy(cmd->buf, line, len);
	cmd->buf[len] = '\0';
	cmd->nargs = 0;
	cmd->err[0] = '\0';

	p = cmd->buf;
	tok = strsep(&p, " \t");
	while (tok && !*tok)
		tok = strsep(&p, " \t");
	if (!tok) {
		*why = "empty command";
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(kv_ops); i++) {
		if (!strcmp(kv_ops[i].name, tok)) {
			op = &kv_ops[i];
			break;
		}
	}
	if (!op) {
		*why = "unknown operation";
		return -EINVAL;
	}
	cmd->op = op;
	while ((tok = strsep(&p, " \t"))) {
		char *eq;
		int j;

		if (!*tok)
			continue;
		eq = strchr(tok, '=');
		if (!eq || eq == tok || !eq[1]) {
			*why = "arguments are key=value";
			return -EINVAL;
		}
		*eq = '\0';
		if (!valid_key(tok) || !key_listed(op->keys, tok)) {
			*why = "unknown key for this operation";
			return -EINVAL;
		}
		for (j = 0; j < cmd->nargs; j++) {
			if (!strcmp(cmd->key[j], tok)) {
				*why = "key given twice";
				return -EINVAL;
			}
		}
		if (cmd->nargs == KV_MAX_ARGS) {
			*why = "too many arguments";
			return -E2BIG;
		}
		cmd->key[cmd->nargs] = tok;
		cmd->val[cmd->nargs] = eq + 1;
		cmd->nargs++;
	}
	/* every required key present */
	{
		const char *k = op->keys;

		while (*k) {
			size_t wlen;

			while (*k == ' ')
				k++;
			if (!*k)
				break;
			wlen = strcspn(k, " ");
			if (*k == '!') {
				char name[KV_NAME_LEN];
				int j;
				bool found = false;

				strscpy(name, k + 1, min_t(size_t, wlen, sizeof(name)));
				for (j = 0; j < cmd->nargs; j++)
					if (!strcmp(cmd->key[j], name))
						found = true;
				if (!found) {
					*why = "a required key is missing";
					return -EINVAL;
				}
			}
			k += wlen;
		}
	}
	return 0;
}

const char *kv_arg(struct kv_cmd *cmd, const char *key)
{
	int i;

	for (i = 0; i < cmd->nargs; i++)
		if (!strcmp(cmd->key[i], key))
			return cmd->val[i];
	return NULL;
}

int kv_arg_u32(struct kv_cmd *cmd, const char *key, u32 def, u32 *out)
{
	const char *v = kv_arg(cmd, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (kstrtou32(v, 0, out))
		return kv_fail(cmd, -EINVAL, "%s=%s is not a 32-bit number", key, v);
	return 0;
}

int kv_arg_u64(struct kv_cmd *cmd, const char *key, u64 def, u64 *out)
{
	const char *v = kv_arg(cmd, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (kstrtou64(v, 0, out))
		return kv_fail(cmd, -EINVAL, "%s=%s is not a number", key, v);
	return 0;
}

int kv_fail(struct kv_cmd *cmd, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(cmd->err, sizeof(cmd->err), fmt, ap);
	va_end(ap);
	return rc;
}
