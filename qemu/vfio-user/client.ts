/**
 * A vfio-user client in Node: the client side of the protocol, for unit tests, the fuzz test and
 * debugging a device without QEMU. It owns a fake guest memory (plain buffers, or memfds it
 * shares with DMA_MAP) and answers the server's DMA_READ/DMA_WRITE like QEMU 10.2 does.
 */
import { readSync } from "node:fs";
import { closeFd, eventFd, type Mapping, mapShared, memfdCreate, unmap, viewOf } from "./libc.ts";
import {
  Command,
  type DeviceInfo,
  DMA_RW_DATA,
  DMA_RW_SIZE,
  decodeDeviceInfo,
  decodeDmaRw,
  decodeHeader,
  decodeIrqInfo,
  decodeRegionAccess,
  decodeRegionInfo,
  decodeVersion,
  Errno,
  encodeDeviceInfo,
  encodeDmaMap,
  encodeDmaUnmap,
  encodeIrqInfo,
  encodeIrqSet,
  encodeMessage,
  encodeRegionAccess,
  encodeRegionInfo,
  encodeVersion,
  errnoName,
  Flags,
  HEADER_SIZE,
  type Header,
  type IrqInfo,
  type RegionInfo,
  type VersionMessage,
  Vfio,
} from "./protocol.ts";
import { ClientSocket, type IncomingMessage } from "./transport.ts";

export interface Reply {
  header: Header;
  payload: Buffer;
  fds: number[];
}

export class ReplyError extends Error {
  constructor(
    readonly header: Header,
    what: string,
  ) {
    super(`${what} failed: ${errnoName(header.error)}`);
    this.name = "ReplyError";
  }
  get errno(): number {
    return this.header.error;
  }
}

interface GuestRegion {
  address: bigint;
  size: number;
  /** local access to the bytes */
  bytes: Uint8Array;
  memfd?: number;
  mapping?: Mapping;
}

/** The capabilities QEMU 10.2 proposes (hw/vfio-user/proxy.c caps_json). */
export const QEMU_CAPS = {
  capabilities: {
    migration: { pgsize: 4096, max_bitmap_size: 268435456 },
    max_msg_fds: 16,
    max_data_xfer_size: 1048576,
    pgsizes: 4096,
    max_dma_maps: 65535,
    write_multiple: true,
  },
};

export class VfioUserClient {
  private readonly socket: ClientSocket;
  private nextId = 1;
  private readonly waiting = new Map<number, (r: Reply) => void>();
  private readonly memory: GuestRegion[] = [];
  private closedReason: string | undefined;
  private readonly closeWaiters: ((reason: string) => void)[] = [];
  /** answer DMA_READ/DMA_WRITE (set false to test the server's timeout) */
  answerDma = true;
  /** DMA requests the server sent, for assertions */
  readonly dmaRequests: { command: number; address: bigint; count: number }[] = [];
  /** replies nobody waited for (e.g. to raw messages) */
  readonly stray: Reply[] = [];

  private constructor(connect: (h: Parameters<typeof ClientSocket.connect>[2]) => ClientSocket) {
    this.socket = connect({
      onMessage: (_c, m) => this.onMessage(m),
      onDisconnect: (_c, reason) => {
        this.closedReason = reason;
        for (const w of this.closeWaiters.splice(0)) w(reason);
        for (const [id, w] of this.waiting) {
          this.waiting.delete(id);
          w({
            header: { id, command: 0, size: 16, flags: Flags.TYPE_REPLY | Flags.ERROR, error: Errno.EIO },
            payload: Buffer.alloc(0),
            fds: [],
          });
        }
      },
    });
  }

  static connect(path: string): VfioUserClient {
    return new VfioUserClient((h) =>
      ClientSocket.connect(path, { maxMessage: (1 << 20) + 4096, maxFds: 16 }, h),
    );
  }

  get disconnected(): string | undefined {
    return this.closedReason;
  }

