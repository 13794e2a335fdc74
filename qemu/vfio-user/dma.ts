/**
 * DMA controller: the table of client memory regions (spec "VFIO_USER_DMA_MAP/UNMAP") and guest
 * memory access through it. A region with an fd is mmap'ed and accessed directly (bound-checked:
 * a stray access to unmapped memory would kill the process); a region without one is accessed
 * with DMA_READ/DMA_WRITE messages. Devices see one interface (DmaAccess) either way.
 */
import { fstatSync } from "node:fs";
import type { DmaAccess } from "./device.ts";
import {
  closeFd,
  F_SEAL_SHRINK,
  getSeals,
  type Mapping,
  mapShared,
  SysError,
  unmap,
  viewOf,
} from "./libc.ts";
import { Errno, fail, Vfio } from "./protocol.ts";

const U64_LIMIT = 1n << 64n;
export const PAGE_SIZE = 4096n;

/** A device's memory access was refused or failed. */
export class DmaError extends Error {
  constructor(
    readonly address: bigint,
    readonly length: number,
    readonly reason: string,
  ) {
    super(`DMA ${reason} at 0x${address.toString(16)}+${length}`);
    this.name = "DmaError";
  }
}

export interface DmaRegion {
  address: bigint;
  size: bigint;
  flags: number;
  /** file offset of the fd the region was mapped from */
  offset: bigint;
  /** the local mapping for fd-backed regions; undefined for message-path regions */
  mapping: Mapping | undefined;
}

/** How message-path accesses reach the client (the server implements these with DMA_READ/WRITE). */
export interface DmaMessagePath {
  read(address: bigint, length: number): Promise<Uint8Array>;
  write(address: bigint, data: Uint8Array): Promise<void>;
  /** largest count one message of this kind may carry */
  maxTransfer(kind: "read" | "write"): number;
}

export interface DmaControllerOptions {
  messages: DmaMessagePath;
  /** refuse device DMA while this returns false (bus master disabled) */
  enabled?: () => boolean;
  maxRegions?: number;
  /** called for every device access, for the trace */
  onAccess?: (a: {
    kind: "read" | "write";
    address: bigint;
    length: number;
    path: "shared" | "message" | "mixed";
  }) => void;
  /** a note worth logging (e.g. a memfd without F_SEAL_SHRINK) */
  onNote?: (text: string) => void;
}

export class DmaController implements DmaAccess {
  /** sorted by address, non-overlapping */
  private regions: DmaRegion[] = [];
  private readonly maxRegions: number;

  constructor(private readonly opts: DmaControllerOptions) {
    this.maxRegions = opts.maxRegions ?? 4096;
  }

  list(): readonly DmaRegion[] {
    return this.regions;
  }

  /**
   * Adds a region. `fd` (owned by the controller from here on: mapped then closed, or closed on
   * error) makes it directly accessible. Throws ProtocolError for a request the spec refuses.
   */
  map(
    req: { address: bigint; size: bigint; offset: bigint; flags: number },
    fd: number | undefined,
  ): DmaRegion {
    let mapping: Mapping | undefined;
    try {
      const { address, size, offset, flags } = req;
      if (flags & ~(Vfio.DMA_MAP_FLAG_READ | Vfio.DMA_MAP_FLAG_WRITE)) {
        fail(Errno.EINVAL, `DMA_MAP: unknown flags 0x${flags.toString(16)}`);
      }
      if (size === 0n) fail(Errno.EINVAL, "DMA_MAP: size 0");
      if (address + size > U64_LIMIT) fail(Errno.EINVAL, "DMA_MAP: region wraps past 2^64");
      if (address % PAGE_SIZE || size % PAGE_SIZE) {
        fail(Errno.EINVAL, `DMA_MAP: 0x${address.toString(16)}+0x${size.toString(16)} is not 4 KiB aligned`);
      }
      if (fd === undefined && offset !== 0n) fail(Errno.EINVAL, "DMA_MAP: offset given without an fd");
      if (this.overlapping(address, size)) {
        fail(
          Errno.EEXIST,
          `DMA_MAP: 0x${address.toString(16)}+0x${size.toString(16)} overlaps a mapped region`,
        );
      }
      if (this.regions.length >= this.maxRegions)
        fail(Errno.ENOSPC, `DMA_MAP: already ${this.maxRegions} regions`);
      if (fd !== undefined) {
        if (offset % PAGE_SIZE) fail(Errno.EINVAL, "DMA_MAP: fd offset is not page aligned");
        let st: ReturnType<typeof fstatSync>;
        try {
          st = fstatSync(fd);
        } catch {
          fail(Errno.EBADF, "DMA_MAP: the fd cannot be inspected");
        }
        if (!st.isFile()) fail(Errno.EINVAL, "DMA_MAP: the fd is not a regular file or memfd");
        if (offset + size > BigInt(st.size)) {
          // Touching a mapping past the end of the file raises SIGBUS: refuse it here.
          fail(
            Errno.EINVAL,
            `DMA_MAP: offset+size 0x${(offset + size).toString(16)} beyond the file's ${st.size} bytes`,
          );
        }
        if (size > BigInt(Number.MAX_SAFE_INTEGER)) fail(Errno.EINVAL, "DMA_MAP: region too large to map");
        if (!(getSeals(fd) & F_SEAL_SHRINK)) {
          this.opts.onNote?.("DMA_MAP: fd is not sealed against shrinking; the client must not truncate it");
        }
        try {
          mapping = mapShared(fd, offset, Number(size), (flags & Vfio.DMA_MAP_FLAG_WRITE) !== 0);
        } catch (err) {
          fail(err instanceof SysError ? err.errno : Errno.EIO, `DMA_MAP: ${String((err as Error).message)}`);
        }
      }
      const region: DmaRegion = { address, size, flags, offset, mapping };
      const at = this.regions.findIndex((r) => r.address > address);
      if (at < 0) this.regions.push(region);
      else this.regions.splice(at, 0, region);
      return region;
    } finally {
      if (fd !== undefined) closeFd(fd);
    }
  }

