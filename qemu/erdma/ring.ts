/**
 * Ring arithmetic shared by every queue. Indices are free running; an entry's slot is the index
 * masked by the (power of two) depth. The device writes owner = 1 on even passes and 0 on odd ones;
 * the driver accepts an entry when owner != !!(ci & depth) (erdma_cmdq.c:257, erdma_eq.c:27,
 * erdma_cq.c:340).
 */

export function slot(index: number, depth: number): number {
  return (index & (depth - 1)) >>> 0;
}

export function ownerBit(index: number, depth: number): number {
  return (index & depth) === 0 ? 1 : 0;
}

/** Entries between a consumer index reported by the driver and the device's producer index. */
export function distance(pi: number, ci: number, indexBits: number): number {
  const mod = 2 ** indexBits;
  return (((pi - ci) % mod) + mod) % mod;
}

export function inc32(v: number): number {
  return (v + 1) >>> 0;
}
