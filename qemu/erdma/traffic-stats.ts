/** The device's traffic counters (erdma's hardware statistics) a transfer between two devices moves. */
import type { DeviceState } from "./state.ts";

/** One request of `bytes` sent by `from` and received by `to`. */
export function countTransfer(from: DeviceState, to: DeviceState, bytes: number): void {
  const add = (st: DeviceState, name: Parameters<DeviceState["stats"]["get"]>[0], n: number) =>
    st.stats.set(name, (st.stats.get(name) ?? 0n) + BigInt(n));
  add(from, "tx_req_cnt", 1);
  add(from, "tx_packets_cnt", 1);
  add(from, "tx_bytes_cnt", bytes);
  add(to, "rx_packets_cnt", 1);
  add(to, "rx_bytes_cnt", bytes);
}
