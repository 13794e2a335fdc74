/**
 * Memory access checks of the data path: a (stag, address, length) with the right it needs,
 * checked against the MPT entry (valid, key, PD, rights, bounds) and translated to guest-address
 * segments. The local DMA lkey (QUERY_DEVICE cap1 63:32, the ib_device's local_dma_lkey) means
 * "guest physical address" and needs no MPT entry. A failure says which check failed; the data
 * path turns that into the completion status a device gives (local: SEND_*, remote: RECV_*).
 */

import type { Segment } from "./mr.ts";
import type { DeviceState } from "./state.ts";

export type AccessFailure = "stag" | "pd" | "right" | "bounds";

export type AccessResult =
  | { ok: true; segments: Segment[] }
  | { ok: false; failure: AccessFailure; why: string };

const hex = (v: number | bigint) => `0x${v.toString(16)}`;

export async function resolveAccess(
  st: DeviceState,
  pd: number,
  stag: number,
  address: bigint,
  length: number,
  right: number,
): Promise<AccessResult> {
  if (length === 0) return { ok: true, segments: [] };
  if (stag >>> 0 === st.profile.caps.localDmaKey >>> 0) {
    return { ok: true, segments: [{ address, length }] };
  }
  const mr = st.mrs.get(stag >>> 8);
  if (!mr || mr.key !== (stag & 0xff))
    return { ok: false, failure: "stag", why: `no MR with stag ${hex(stag)}` };
  if (!mr.valid) return { ok: false, failure: "stag", why: `MR ${hex(stag)} is invalid` };
  if (mr.pd !== pd)
    return { ok: false, failure: "pd", why: `MR ${hex(stag)} is in PD ${mr.pd}, QP in PD ${pd}` };
  if (!mr.allows(right)) {
    return { ok: false, failure: "right", why: `MR ${hex(stag)} lacks right ${hex(right)}` };
  }
  try {
    return { ok: true, segments: await mr.translate(address, length, `MR ${hex(stag)}`) };
  } catch (err) {
    return { ok: false, failure: "bounds", why: (err as Error).message };
  }
}

/** Gathers the bytes of `segments` from guest memory. */
export async function gather(
  st: DeviceState,
  segments: readonly Segment[],
  context: string,
): Promise<Uint8Array> {
  const total = segments.reduce((n, s) => n + s.length, 0);
  if (segments.length === 1 && segments[0])
    return st.dma.read(segments[0].address, segments[0].length, context);
  const out = new Uint8Array(total);
  let at = 0;
  for (const s of segments) {
    out.set(await st.dma.read(s.address, s.length, context), at);
    at += s.length;
  }
  return out;
}

/** Scatters `data` over `segments` (which hold at least data.length bytes). */
export async function scatter(
  st: DeviceState,
  segments: readonly Segment[],
  data: Uint8Array,
  context: string,
): Promise<void> {
  let at = 0;
  for (const s of segments) {
    if (at >= data.length) break;
    const n = Math.min(s.length, data.length - at);
    await st.dma.write(s.address, data.subarray(at, at + n), context);
    at += n;
  }
}
