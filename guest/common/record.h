/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The trace's records, as both executors write them (harness/protocol/trace.ts is their schema):
 * one JSON object a line, {"seq":..,"ns":..,"ev":"<event>",<fields>}. A record is built here, on
 * its writer's stack, and handed whole to the executor's trace (hil_trace_emit), which prepends
 * "seq" and "ns": hil_kverbs appends it to its buffer (from any context), hil-uverbs writes it to
 * stdout. A record that does not fit is cut at a whole field and marked "truncated":true.
 */
#ifndef HIL_RECORD_H
#define HIL_RECORD_H

#include "cmdlang.h"

struct hil_rec {
	size_t len;
	bool trunc;
	char buf[HIL_REC_LEN];
};

void hil_rec_begin(struct hil_rec *r, const char *ev);
void hil_rec_str(struct hil_rec *r, const char *key, const char *val);
void hil_rec_int(struct hil_rec *r, const char *key, int64_t val);
void hil_rec_uint(struct hil_rec *r, const char *key, uint64_t val);
void hil_rec_bool(struct hil_rec *r, const char *key, bool val);
void hil_rec_null(struct hil_rec *r, const char *key);
/* raw JSON text (`,"key":[...]` a caller builds) */
void hil_rec_printf(struct hil_rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* hands the record to the trace */
void hil_rec_commit(struct hil_rec *r);

/*
 * The executor's trace: takes the record's fields (`len` bytes, `"ev":...` up to before the
 * closing brace) and writes them as one line with "seq" and "ns" first. Safe in any context.
 */
void hil_trace_emit(const char *fields, size_t len);

/* ---- records both executors write alike ---- */

void hil_trace_hello(int version, const char *release, int pid);
/* an RDMA device seen ("add") or gone ("remove") */
void hil_trace_ibdev(const char *name, const char *action);
/* a line refused when it was read, and why */
void hil_trace_reject(const char *line, const char *why);

#endif
