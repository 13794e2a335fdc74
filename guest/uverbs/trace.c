// SPDX-License-Identifier: GPL-2.0-only
/*
 * The trace: one JSON object per line on stdout (the records guest/common/record.c builds), in
 * the in-kernel executor's format. Every record starts with "seq" (counts up from 0) and "ns"
 * (CLOCK_MONOTONIC since the program started), then "ev" and the event's fields. Each line is
 * flushed as it is written, so a run killed from outside leaves whole lines up to the moment it
 * stopped.
 */
#include "uv.h"

static uint64_t seq;
static uint64_t t0;

void uv_trace_init(void)
{
	t0 = hil_now_ns();
	seq = 0;
}

void hil_trace_emit(const char *fields, size_t len)
{
	printf("{\"seq\":%llu,\"ns\":%llu,%.*s}\n", (unsigned long long)seq,
	       (unsigned long long)(hil_now_ns() - t0), (int)len, fields);
	fflush(stdout);
	seq++;
}
