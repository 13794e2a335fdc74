/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The command language both executors read (commands.def is its table), in C they share:
 * checking and splitting a line, the argument getters, a failed command's error text, and what
 * several operations take alike (object names, the keys of a post, signal=).
 */
#ifndef HIL_CMDLANG_H
#define HIL_CMDLANG_H

#ifdef __KERNEL__
#include "sys_kernel.h"
#else
#include "sys_libc.h"
#endif

/* object names are at most HIL_NAME_LEN - 1 characters */
#define HIL_NAME_LEN 16
#define HIL_MAX_ARGS 16
#define HIL_LINE_LEN 200
/* WRs chained in one post call */
#define HIL_MAX_BATCH 1024

enum hil_op {
#define HIL_COMMAND(name, keys, about) HIL_OP_##name,
#include "commands.def"
#undef HIL_COMMAND
	HIL_OP_COUNT
};

struct hil_op_info {
	enum hil_op id;
	const char *name;
	/* space-separated keys the operation takes; a leading '!' marks a required one */
	const char *keys;
};

struct hil_cmd {
	/* numbered by the executor as it accepts commands */
	uint64_t id;
	/* NULL until the line names a known operation */
	const struct hil_op_info *op;
	int nargs;
	char *key[HIL_MAX_ARGS];
	char *val[HIL_MAX_ARGS];
	char line[HIL_LINE_LEN + 1];
	/* the tokens point into this copy of the line */
	char buf[HIL_LINE_LEN + 1];
	char err[HIL_ERR_LEN];
};

/*
 * Checks one line (`len` bytes, trimmed) and splits it into `cmd`: 0, or a negative errno with
 * `*why` saying what is wrong (it may point into cmd->err). `refused`, if not NULL, is indexed by
 * operation: a non-NULL entry is why this executor refuses the operation (-EOPNOTSUPP), before
 * its keys are looked at.
 */
int hil_parse(const char *line, size_t len, struct hil_cmd *cmd, const char *const *refused,
	      const char **why);

/* The value of `key`, or NULL when the line does not give it. */
const char *hil_arg(const struct hil_cmd *cmd, const char *key);
/* `key` as a number (`def` when absent); a bad number fails the command (hil_fail). */
int hil_arg_u32(struct hil_cmd *cmd, const char *key, uint32_t def, uint32_t *out);
int hil_arg_u64(struct hil_cmd *cmd, const char *key, uint64_t def, uint64_t *out);
/* Fails the command: its error text, and `rc` (a negative errno) returned. */
int hil_fail(struct hil_cmd *cmd, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A name for a new object: not too long (-ENAMETOOLONG), not `taken` by another (-EEXIST). */
int hil_check_name(struct hil_cmd *cmd, const char *name, bool taken);

/* signal=all|none|last|<n>: which WRs of a post_send are signaled */
enum hil_signal { HIL_SIG_ALL, HIL_SIG_NONE, HIL_SIG_LAST, HIL_SIG_EVERY };

/* The keys of a post_send or post_recv the executors read alike. */
struct hil_post_args {
	uint64_t wr_id;
	uint32_t count;
	uint32_t len;
	uint32_t batch;
	uint32_t every;
	enum hil_signal signal;
	/* signal= as given (the post record's "signal"); NULL for a receive */
	const char *signal_text;
};

/* wr_id, count, len (`def_len`; at most `slot_len`), batch, signal: 0 or the command fails. */
int hil_post_args(struct hil_cmd *cmd, uint32_t slot_len, uint32_t def_len,
		  struct hil_post_args *a);
/* Is WR `index` of the command (`last_of_call`: the last of its post call) signaled? */
bool hil_signaled(const struct hil_post_args *a, uint32_t index, bool last_of_call);

#endif
