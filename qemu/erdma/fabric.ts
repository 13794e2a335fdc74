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
        if (o.sip === c.dip && o.dip === c.sip && o.sport === c.dport && o.dport === c.sport) {
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
