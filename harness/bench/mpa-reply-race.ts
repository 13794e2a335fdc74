/**
 * A race in erdma's connection manager, met by every rdma_cm client over erdma on a loaded host.
 * erdma_newconn_connected sends the MPA request and only then sets the endpoint's state to
 * AWAIT_MPAREP (erdma_cm.c:727-728 in 6.12.95; 6.1 and 7.2 the same), and erdma_cm_llp_data_ready
 * queues the reading of a reply only in AWAIT_MPAREQ or AWAIT_MPAREP. A reply that arrives in
 * between stays unread in the socket: the server's QP is already in RTS, the client's connect fails
 * when MPAREP_TIMEOUT (10 s) expires, and librdmacm reports it as below.
 * fixtures/series/erdma-mpa-reply-race.mbox sets the state first, as siw_connect does.
 */

/**
 * What a client prints when its connect timed out waiting for the MPA reply: the kernel's rdma_cm
 * reports the driver's -ETIMEDOUT as RDMA_CM_EVENT_UNREACHABLE (core/cma.c cma_iw_handler).
 * perftest prints it with the status for its test connections ("Event: RDMA_CM_EVENT_UNREACHABLE;
 * error: -110") and without for its first, the one it exchanges its parameters on ("Unexpected CM
 * event bl blka 7"); rping prints "cma event RDMA_CM_EVENT_UNREACHABLE, error -110". On iWARP the
 * only other -ETIMEDOUT is a TCP connect that took 10 s (erdma_cm.h CONNECT_TIMEOUT), which two
 * guests on one wire do not meet.
 */
export const MPA_REPLY_TIMEOUT =
  /RDMA_CM_EVENT_UNREACHABLE[;,] error:? -110\b|Unexpected CM event bl blka 7\b/;

export const MPA_REPLY_RACE =
  "erdma's CM lost the MPA reply (erdma_newconn_connected sets AWAIT_MPAREP after sending the request; fixtures/series/erdma-mpa-reply-race.mbox)";
