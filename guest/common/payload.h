/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The payload both executors send and check (harness/protocol/trace.ts payloadSum is its reader):
 * byte j of a WR's payload is (seed + 7 j) & 0xff with seed = wr_id & 0xff, and a received
 * payload is summed with FNV-1a 32.
 */
#ifndef HIL_PAYLOAD_H
#define HIL_PAYLOAD_H

#include "cmdlang.h"

static inline void hil_fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (uint8_t)((seed & 0xff) + j * 7);
}

static inline uint32_t hil_fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 0x811c9dc5;

	for (size_t j = 0; j < n; j++) {
		h ^= p[j];
		h *= 0x01000193;
	}
	return h;
}

#endif
