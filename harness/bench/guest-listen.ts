/**
 * Waiting in a guest for a server to listen before its client connects. A fixed `sleep 1` between
 * starting a perftest or rping server and its client loses the race on a loaded host: the client's
 * connect is refused (RDMA_CM_EVENT_REJECTED, -104), and the server it leaves behind answers the
 * next tool's client instead of that tool's own server. erdma's and siw's iWARP listeners are kernel
 * TCP sockets (erdma_cm.c erdma_create_listen, siw_cm.c siw_create_listen), so they show in
 * /proc/net/tcp and tcp6 like any other listener (state 0A). The listener of a server that just
 * exited (or was killed) can still be there for a moment: a client that takes it for the new
 * server's is refused or torn down (RDMA_CM_EVENT_REJECTED -104, CONNECT_ERROR, flushed WRs), so a
 * new server starts only once the port is free.
 */

/** perftest's default port (perftest_parameters.h DEF_PORT) */
export const PERFTEST_PORT = 18515;
/** rping's default port (rping.c main: cb->port = htobe16(7174)) */
export const RPING_PORT = 7174;

function listenerTest(port: number): string {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`port ${port}: not a TCP port`);
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return `awk '$4=="0A"{print $2}' /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ':${hex}$'`;
}

/** A shell loop: `until <test>` (or `while`) for up to `seconds`, else exits 124 with `why`. */
function waitLoop(keyword: "until" | "while", test: string, seconds: number, why: string): string {
  return (
    `hil_i=0; ${keyword} ${test}; do hil_i=$((hil_i+1)); if [ $hil_i -ge ${seconds * 10} ]; then ` +
    `echo "${why}" >&2; exit 124; fi; sleep 0.1; done`
  );
}

/** A shell snippet that waits up to `seconds` for a TCP listener on `port`, else exits 124 saying so. */
export function untilListening(port: number, seconds = 30): string {
  return waitLoop(
    "until",
    listenerTest(port),
    seconds,
    `nothing listens on TCP port ${port} after ${seconds} s`,
  );
}

/** A shell snippet that waits up to `seconds` for no TCP listener on `port`, else exits 124 saying so. */
export function untilPortFree(port: number, seconds = 30): string {
  return waitLoop(
    "while",
    listenerTest(port),
    seconds,
    `TCP port ${port} is still listened on after ${seconds} s`,
  );
}

/**
 * A shell snippet that starts `server` in the background once `port` is free (the last server's
 * listener gone), its output to `log`, and returns when it listens (exit 124 if either wait fails).
 */
export function startServer(server: string, port: number, log: string): string {
  return `${untilPortFree(port)}; (${server} >${log} 2>&1 &); ${untilListening(port)}`;
}
