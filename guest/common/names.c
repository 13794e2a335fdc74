// SPDX-License-Identifier: GPL-2.0-only
/*
 * The names of QP states, work completion statuses and opcodes and rdma_cm events, each keyed
 * by the enum of the side it is compiled into (IB_* in the kernel, IBV_* in libibverbs), so the
 * two executors write the same text for the same thing.
 */
#include "names.h"

#ifdef __KERNEL__
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#define QPS(s) IB_QPS_##s
#define WC(s) IB_WC_##s
#else
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#define QPS(s) IBV_QPS_##s
#define WC(s) IBV_WC_##s
#endif

#define N_OF(table) (sizeof(table) / sizeof((table)[0]))

static const char *const qp_state_names[] = {
	[QPS(RESET)] = "RESET", [QPS(INIT)] = "INIT", [QPS(RTR)] = "RTR", [QPS(RTS)] = "RTS",
	[QPS(SQD)] = "SQD",	[QPS(SQE)] = "SQE",   [QPS(ERR)] = "ERR",
};

const char *hil_qp_state_name(int state)
{
	if (state >= 0 && (size_t)state < N_OF(qp_state_names) && qp_state_names[state])
		return qp_state_names[state];
	return "UNKNOWN";
}

int hil_qp_state_parse(const char *name, int *state)
{
	for (size_t i = 0; i < N_OF(qp_state_names); i++) {
		if (qp_state_names[i] && !strcasecmp(qp_state_names[i], name)) {
			*state = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *const wc_status_names[] = {
	[WC(SUCCESS)] = "SUCCESS",
	[WC(LOC_LEN_ERR)] = "LOC_LEN_ERR",
	[WC(LOC_QP_OP_ERR)] = "LOC_QP_OP_ERR",
	[WC(LOC_EEC_OP_ERR)] = "LOC_EEC_OP_ERR",
	[WC(LOC_PROT_ERR)] = "LOC_PROT_ERR",
	[WC(WR_FLUSH_ERR)] = "WR_FLUSH_ERR",
	[WC(MW_BIND_ERR)] = "MW_BIND_ERR",
	[WC(BAD_RESP_ERR)] = "BAD_RESP_ERR",
	[WC(LOC_ACCESS_ERR)] = "LOC_ACCESS_ERR",
	[WC(REM_INV_REQ_ERR)] = "REM_INV_REQ_ERR",
	[WC(REM_ACCESS_ERR)] = "REM_ACCESS_ERR",
	[WC(REM_OP_ERR)] = "REM_OP_ERR",
	[WC(RETRY_EXC_ERR)] = "RETRY_EXC_ERR",
	[WC(RNR_RETRY_EXC_ERR)] = "RNR_RETRY_EXC_ERR",
	[WC(LOC_RDD_VIOL_ERR)] = "LOC_RDD_VIOL_ERR",
	[WC(REM_INV_RD_REQ_ERR)] = "REM_INV_RD_REQ_ERR",
	[WC(REM_ABORT_ERR)] = "REM_ABORT_ERR",
	[WC(INV_EECN_ERR)] = "INV_EECN_ERR",
	[WC(INV_EEC_STATE_ERR)] = "INV_EEC_STATE_ERR",
	[WC(FATAL_ERR)] = "FATAL_ERR",
	[WC(RESP_TIMEOUT_ERR)] = "RESP_TIMEOUT_ERR",
	[WC(GENERAL_ERR)] = "GENERAL_ERR",
};

const char *hil_wc_status_name(unsigned int status)
{
	if (status < N_OF(wc_status_names) && wc_status_names[status])
		return wc_status_names[status];
	return "UNKNOWN";
}

const char *hil_wc_opcode_name(unsigned int opcode)
{
	switch (opcode) {
	case WC(SEND):
		return "SEND";
	case WC(RDMA_WRITE):
		return "RDMA_WRITE";
	case WC(RDMA_READ):
		return "RDMA_READ";
	case WC(COMP_SWAP):
		return "COMP_SWAP";
	case WC(FETCH_ADD):
		return "FETCH_ADD";
	case WC(BIND_MW):
		return "BIND_MW";
	case WC(LOCAL_INV):
		return "LOCAL_INV";
#ifdef __KERNEL__
	/* fast registration is a kernel verb: libibverbs has no such opcode */
	case IB_WC_REG_MR:
		return "REG_MR";
#endif
	case WC(RECV):
		return "RECV";
	case WC(RECV_RDMA_WITH_IMM):
		return "RECV_RDMA_WITH_IMM";
	default:
		return "OTHER";
	}
}

static const char *const cm_event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
};

const char *hil_cm_event_name(unsigned int event)
{
	return event < N_OF(cm_event_names) ? cm_event_names[event] : NULL;
}