  /** Resolves with the reason once the connection is gone. */
  waitClosed(): Promise<string> {
    if (this.closedReason !== undefined) return Promise.resolve(this.closedReason);
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  private onMessage(m: IncomingMessage): void {
    const header = decodeHeader(m.data);
    const reply: Reply = { header, payload: m.data.subarray(HEADER_SIZE), fds: m.fds };
    if ((header.flags & Flags.TYPE_MASK) === Flags.TYPE_REPLY) {
      const w = this.waiting.get(header.id);
      if (w) {
        this.waiting.delete(header.id);
        w(reply);
      } else {
        this.stray.push(reply);
        for (const fd of m.fds) closeFd(fd);
      }
      return;
    }
    for (const fd of m.fds) closeFd(fd);
    this.onServerCommand(header, reply.payload);
  }

  /** Serves DMA_READ / DMA_WRITE from the fake guest memory, in QEMU 10.2's layout. */
  private onServerCommand(h: Header, payload: Buffer): void {
    const error = (e: number): void => {
      this.socket.connection.send(
        encodeMessage({ id: h.id, command: h.command, flags: Flags.TYPE_REPLY | Flags.ERROR, error: e }),
      );
    };
    if (h.command !== Command.DMA_READ && h.command !== Command.DMA_WRITE) {
      error(Errno.ENOSYS);
      return;
    }
    if (h.size < HEADER_SIZE + DMA_RW_SIZE) {
      error(Errno.EINVAL);
      return;
    }
    const rw = decodeDmaRw(payload, false);
    this.dmaRequests.push({ command: h.command, address: rw.address, count: rw.count });
    if (!this.answerDma) return;
    const region = this.memory.find(
      (r) => rw.address >= r.address && rw.address + BigInt(rw.count) <= r.address + BigInt(r.size),
    );
    if (!region) {
      error(Errno.EFAULT);
      return;
    }
    const off = Number(rw.address - region.address);
    if (h.command === Command.DMA_READ) {
      const body = Buffer.alloc(DMA_RW_SIZE + rw.count);
      payload.copy(body, 0, 0, 12);
      body.set(region.bytes.subarray(off, off + rw.count), DMA_RW_DATA);
      this.socket.connection.send(
        encodeMessage({ id: h.id, command: h.command, flags: Flags.TYPE_REPLY, error: 0 }, body),
      );
      return;
    }
    if (payload.length < DMA_RW_SIZE + rw.count) {
      error(Errno.E2BIG);
      return;
    }
    region.bytes.set(payload.subarray(DMA_RW_DATA, DMA_RW_DATA + rw.count), off);
    this.socket.connection.send(
      encodeMessage({ id: h.id, command: h.command, flags: Flags.TYPE_REPLY, error: 0 }),
    );
  }

  /** Sends a raw message (any bytes) with optional fds; no reply is awaited. */
  sendRaw(bytes: Uint8Array, fds: number[] = []): void {
    this.socket.connection.send(bytes, fds);
  }

  /** Sends a raw message and waits for the reply carrying its id (for malformed-message tests). */
  exchange(bytes: Uint8Array, fds: number[] = [], timeoutMs = 5000): Promise<Reply> {
    const id = (bytes[0] ?? 0) | ((bytes[1] ?? 0) << 8);
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`no reply to raw message id ${id} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      this.sendRaw(bytes, fds);
    });
  }

  /** A message id the client has not used (for raw messages). */
  takeId(): number {
    const id = this.nextId;
    this.nextId = (this.nextId + 1) & 0xffff;
    return id;
  }

  /** Sends a command and waits for its reply (error replies resolve too). */
  request(
    command: number,
    payload: Uint8Array = new Uint8Array(0),
    opts: { fds?: number[]; flags?: number; timeoutMs?: number } = {},
  ): Promise<Reply> {
    const id = this.nextId;
    this.nextId = (this.nextId + 1) & 0xffff;
    const msg = encodeMessage({ id, command, flags: opts.flags ?? Flags.TYPE_COMMAND, error: 0 }, payload);
    if ((opts.flags ?? 0) & Flags.NO_REPLY) {
      this.sendRaw(msg, opts.fds);
      return Promise.resolve({ header: decodeHeader(msg), payload: Buffer.alloc(0), fds: [] });
    }
    return new Promise<Reply>((resolve, reject) => {
      if (this.closedReason !== undefined) {
        reject(new Error(`connection closed: ${this.closedReason}`));
        return;
      }
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`no reply to command ${command} id ${id} within ${opts.timeoutMs ?? 5000} ms`));
      }, opts.timeoutMs ?? 5000);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      this.sendRaw(msg, opts.fds);
    });
  }

  private async ok(command: number, payload: Uint8Array, what: string, fds?: number[]): Promise<Reply> {
    const r = await this.request(command, payload, { fds });
    if (r.header.flags & Flags.ERROR) throw new ReplyError(r.header, what);
    return r;
  }

  async negotiate(caps: object | undefined = QEMU_CAPS): Promise<VersionMessage> {
    const r = await this.ok(
      Command.VERSION,
      encodeVersion(0, 0, caps ? JSON.stringify(caps) : undefined),
      "VERSION",
    );
    return decodeVersion(r.payload);
  }

  async deviceInfo(): Promise<DeviceInfo> {
    const r = await this.ok(
      Command.DEVICE_GET_INFO,
      encodeDeviceInfo({ argsz: 16, flags: 0, numRegions: 0, numIrqs: 0 }),
      "DEVICE_GET_INFO",
    );
    return decodeDeviceInfo(r.payload);
  }

  async regionInfo(index: number): Promise<RegionInfo> {
    const r = await this.ok(
      Command.DEVICE_GET_REGION_INFO,
      encodeRegionInfo({ argsz: 32, flags: 0, index, capOffset: 0, size: 0n, offset: 0n }),
      "DEVICE_GET_REGION_INFO",
    );
    return decodeRegionInfo(r.payload, false);
  }

  async irqInfo(index: number): Promise<IrqInfo> {
    const r = await this.ok(
      Command.DEVICE_GET_IRQ_INFO,
      encodeIrqInfo({ argsz: 16, flags: 0, index, count: 0 }),
      "DEVICE_GET_IRQ_INFO",
    );
    return decodeIrqInfo(r.payload);
  }

  async regionRead(region: number, offset: number | bigint, count: number): Promise<Buffer> {
    const r = await this.ok(
      Command.REGION_READ,
      encodeRegionAccess({ offset: BigInt(offset), region, count }),
      "REGION_READ",
    );
    const a = decodeRegionAccess(r.payload, "REGION_READ reply");
    return Buffer.from(a.data);
  }

  async regionWrite(
    region: number,
    offset: number | bigint,
    data: Uint8Array,
    posted = false,
  ): Promise<void> {
    const payload = encodeRegionAccess({ offset: BigInt(offset), region, count: data.length, data });
    if (posted) {
      await this.request(Command.REGION_WRITE, payload, { flags: Flags.NO_REPLY });
      return;
    }
    await this.ok(Command.REGION_WRITE, payload, "REGION_WRITE");
  }

  async read32(region: number, offset: number): Promise<number> {
    return (await this.regionRead(region, offset, 4)).readUInt32LE(0);
  }

  async write32(region: number, offset: number, value: number): Promise<void> {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value >>> 0);
    await this.regionWrite(region, offset, b);
  }

  async reset(): Promise<void> {
    await this.ok(Command.DEVICE_RESET, new Uint8Array(0), "DEVICE_RESET");
  }

  /**
   * Adds fake guest RAM at `address` and maps it into the server: shared (a memfd sent with
   * DMA_MAP, like memory-backend-memfd,share=on) or not (served with DMA_READ/WRITE messages).
   */
  async addMemory(address: bigint, size: number, shared: boolean, flags = 3): Promise<Uint8Array> {
    let region: GuestRegion;
    if (shared) {
      const memfd = memfdCreate("hil-fake-guest", size);
      const mapping = mapShared(memfd, 0n, size, true);
      region = { address, size, bytes: viewOf(mapping, 0, size), memfd, mapping };
    } else {
      region = { address, size, bytes: new Uint8Array(size) };
    }
    this.memory.push(region);
    await this.ok(
      Command.DMA_MAP,
      encodeDmaMap({ flags, offset: 0n, address, size: BigInt(size) }),
      "DMA_MAP",
      region.memfd === undefined ? [] : [region.memfd],
    );
    return region.bytes;
  }

  async removeMemory(address: bigint): Promise<void> {
    const i = this.memory.findIndex((r) => r.address === address);
    const r = this.memory[i];
    if (!r) throw new Error(`no fake memory at 0x${address.toString(16)}`);
    await this.ok(
      Command.DMA_UNMAP,
      encodeDmaUnmap({ flags: 0, address, size: BigInt(r.size) }),
      "DMA_UNMAP",
    );
    this.memory.splice(i, 1);
    this.freeRegion(r);
  }

  private freeRegion(r: GuestRegion): void {
    if (r.mapping) unmap(r.mapping);
    if (r.memfd !== undefined) closeFd(r.memfd);
  }

  /** DEVICE_SET_IRQS as given; the reply as it comes, error or not. */
  setIrqs(set: Parameters<typeof encodeIrqSet>[0], fds?: number[]): Promise<Reply> {
    return this.request(Command.DEVICE_SET_IRQS, encodeIrqSet(set), { fds });
  }

  /** Gives MSI-X vectors [start, start+n) fresh eventfds; returns them (owned by the client). */
  async setMsixEventFds(start: number, n: number): Promise<number[]> {
    const fds = Array.from({ length: n }, () => eventFd(true));
    try {
      await this.ok(
        Command.DEVICE_SET_IRQS,
        encodeIrqSet({
          flags: Vfio.IRQ_SET_DATA_EVENTFD | Vfio.IRQ_SET_ACTION_TRIGGER,
          index: Vfio.PCI_MSIX_IRQ_INDEX,
          start,
          count: n,
        }),
        "DEVICE_SET_IRQS",
        fds,
      );
    } catch (err) {
      for (const fd of fds) closeFd(fd);
      throw err;
    }
    return fds;
  }

  /** Closes the connection and frees the fake memory. */
  async close(): Promise<void> {
    await this.socket.close();
    for (const r of this.memory.splice(0)) this.freeRegion(r);
  }
}

/** Reads and clears an eventfd's counter (non-blocking); 0 when it was not signalled. */
export function drainEventFd(fd: number): number {
  const b = Buffer.alloc(8);
  try {
    const n = readSync(fd, b, 0, 8, null);
    return n === 8 ? Number(b.readBigUInt64LE(0)) : 0;
  } catch {
    return 0;
  }
}
