// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command language: one command a line, "<op> key=value ...". A line is checked when it is
 * read (known operation, known keys, required keys present, no key twice, not an operation the
 * executor refuses); what the values name is checked when the command runs. Compiled into both
 * executors: the kernel module and hil-uverbs.
 */
#include "cmdlang.h"

static const struct hil_op_info hil_ops[HIL_OP_COUNT] = {
#define HIL_COMMAND(name, keys, about) [HIL_OP_##name] = { HIL_OP_##name, #name, keys },
#include "commands.def"
#undef HIL_COMMAND
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

/* Keys are lower-case ASCII letters, digits and '_'. */
static bool valid_key(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!(*k >= 'a' && *k <= 'z') && !(*k >= '0' && *k <= '9') && *k != '_')
			return false;
	return true;
}

static bool has_key(const struct hil_cmd *cmd, const char *key, size_t klen)
{
	for (int j = 0; j < cmd->nargs; j++)
		if (strlen(cmd->key[j]) == klen && !strncmp(cmd->key[j], key, klen))
			return true;
	return false;
}

/* The first required key of the operation the line does not give, or NULL. */
static const char *missing_key(const struct hil_cmd *cmd, size_t *len)
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

static const struct hil_op_info *find_op(const char *name)
{
	for (size_t i = 0; i < HIL_OP_COUNT; i++)
		if (!strcmp(hil_ops[i].name, name))
			return &hil_ops[i];
	return NULL;
}

static int split_args(char *p, struct hil_cmd *cmd, const char **why)
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
		if (cmd->nargs == HIL_MAX_ARGS) {
			*why = "too many arguments";
			return -E2BIG;
		}
		cmd->key[cmd->nargs] = tok;
		cmd->val[cmd->nargs] = eq + 1;
		cmd->nargs++;
	}
	return 0;
}

int hil_parse(const char *line, size_t len, struct hil_cmd *cmd, const char *const *refused,
	      const char **why)
{
	const char *missing;
	size_t mlen;
	char *p, *tok;
	int rc;

	cmd->op = NULL;
	if (len > HIL_LINE_LEN) {
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
	if (refused && refused[cmd->op->id]) {
		*why = refused[cmd->op->id];
		return -EOPNOTSUPP;
	}
	rc = split_args(p, cmd, why);
	if (rc)
		return rc;
	missing = missing_key(cmd, &mlen);
	if (missing) {
		snprintf(cmd->err, sizeof(cmd->err), "a required key is missing: %.*s=", (int)mlen,
			 missing);
		*why = cmd->err;
		return -EINVAL;
	}
	return 0;
}

const char *hil_arg(const struct hil_cmd *cmd, const char *key)
{
	for (int i = 0; i < cmd->nargs; i++)
		if (!strcmp(cmd->key[i], key))
			return cmd->val[i];
	return NULL;
}

int hil_arg_u32(struct hil_cmd *cmd, const char *key, uint32_t def, uint32_t *out)
{
	const char *v = hil_arg(cmd, key);
	uint64_t n;

	if (!v) {
		*out = def;
		return 0;
	}
	if (hil_strtou64(v, UINT32_MAX, &n))
		return hil_fail(cmd, -EINVAL, "%s=%s is not a 32-bit number", key, v);
	*out = (uint32_t)n;
	return 0;
}

int hil_arg_u64(struct hil_cmd *cmd, const char *key, uint64_t def, uint64_t *out)
{
	const char *v = hil_arg(cmd, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (hil_strtou64(v, UINT64_MAX, out))
		return hil_fail(cmd, -EINVAL, "%s=%s is not a number", key, v);
	return 0;
}

int hil_fail(struct hil_cmd *cmd, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd->err, sizeof(cmd->err), fmt, ap);
	va_end(ap);
	return rc;
}

int hil_check_name(struct hil_cmd *cmd, const char *name, bool taken)
{
	if (strlen(name) >= HIL_NAME_LEN)
		return hil_fail(cmd, -ENAMETOOLONG, "name %s is longer than %d", name,
				HIL_NAME_LEN - 1);
	if (taken)
		return hil_fail(cmd, -EEXIST, "name %s is taken", name);
	return 0;
}

static int parse_signal(struct hil_cmd *cmd, struct hil_post_args *a)
{
	const char *sig = hil_arg(cmd, "signal");
	uint64_t every;

	if (!sig)
		sig = "all";
	a->signal_text = sig;
	if (!strcmp(sig, "all")) {
		a->signal = HIL_SIG_ALL;
	} else if (!strcmp(sig, "none")) {
		a->signal = HIL_SIG_NONE;
	} else if (!strcmp(sig, "last")) {
		a->signal = HIL_SIG_LAST;
	} else {
		a->signal = HIL_SIG_EVERY;
		if (hil_strtou64(sig, UINT32_MAX, &every) || !every)
			return hil_fail(cmd, -EINVAL, "signal=%s: all, none, last or a number", sig);
		a->every = (uint32_t)every;
	}
	return 0;
}

int hil_post_args(struct hil_cmd *cmd, uint32_t slot_len, uint32_t def_len,
		  struct hil_post_args *a)
{
	int rc;

	rc = hil_arg_u64(cmd, "wr_id", 0, &a->wr_id);
	if (!rc)
		rc = hil_arg_u32(cmd, "count", 1, &a->count);
	if (!rc)
		rc = hil_arg_u32(cmd, "len", def_len, &a->len);
	if (!rc)
		rc = hil_arg_u32(cmd, "batch", a->count, &a->batch);
	if (rc)
		return rc;
	if (!a->count)
		return hil_fail(cmd, -EINVAL, "count=0");
	if (!a->batch || a->batch > HIL_MAX_BATCH)
		return hil_fail(cmd, -EINVAL, "batch is 1..%d (give batch= for larger counts)",
				HIL_MAX_BATCH);
	if (a->len > slot_len)
		return hil_fail(cmd, -EINVAL, "len=%u is more than the QP's buf=%u", a->len,
				slot_len);
	return parse_signal(cmd, a);
}

bool hil_signaled(const struct hil_post_args *a, uint32_t index, bool last_of_call)
{
	switch (a->signal) {
	case HIL_SIG_ALL:
		return true;
	case HIL_SIG_NONE:
		return false;
	case HIL_SIG_LAST:
		return last_of_call;
	default:
		return (index + 1) % a->every == 0;
	}
}
