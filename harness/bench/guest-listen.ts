/**
 * Waiting in a guest for a server to listen before its client connects. A fixed `sleep 1` between
 * starting a perftest or rping server and its client loses the race on a loaded host: the client's
 * connect is refused (RDMA_CM_EVENT_REJECTED, -104), and the server it leaves behind answers the
 * next tool's client instead of that tool's own server. erdma's and siw's iWARP listeners are kernel
 * TCP sockets (erdma_cm.c erdma_create_listen, siw_cm.c siw_create_listen), so they show in
 * /proc/net/tcp and tcp6 like any other listener (state 0A).
 */

/** perftest's default port (perftest_parameters.h DEF_PORT) */
export const PERFTEST_PORT = 18515;
/** rping's default port (rping.c main: cb->port = htobe16(7174)) */
export const RPING_PORT = 7174;

/** A shell snippet that waits up to `seconds` for a TCP listener on `port`, else exits 124 saying so. */
export function untilListening(port: number, seconds = 30): string {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`port ${port}: not a TCP port`);
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return (
    `hil_i=0; until awk '$4=="0A"{print $2}' /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ':${hex}$'; do ` +
    `hil_i=$((hil_i+1)); if [ $hil_i -ge ${seconds * 10} ]; then ` +
    `echo "nothing listens on TCP port ${port} after ${seconds} s" >&2; exit 124; fi; sleep 0.1; done`
  );
}
