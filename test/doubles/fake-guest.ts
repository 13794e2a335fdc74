/**
 * A fake host for the erdma core: guest memory in a Buffer at a 64-bit guest address (with holes
 * that fault, as unmapped memory would), recorded MSI-X interrupts, a trace log, and either
 * automatic (setImmediate) or manual deferred-work scheduling. Every event the model writes is
 * checked against the trace's schema (what the harness's readers accept): a test file that ends
 * with `traceSchemaProblems()` empty proves the writer and the schema agree on what it exercised.
 */
import { DmaFault, type ErdmaHost, type ErdmaTraceEvent, type GuestMemory } from "../../qemu/erdma/index.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";

const schemaProblems: string[] = [];

/** The events (as JSON, with what is wrong) of every FakeHost of this process that the schema refused. */
export function traceSchemaProblems(): readonly string[] {
  return schemaProblems;
}

export interface FakeGuestOptions {
  /** guest physical address of the memory (default 0x1_0000_0000, above 4 GiB to exercise the _H registers) */
  base?: bigint;
  /** bytes (default 16 MiB) */
  size?: number;
  /** keep deferred jobs until runDeferred() (default: run them with setImmediate) */
  manual?: boolean;
  /** "counts": serialise every event but keep only counts per kind (and internal errors) */
  trace?: "all" | "counts";
}

export class FakeGuestMemory implements GuestMemory {
  readonly base: bigint;
  readonly buf: Buffer;
  private next: number;
  private readonly holes: Array<[bigint, bigint]> = [];
  reads = 0;
  writes = 0;
  /** accesses the memory refused (the device asked for unmapped memory) */
  readonly faults: Array<{ address: bigint; length: number; access: "read" | "write" }> = [];
  /** set if an access ever reached outside the buffer (must never happen) */
  outOfBounds = 0;

  constructor(base: bigint, size: number) {
    this.base = base;
    this.buf = Buffer.alloc(size);
    this.next = 0x1000; // keep page 0 unused so a zero offset is visibly wrong
  }

  get end(): bigint {
    return this.base + BigInt(this.buf.length);
  }

  /** Zeroed memory, aligned (default 4 KiB), like dma_alloc_coherent. */
  alloc(size: number, align = 4096): bigint {
    const start = Math.ceil(this.next / align) * align;
    if (start + size > this.buf.length) throw new Error(`fake guest memory exhausted (${size} bytes)`);
    this.next = start + size;
    this.buf.fill(0, start, start + size);
    return this.base + BigInt(start);
  }

  /** Makes [address, address+length) fault from now on (guest unmapped it). */
  unmap(address: bigint, length: number): void {
    this.holes.push([address, address + BigInt(length)]);
  }

  remapAll(): void {
    this.holes.length = 0;
  }

  isMapped(address: bigint, length: number, _access: "read" | "write"): boolean {
    if (length <= 0 || address < this.base || address + BigInt(length) > this.end) return false;
    const end = address + BigInt(length);
    return !this.holes.some(([s, e]) => address < e && end > s);
  }

  private offset(address: bigint, length: number, access: "read" | "write"): number {
    if (!this.isMapped(address, length, access)) {
      this.faults.push({ address, length, access });
      throw new DmaFault(address, length, access);
    }
    const off = Number(address - this.base);
    if (off < 0 || off + length > this.buf.length) {
      this.outOfBounds++;
      throw new DmaFault(address, length, access, "out of bounds");
    }
    return off;
  }

  async read(address: bigint, length: number): Promise<Uint8Array> {
    const off = this.offset(address, length, "read");
    this.reads++;
    return Uint8Array.prototype.slice.call(this.buf, off, off + length);
  }

  async write(address: bigint, data: Uint8Array): Promise<void> {
    const off = this.offset(address, data.length, "write");
    this.writes++;
    this.buf.set(data, off);
  }

  // synchronous access for the driver double (it is the guest CPU)
  private at(address: bigint, length: number): number {
    const off = Number(address - this.base);
    if (address < this.base || off + length > this.buf.length) {
      throw new RangeError(`guest CPU access outside memory: 0x${address.toString(16)}+${length}`);
    }
    return off;
  }

  u32(address: bigint): number {
    return this.buf.readUInt32LE(this.at(address, 4));
  }

  be32(address: bigint): number {
    return this.buf.readUInt32BE(this.at(address, 4));
  }

  u64(address: bigint): bigint {
    return this.buf.readBigUInt64LE(this.at(address, 8));
  }

  setU64(address: bigint, v: bigint): void {
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, v), this.at(address, 8));
  }

  setBytes(address: bigint, data: Uint8Array): void {
    this.buf.set(data, this.at(address, data.length));
  }

  bytes(address: bigint, length: number): Buffer {
    const off = this.at(address, length);
    return Buffer.from(this.buf.subarray(off, off + length));
  }
}

export class FakeHost implements ErdmaHost {
  readonly dma: FakeGuestMemory;
  readonly events: ErdmaTraceEvent[] = [];
  readonly counts = new Map<string, number>();
  private readonly keepAll: boolean;
  /** interrupts raised and not yet handled by the driver double */
  readonly pendingIrqs: number[] = [];
  /** every interrupt raised, in order */
  readonly irqLog: number[] = [];
  private readonly manual: boolean;
  private readonly deferred: Array<() => void> = [];
  /** vectors to refuse (masked / not set up) */
  readonly masked = new Set<number>();

  constructor(opts: FakeGuestOptions = {}) {
    this.dma = new FakeGuestMemory(opts.base ?? 0x1_0000_0000n, opts.size ?? 16 << 20);
    this.manual = opts.manual === true;
    this.keepAll = opts.trace !== "counts";
  }

  raiseMsix(vector: number): boolean {
    this.irqLog.push(vector);
    if (this.masked.has(vector)) return false;
    this.pendingIrqs.push(vector);
    return true;
  }

  trace(event: ErdmaTraceEvent): void {
    // a JSON round trip proves every event is serialisable
    const json = JSON.stringify(event);
    const copy = JSON.parse(json) as ErdmaTraceEvent;
    const checked = erdmaTraceEventSchema.safeParse(copy);
    if (!checked.success)
      schemaProblems.push(
        `${json}: ${checked.error.issues.map((i) => `${i.path.join(".") || "(event)"}: ${i.message}`).join("; ")}`,
      );
    this.counts.set(event.kind, (this.counts.get(event.kind) ?? 0) + 1);
    if (this.keepAll || event.kind === "internal-error") this.events.push(copy);
  }

  now(): number {
    return performance.now();
  }

  defer(job: () => void): void {
    if (this.manual) this.deferred.push(job);
    else setImmediate(job);
  }

  /** Manual mode: runs the deferred jobs queued so far. */
  runDeferred(): number {
    const jobs = this.deferred.splice(0);
    for (const j of jobs) j();
    return jobs.length;
  }

  get deferredCount(): number {
    return this.deferred.length;
  }

  ofKind<K extends ErdmaTraceEvent["kind"]>(kind: K): Array<Extract<ErdmaTraceEvent, { kind: K }>> {
    return this.events.filter((e): e is Extract<ErdmaTraceEvent, { kind: K }> => e.kind === kind);
  }

  clearEvents(): void {
    this.events.length = 0;
  }
}
