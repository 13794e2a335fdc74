/**
 * Connections the device saw reach RTS on one side only. MODIFY_QP to RTS carries the QP's TCP
 * connection (erdma hw.h: sip, dip, sport, dport), so each side of an iWARP connection shows in the
 * hardware trace when its driver moves it to RTS; a connection whose mirror never reached RTS on any
 * device of the run was accepted by one side while the other never finished its connect (for erdma:
 * the MPA reply it never read, erdma_cm.c erdma_newconn_connected; hil repro erdma-mpa-reply-race).
 */
import { type ConnectionTuple as Connection, mirrors } from "../../qemu/erdma/fabric.ts";
import { eventsOf, type HwTraceEvent } from "../protocol/hw-trace.ts";

function connectionOf(detail: unknown): Connection | undefined {
  if (typeof detail !== "object" || detail === null) return undefined;
  const d = detail as { to?: unknown; connection?: Partial<Connection> };
  const c = d.connection;
  if (d.to !== "RTS" || !c) return undefined;
  const { sip, dip, sport, dport } = c;
  return typeof sip === "string" &&
    typeof dip === "string" &&
    typeof sport === "number" &&
    typeof dport === "number"
    ? { sip, dip, sport, dport }
    : undefined;
}

/** One line per QP that reached RTS on a connection whose other side never did, naming both ends. */
export function halfOpenConnections(hw: readonly HwTraceEvent[]): string[] {
  const rts = eventsOf(hw, "cmd").flatMap((e) => {
    if (e.name !== "MODIFY_QP" || e.status !== 0) return [];
    const c = connectionOf(e.detail);
    const qpn = (e.detail as { qpn?: unknown } | undefined)?.qpn;
    return c ? [{ dev: e.dev, qpn, c }] : [];
  });
  return rts
    .filter((side) => !rts.some((other) => mirrors(side.c, other.c)))
    .map(
      ({ dev, qpn, c }) =>
        `hw: ${dev} QP ${String(qpn)} reached RTS on ${c.sip}:${c.sport} <-> ${c.dip}:${c.dport}; no QP reached RTS on its other side (${c.dip}:${c.dport})`,
    );
}
