/**
 * The wire between erdma devices. iWARP QPs are paired by their connection tuple: MODIFY_QP to RTS
 * carries (sip, dip, sport, dport) of the TCP connection the driver's CM set up (hw.h:292-302), so
 * the peer of a QP is the RTS QP whose tuple is the mirror image. A fabric holds the devices of one
 * process (one device for loopback, two guests' devices for a two-guest run) and finds peers
 * across them; payloads then move by DMA between the two devices' guest memories.
 */
import type { QueuePair } from "./qp.ts";

/** What the fabric needs from a device on it. */
export interface FabricPort {
  readonly name: string;
  /** the QP with this number, if it exists on this device */
  qp(qpn: number): QueuePair | undefined;
  /** every QP of the device */
  qps(): Iterable<QueuePair>;
  /** a peer's state changed (reached RTS, left it): re-examine work that waits for it */
  peerChanged(): void;
}

/** The four fields of a QP's TCP connection that pair it with its peer's. */
export type ConnectionTuple = { sip: string; dip: string; sport: number; dport: number };

/** True when `b` is `a` seen from the other end of the wire. */
export function mirrors(a: ConnectionTuple, b: ConnectionTuple): boolean {
  return a.sip === b.dip && a.dip === b.sip && a.sport === b.dport && a.dport === b.sport;
}

export interface Endpoint {
  port: FabricPort;
  qp: QueuePair;
}

export class Fabric {
  private readonly ports = new Set<FabricPort>();

  join(port: FabricPort): () => void {
    this.ports.add(port);
    return () => {
      this.ports.delete(port);
    };
  }

  get size(): number {
    return this.ports.size;
  }

  /** The RTS QP whose connection mirrors `qp`'s, on any device of the fabric (itself excluded). */
  peerOf(qp: QueuePair): Endpoint | undefined {
    const c = qp.connection;
    if (!c) return undefined;
    for (const port of this.ports) {
      for (const other of port.qps()) {
        const o = other.connection;
        if (other === qp || !o) continue;
        if (mirrors(c, o)) {
          return { port, qp: other };
        }
      }
    }
    return undefined;
  }

  /** Tells every device that a QP changed state (so a sender waiting for its peer looks again). */
  changed(): void {
    for (const port of this.ports) port.peerChanged();
  }
}
