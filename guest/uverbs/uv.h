/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hil-uverbs: the userspace verbs executor. It reads the command language of the in-kernel
 * executor (guest/kverbs) and writes the same JSON-lines trace, through libibverbs and librdmacm,
 * so user QPs go through the device's rdma-core provider. The command language, the objects, the
 * rdma_cm bookkeeping, posting, completions and the trace records are the executor core it
 * shares with hil_kverbs (guest/common, core.h); these files are its user side:
 *   main.c     options, reading and checking the whole input (or, with -s, a line at a time as
 *              it comes), running it, exit status
 *   cmd.c      what this executor refuses of the command language, sleep, mark
 *   trace.c    JSON records on stdout, one a line, flushed as written
 *   objects.c  device, PD, CQ, a QP's registered buffers, QP creation and destruction
 *   cm.c       rdma_cm: the event channel, read while a command waits for an event
 *   wr.c       post building: ibv_send_wr/ibv_recv_wr and their SGEs, ibv_post_send/recv
 *   cq.c       completions (ibv_poll_cq), poll, modify, query
 *   drain.c    the drain: what Linux's __ib_drain_sq/__ib_drain_rq do, with a timeout
 */
#ifndef HIL_UV_H
#define HIL_UV_H

#include "core.h"

#define UV_VERSION 1
#define UV_MAX_LINES 4096

/* ---- the executor's own state ---- */

struct uv_state {
	/* librdmacm's device contexts (rdma_get_devices), so QPs and rdma_cm ids share them */
	struct ibv_context **devs;
	struct rdma_event_channel *ch;
	uint32_t drain_timeout_ms;
};

extern struct uv_state uv;

/* ---- commands (cmd.c) ---- */

/* checks a line as hil_parse does, then what this executor refuses (uv_refused and values) */
int uv_parse(const char *line, size_t len, struct hil_cmd *cmd, const char **why);

/* ---- trace (trace.c) ---- */

void uv_trace_init(void);

/* ---- completions (cq.c) ---- */

/* the wr_id of a drain marker: this bit (above any WR index, below 2^53 for JSON readers), then the queue */
#define UV_MARKER_WRID (1ULL << 52)

/* polls up to `budget` completions (0: what is there) and traces them; <0 on a poll error */
int uv_cq_reap(struct hil_cq *cq, int budget);
void uv_sleep_us(unsigned int us);

#endif
