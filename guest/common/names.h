/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The names both executors use in the trace and in commands for QP states, work completion
 * statuses and rdma_cm events (numbered by the kernel's and libibverbs'/librdmacm's enums).
 */
#ifndef HIL_NAMES_H
#define HIL_NAMES_H

#include "cmdlang.h"

/* "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", or "UNKNOWN" */
const char *hil_qp_state_name(int state);
/* a QP state's name, in any case, to its enum value: 0 or -EINVAL */
int hil_qp_state_parse(const char *name, int *state);
/* "SUCCESS", "WR_FLUSH_ERR", ..., or "UNKNOWN" */
const char *hil_wc_status_name(unsigned int status);
/* "SEND", "RDMA_WRITE", ..., "RECV", or "OTHER" */
const char *hil_wc_opcode_name(unsigned int opcode);
/* "ADDR_RESOLVED", ..., or NULL for an event without a name here */
const char *hil_cm_event_name(unsigned int event);

#endif