  /** spec "VFIO_USER_DMA_UNMAP": "The address and size of the DMA region being unmapped must match exactly". */
  unmap(address: bigint, size: bigint): DmaRegion {
    const i = this.regions.findIndex((r) => r.address === address && r.size === size);
    if (i < 0) fail(Errno.ENOENT, `DMA_UNMAP: no region 0x${address.toString(16)}+0x${size.toString(16)}`);
    const [region] = this.regions.splice(i, 1) as [DmaRegion];
    if (region.mapping) unmap(region.mapping);
    return region;
  }

  unmapAll(): number {
    const n = this.regions.length;
    for (const r of this.regions) if (r.mapping) unmap(r.mapping);
    this.regions = [];
    return n;
  }

  private overlapping(address: bigint, size: bigint): DmaRegion | undefined {
    return this.regions.find((r) => address < r.address + r.size && r.address < address + size);
  }

  /** The regions covering [address, address+length) in order, or a reason why not. */
  private segments(
    address: bigint,
    length: number,
    need: number,
  ): { region: DmaRegion; start: bigint; length: number }[] | string {
    if (!Number.isSafeInteger(length) || length < 0) return "bad length";
    if (address < 0n || address + BigInt(length) > U64_LIMIT) return "address outside 64 bits";
    const out: { region: DmaRegion; start: bigint; length: number }[] = [];
    let cur = address;
    let left = BigInt(length);
    while (left > 0n) {
      const r = this.regions.find((x) => cur >= x.address && cur < x.address + x.size);
      if (!r) return `outside mapped memory (0x${cur.toString(16)} unmapped)`;
      if ((r.flags & need) !== need)
        return need === Vfio.DMA_MAP_FLAG_WRITE ? "to read-only memory" : "from unreadable memory";
      const n = r.address + r.size - cur < left ? r.address + r.size - cur : left;
      out.push({ region: r, start: cur, length: Number(n) });
      cur += n;
      left -= n;
    }
    return out;
  }

  isMapped(address: bigint, length: number, access: "read" | "write"): boolean {
    const need = access === "read" ? Vfio.DMA_MAP_FLAG_READ : Vfio.DMA_MAP_FLAG_WRITE;
    return typeof this.segments(address, length, need) !== "string";
  }

  private plan(address: bigint, length: number, kind: "read" | "write") {
    if (this.opts.enabled && !this.opts.enabled())
      throw new DmaError(address, length, `${kind} refused: bus master disabled`);
    const need = kind === "read" ? Vfio.DMA_MAP_FLAG_READ : Vfio.DMA_MAP_FLAG_WRITE;
    const segs = this.segments(address, length, need);
    if (typeof segs === "string") throw new DmaError(address, length, `${kind} refused: ${segs}`);
    const paths = new Set(segs.map((s) => (s.region.mapping ? "shared" : "message")));
    const path =
      paths.size > 1
        ? "mixed"
        : ((paths.values().next().value as "shared" | "message" | undefined) ?? "shared");
    this.opts.onAccess?.({ kind, address, length, path });
    return segs;
  }

  /** A region planned before an await may have been unmapped since: never touch a dead mapping. */
  private stillMapped(region: DmaRegion, start: bigint, length: number): void {
    if (!this.regions.includes(region))
      throw new DmaError(start, length, "aborted: region unmapped during the access");
  }

  async read(address: bigint, length: number): Promise<Uint8Array> {
    const segs = this.plan(address, length, "read");
    const out = new Uint8Array(length);
    let pos = 0;
    for (const s of segs) {
      this.stillMapped(s.region, s.start, s.length);
      if (s.region.mapping) {
        // Copy out synchronously: the mapping may be unmapped once we yield.
        out.set(viewOf(s.region.mapping, Number(s.start - s.region.address), s.length), pos);
      } else {
        const max = this.opts.messages.maxTransfer("read");
        for (let done = 0; done < s.length; done += max) {
          const n = Math.min(max, s.length - done);
          const chunk = await this.opts.messages.read(s.start + BigInt(done), n);
          if (chunk.length !== n)
            throw new DmaError(s.start + BigInt(done), n, `read returned ${chunk.length} bytes`);
          out.set(chunk, pos + done);
        }
      }
      pos += s.length;
    }
    return out;
  }

  async write(address: bigint, data: Uint8Array): Promise<void> {
    const segs = this.plan(address, data.length, "write");
    let pos = 0;
    for (const s of segs) {
      const part = data.subarray(pos, pos + s.length);
      this.stillMapped(s.region, s.start, s.length);
      if (s.region.mapping) {
        viewOf(s.region.mapping, Number(s.start - s.region.address), s.length).set(part);
      } else {
        const max = this.opts.messages.maxTransfer("write");
        for (let done = 0; done < s.length; done += max) {
          await this.opts.messages.write(
            s.start + BigInt(done),
            part.subarray(done, Math.min(s.length, done + max)),
          );
        }
      }
      pos += s.length;
    }
  }
}
