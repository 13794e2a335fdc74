/**
 * What the erdma core needs from whoever hosts it (the vfio-user glue, or a test's fake host):
 * guest memory, MSI-X delivery, a trace sink, a clock and a way to run deferred work. The core
 * knows nothing of sockets, eventfds or mmap.
 */
import type { ErdmaTraceEvent } from "./trace.ts";

/** A guest-memory access the host refused: the address is not mapped (or not with that access). */
export class DmaFault extends Error {
  constructor(
    readonly address: bigint,
    readonly length: number,
    readonly access: "read" | "write",
    readonly reason = "unmapped",
  ) {
    super(`DMA ${access} fault at 0x${address.toString(16)}+${length}: ${reason}`);
    this.name = "DmaFault";
  }
}

/**
 * Guest physical memory as the device sees it. `read`/`write` reject with DmaFault outside mapped
 * memory (any other rejection is treated the same way). Writes of up to 8 bytes at an aligned
 * address should land in one store: the core writes a queue element's owner word last and relies
 * on the guest not seeing it before the rest.
 */
export interface GuestMemory {
  read(address: bigint, length: number): Promise<Uint8Array>;
  write(address: bigint, data: Uint8Array): Promise<void>;
  /** Whether [address, address+length) is mapped with that access; no I/O, may be called anywhere. */
  isMapped(address: bigint, length: number, access: "read" | "write"): boolean;
}

export interface ErdmaHost {
  readonly dma: GuestMemory;
  /** Signals MSI-X vector `vector`; returns false (or nothing) when it could not be delivered. */
  raiseMsix(vector: number): boolean | undefined;
  /** Receives every hardware event (JSON-serialisable). */
  trace(event: ErdmaTraceEvent): void;
  /** Milliseconds, for event timestamps (monotonic preferred). */
  now(): number;
  /**
   * Runs `job` later, outside the current register access (default: setImmediate). The core never
   * touches guest memory from a register handler; it queues the work and asks for it to be run.
   */
  defer?(job: () => void): void;
}
