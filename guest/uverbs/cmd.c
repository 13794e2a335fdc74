// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command language of guest/kverbs: one command a line, "<op> key=value ...". A line is
 * checked before anything runs (known operation, known keys, required keys present, no key
 * twice, and not one of the kernel executor's operations this one refuses); what the values name
 * is checked when it runs.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uv.h"

static int uv_op_sleep(struct uv_cmd *cmd)
{
	uint32_t ms;
	int rc = uv_arg_u32(cmd, "ms", 0, &ms);

	if (rc)
		return rc;
	if (ms > 600000)
		return uv_fail(cmd, -EINVAL, "ms=%u is more than 600000", ms);
	uv_sleep_us(ms * 1000U);
	return 0;
}

#define UV_QP_KEYS "sq rq sge inline buf max_wrs sig"

static const struct uv_op uv_ops[] = {
	{ "device", uv_op_device, "name addr", NULL },
	{ "pd", uv_op_pd, "!name rkey", NULL },
	{ "cq", uv_op_cq, "!name depth poll vector", NULL },
	{ "qp", uv_op_qp, "!name !pd !scq !rcq " UV_QP_KEYS, NULL },
	{ "listen", uv_op_listen, "!name !addr !port !qp !pd !scq !rcq " UV_QP_KEYS, NULL },
	{ "connect", uv_op_connect, "!name !addr !port !pd !scq !rcq src timeout " UV_QP_KEYS,
	  NULL },
	{ "disconnect", uv_op_disconnect, "!qp", NULL },
	{ "post_send", uv_op_post_send,
	  "!qp !wr_id op count len batch signal inline fill imm mr access bad", NULL },
	{ "post_recv", uv_op_post_recv, "!qp !wr_id count len batch bad", NULL },
	{ "poll", uv_op_poll, "!cq min timeout budget", NULL },
	{ "modify", uv_op_modify, "!qp !state", NULL },
	{ "query", uv_op_query, "!qp", NULL },
	{ "drain", uv_op_drain, "!qp which", NULL },
	{ "destroy", uv_op_destroy, "qp cq pd listen", NULL },
	{ "reset", uv_op_reset, "", NULL },
	{ "sleep", uv_op_sleep, "!ms", NULL },
	{ "clear", NULL, "",
	  "it empties the kernel executor's trace buffer; this executor's trace is its stdout" },
	{ "bench", NULL, "!qp op iters depth len signal timeout",
	  "it is the kernel executor's throughput loop (ib_process_cq_direct)" },
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
		if (!islower((unsigned char)*k) && !isdigit((unsigned char)*k) && *k != '_')
			return false;
	return true;
}

static bool has_key(const struct uv_cmd *cmd, const char *key, size_t klen)
{
	for (int j = 0; j < cmd->nargs; j++)
		if (strlen(cmd->key[j]) == klen && !strncmp(cmd->key[j], key, klen))
			return true;
	return false;
}

/* The first required key of the operation the line does not give, or NULL. */
static const char *missing_key(const struct uv_cmd *cmd, size_t *len)
{
	const char *k = cmd->op->keys;

	while (*k) {
		size_t wlen;

		while (*k == ' ')
			k++;
		if (!*k)
			break;
		wlen = strcspn(k, " ");
		if (*k == '!' && !has_key(cmd, k + 1, wlen - 1)) {
			*len = wlen - 1;
			return k + 1;
		}
		k += wlen;
	}
	return NULL;
}

static const struct uv_op *find_op(const char *name)
{
	for (size_t i = 0; i < sizeof(uv_ops) / sizeof(uv_ops[0]); i++)
		if (!strcmp(uv_ops[i].name, name))
			return &uv_ops[i];
	return NULL;
}

static int parse_args(char *p, struct uv_cmd *cmd, const char **why)
{
	char *tok;

	while ((tok = strsep(&p, " \t"))) {
		char *eq;

		if (!*tok)
			continue;
		eq = strchr(tok, '=');
		if (!eq || eq == tok || !eq[1]) {
			*why = "arguments are key=value";
			return -EINVAL;
		}
		*eq = '\0';
		if (!valid_key(tok) || !key_listed(cmd->op->keys, tok)) {
			*why = "unknown key for this operation";
			return -EINVAL;
		}
		if (has_key(cmd, tok, strlen(tok))) {
			*why = "key given twice";
			return -EINVAL;
		}
		if (cmd->nargs == UV_MAX_ARGS) {
			*why = "too many arguments";
			return -E2BIG;
		}
		cmd->key[cmd->nargs] = tok;
		cmd->val[cmd->nargs] = eq + 1;
		cmd->nargs++;
	}
	return 0;
}

/*
 * A user-only check of values the line fixes: kernel poll contexts, and the send operations
 * libibverbs cannot post here. There is no IBV_WR_REG_MR (fast registration is a kernel verb), and
 * IBV_WR_LOCAL_INV invalidates a memory window or a fast-registered MR, neither of which this
 * executor makes; libsiw and rdma-core's erdma provider refuse the opcode besides.
 */
static int check_user_values(const struct uv_cmd *cmd, const char **why)
{
	const char *poll = uv_arg(cmd, "poll");
	const char *op = uv_arg(cmd, "op");

	if (!strcmp(cmd->op->name, "cq") && poll && strcmp(poll, "direct")) {
		*why = "not run by the user executor: poll= other than direct is a kernel poll "
		       "context; this executor polls with ibv_poll_cq (poll=direct)";
		return -EOPNOTSUPP;
	}
	if (strcmp(cmd->op->name, "post_send"))
		return 0;
	if (op && !strcmp(op, "reg_mr")) {
		*why = "not run by the user executor: op=reg_mr is fast registration (IB_WR_REG_MR), "
		       "a kernel verb; libibverbs has no IBV_WR_REG_MR";
		return -EOPNOTSUPP;
	}
	if (op && !strcmp(op, "local_inv")) {
		*why = "not run by the user executor: op=local_inv (IBV_WR_LOCAL_INV) needs a memory "
		       "window or fast-registered MR, which it does not make; libsiw and liberdma "
		       "refuse the opcode";
		return -EOPNOTSUPP;
	}
	if (uv_arg(cmd, "access") || uv_arg(cmd, "mr")) {
		*why = "not run by the user executor: access= and mr= name fast-registration MRs "
		       "(op=reg_mr), a kernel verb";
		return -EOPNOTSUPP;
	}
	return 0;
}

int uv_parse(const char *line, size_t len, struct uv_cmd *cmd, const char **why)
{
	const char *missing;
	size_t mlen;
	char *p, *tok;
	int rc;

	cmd->op = NULL;
	if (len > UV_LINE_LEN) {
		*why = "line too long";
		return -E2BIG;
	}
	for (size_t i = 0; i < len; i++) {
		if ((line[i] < 0x20 || line[i] >= 0x7f) && line[i] != '\t') {
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
	do
		tok = strsep(&p, " \t");
	while (tok && !*tok);
	if (!tok) {
		*why = "empty command";
		return -EINVAL;
	}
	cmd->op = find_op(tok);
	if (!cmd->op) {
		*why = "unknown operation";
		return -EINVAL;
	}
	if (cmd->op->kernel_only) {
		static char text[UV_ERR_LEN];

		snprintf(text, sizeof(text), "not run by the user executor: %s",
			 cmd->op->kernel_only);
		*why = text;
		return -EOPNOTSUPP;
	}
	rc = parse_args(p, cmd, why);
	if (rc)
		return rc;
	missing = missing_key(cmd, &mlen);
	if (missing) {
		static char text[64];

		snprintf(text, sizeof(text), "a required key is missing: %.*s=", (int)mlen, missing);
		*why = text;
		return -EINVAL;
	}
	return check_user_values(cmd, why);
}

const char *uv_arg(const struct uv_cmd *cmd, const char *key)
{
	for (int i = 0; i < cmd->nargs; i++)
		if (!strcmp(cmd->key[i], key))
			return cmd->val[i];
	return NULL;
}

static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (*v == '-' || *v == '+')
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || *end || end == v || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

int uv_arg_u32(struct uv_cmd *cmd, const char *key, uint32_t def, uint32_t *out)
{
	const char *v = uv_arg(cmd, key);
	uint64_t n;

	if (!v) {
		*out = def;
		return 0;
	}
	if (parse_u64(v, UINT32_MAX, &n))
		return uv_fail(cmd, -EINVAL, "%s=%s is not a 32-bit number", key, v);
	*out = (uint32_t)n;
	return 0;
}

int uv_arg_u64(struct uv_cmd *cmd, const char *key, uint64_t def, uint64_t *out)
{
	const char *v = uv_arg(cmd, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (parse_u64(v, UINT64_MAX, out))
		return uv_fail(cmd, -EINVAL, "%s=%s is not a number", key, v);
	return 0;
}

int uv_fail(struct uv_cmd *cmd, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd->err, sizeof(cmd->err), fmt, ap);
	va_end(ap);
	return rc;
}
