/**
 * TCP connections holding bytes nobody has read, from a guest's /proc/net/tcp and tcp6: on iWARP
 * (siw) a connection is a kernel TCP socket, and bytes left in its receive queue while a ULP waits
 * for an answer are a message the RDMA layer never took from the socket.
 */

/** the command that prints a guest's TCP table (IPv4, then IPv6 where the kernel has it) */
export const TCP_TABLE_COMMAND = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null";

/** /proc/net/tcp's `st` of an established connection (include/net/tcp_states.h TCP_ESTABLISHED) */
const ESTABLISHED = "01";

export interface UnreadSocket {
  local: string;
  remote: string;
  /** the receive queue's unread bytes (rx_queue: rcv_nxt - copied_seq, net/ipv4/tcp_ipv4.c get_tcp4_sock) */
  bytes: number;
}

/** "0100000A:1DB0" (IPv4, the address as the host's u32 in hex, little-endian here) → "10.0.0.1:7600" */
function endpoint(hex: string): string | undefined {
  const [addr, port] = hex.split(":");
  if (!addr || !port) return undefined;
  const p = Number.parseInt(port, 16);
  if (addr.length === 8) {
    const b = Buffer.from(addr, "hex").reverse();
    return `${[...b].join(".")}:${p}`;
  }
  if (addr.length === 32) {
    // four little-endian u32 words
    const words = addr.match(/.{8}/g) ?? [];
    const bytes = Buffer.concat(words.map((w) => Buffer.from(w, "hex").reverse()));
    const groups = (bytes.toString("hex").match(/.{4}/g) ?? []).map((g) => g.replace(/^0{1,3}/, ""));
    return `[${groups.join(":")}]:${p}`;
  }
  return undefined;
}

/** The established connections of a /proc/net/tcp{,6} text with bytes in their receive queue. */
export function parseUnreadSockets(text: string): UnreadSocket[] {
  const out: UnreadSocket[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    // sl local_address rem_address st tx_queue:rx_queue ...
    if (f.length < 5 || !/^\d+:$/.test(f[0] ?? "") || f[3] !== ESTABLISHED) continue;
    const rx = Number.parseInt(f[4]?.split(":")[1] ?? "", 16);
    const local = endpoint(f[1] ?? "");
    const remote = endpoint(f[2] ?? "");
    if (rx > 0 && local && remote) out.push({ local, remote, bytes: rx });
  }
  return out;
}

export function describeUnread(guest: string, s: UnreadSocket): string {
  return `${guest}'s TCP connection ${s.local} from ${s.remote} holds ${s.bytes} unread byte(s)`;
}
