/**
 * Guest memory access for the core: every access is bound-checked before it reaches the host, and
 * every refusal becomes a DmaFault with a trace event naming what the device was doing.
 */
import { hex, U64_MASK } from "./bits.ts";
import { DmaFault, type GuestMemory } from "./host.ts";
import type { Tracer } from "./trace.ts";

/** The reason of every access after the device was reset (revoke()): no guest memory is reached. */
export const DEVICE_RESET = "device reset";

/** Largest single access the core makes; anything larger is a model bug or a hostile length. */
const MAX_ACCESS = 64 << 20;

export class Dma {
  reads = 0;
  writes = 0;
  faults = 0;
  /** once revoked (the device was reset), every access fails without reaching guest memory */
  private revoked = false;

  constructor(
    private readonly mem: GuestMemory,
    private readonly tracer: Tracer,
  ) {}

  revoke(): void {
    this.revoked = true;
  }

  mapped(address: bigint, length: number, access: "read" | "write"): boolean {
    if (this.revoked || !inRange(address, length)) return false;
    try {
      return this.mem.isMapped(address, length, access) === true;
    } catch {
      return false;
    }
  }

  async read(address: bigint, length: number, context: string): Promise<Uint8Array> {
    if (this.revoked) throw new DmaFault(address, length, "read", DEVICE_RESET);
    if (!inRange(address, length)) throw this.fault(address, length, "read", context, "address out of range");
    this.reads++;
    try {
      const data = await this.mem.read(address, length);
      if (!(data instanceof Uint8Array) || data.length !== length) {
        throw new DmaFault(address, length, "read", "short read");
      }
      return data;
    } catch (err) {
      throw this.fault(address, length, "read", context, reasonOf(err));
    }
  }

  async write(address: bigint, data: Uint8Array, context: string): Promise<void> {
    if (this.revoked) throw new DmaFault(address, data.length, "write", DEVICE_RESET);
    if (!inRange(address, data.length)) {
      throw this.fault(address, data.length, "write", context, "address out of range");
    }
    this.writes++;
    try {
      await this.mem.write(address, data);
    } catch (err) {
      throw this.fault(address, data.length, "write", context, reasonOf(err));
    }
  }

  async readU64(address: bigint, context: string): Promise<bigint> {
    const b = await this.read(address, 8, context);
    return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true);
  }

  private fault(address: bigint, length: number, access: "read" | "write", context: string, reason: string) {
    this.faults++;
    this.tracer.emit({
      kind: "dma-fault",
      address: hex(address & U64_MASK),
      length,
      access,
      context,
      reason,
    });
    return new DmaFault(address, length, access, reason);
  }
}

function inRange(address: bigint, length: number): boolean {
  return (
    Number.isInteger(length) &&
    length > 0 &&
    length <= MAX_ACCESS &&
    address >= 0n &&
    address + BigInt(length) <= U64_MASK + 1n
  );
}

function reasonOf(err: unknown): string {
  if (err instanceof DmaFault) return err.reason;
  if (err instanceof Error) return err.message;
  return String(err);
}
