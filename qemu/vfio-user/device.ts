/**
 * The device API: what a device model declares (IDs, BARs with handlers, MSI-X vectors, a reset
 * hook) and what the server gives it (guest memory access, interrupts, tracing). A device knows
 * nothing of sockets or messages.
 */

export type AccessSize = 1 | 2 | 4 | 8;

export interface PciIdentity {
  vendorId: number;
  deviceId: number;
  subsystemVendorId?: number;
  subsystemId?: number;
  /** 24 bits: base class, sub class, programming interface */
  classCode: number;
  revision?: number;
}

export interface BarDefinition {
  /** 0-5; a 64-bit BAR also takes index+1 */
  index: number;
  /** bytes, a power of two (memory BARs at least 16, I/O BARs 4..256) */
  size: number;
  type: "mem32" | "mem64" | "io";
  prefetchable?: boolean;
  /**
   * Reads `size` bytes at `offset` (naturally aligned): a number for 1, 2 and 4 bytes, a bigint
   * for 8. Must not wait for guest memory (the guest's CPU waits for the answer; see DmaAccess).
   */
  read?(offset: number, size: AccessSize): number | bigint;
  /** Writes `value` (number for 1, 2, 4 bytes; bigint for 8). Change state here, defer slow work. */
  write?(offset: number, size: AccessSize, value: number | bigint): void;
}

export interface MsixDefinition {
  /** 1..2048 vectors */
  vectors: number;
  /** the BAR holding the table and the PBA (must be declared in `bars`) */
  bar: number;
  /** table offset in the BAR (8-byte aligned); the table takes 16 bytes a vector */
  tableOffset: number;
  /** PBA offset in the BAR (8-byte aligned); the PBA takes 8 bytes per 64 vectors */
  pbaOffset: number;
}

export interface DeviceDefinition {
  /** a short name for logs and traces */
  name: string;
  identity: PciIdentity;
  bars: readonly BarDefinition[];
  msix?: MsixDefinition;
  /** expose a PCI Express endpoint capability (default true) */
  pcie?: boolean;
}

/** Guest memory as the device sees it, whichever way the client shares it. */
export interface DmaAccess {
  /** Reads `length` bytes at guest address `address`; rejects with DmaError outside mapped memory. */
  read(address: bigint, length: number): Promise<Uint8Array>;
  /** Writes `data` at guest address `address`; rejects with DmaError outside writable mapped memory. */
  write(address: bigint, data: Uint8Array): Promise<void>;
  /** Whether [address, address+length) lies in mapped memory with the access (no I/O). */
  isMapped(address: bigint, length: number, access: "read" | "write"): boolean;
}

export interface DeviceContext {
  readonly dma: DmaAccess;
  /** Signals MSI-X vector `vector`; false when it could not be delivered (not set up, masked). */
  raiseIrq(vector: number): boolean;
  /** The command register's bus master enable bit. */
  readonly busMaster: boolean;
  /** A device-level event for the hardware trace (doorbell, DMA done, state change). */
  trace(event: string, detail?: Record<string, unknown>): void;
  log(level: "info" | "warn", text: string): void;
}

export interface DeviceModel {
  readonly definition: DeviceDefinition;
  /** Called once, before any client connects. */
  attach(ctx: DeviceContext): void;
  /** VFIO_USER_DEVICE_RESET (and server start): return to power-on state. */
  reset(): void;
  /** The client disconnected: its memory and interrupts are gone; stop in-flight work. */
  clientGone?(): void;
}
