/**
 * The vfio-user server: one device behind one UNIX socket, one client at a time. It validates
 * every message, answers the client's commands (spec "Commands"), emulates PCI config space and
 * the MSI-X table/PBA, and gives the device guest memory (DmaController) and interrupts.
 * Knows nothing of any particular device.
 */
import type { DeviceContext, DeviceModel } from "./device.ts";
import { DmaController, DmaError } from "./dma.ts";
import { deviceInfoReply, irqInfoReply, regionInfoReply } from "./info.ts";
import { Interrupts } from "./irqs.ts";
import { closeFd } from "./libc.ts";
import { PciConfigSpace } from "./pci-config.ts";
import {
  Command,
  commandName,
  DMA_UNMAP_SIZE,
  decodeDmaMap,
  decodeDmaRw,
  decodeDmaUnmap,
  decodeHeader,
  decodeIrqSet,
  decodeRegionAccess,
  decodeVersion,
  decodeWriteMulti,
  Errno,
  encodeDmaRw,
  encodeDmaUnmap,
  encodeErrorReply,
  encodeMessage,
  encodeRegionAccess,
  encodeReply,
  encodeVersion,
  errnoName,
  Flags,
  fail,
  HEADER_SIZE,
  type Header,
  KNOWN_FLAGS,
  ProtocolError,
  type VersionCaps,
  Vfio,
} from "./protocol.ts";
import { DeviceRegions } from "./regions.ts";
import { describe, type Logger, type TraceEvent } from "./trace.ts";
import { type Connection, type IncomingMessage, Listener } from "./transport.ts";

export type { Logger, TraceEvent } from "./trace.ts";

export interface ServerOptions {
  socketPath: string;
  device: DeviceModel;
  /** every message and hardware event, with a monotonic timestamp in ms */
  trace?: (event: TraceEvent & { t: number }) => void;
  /**
   * Which commands' recv/send events `trace` wants (default: every command's). The others are not
   * built at all: a trace that leaves out the register accesses saves decoding each one.
   */
  traceCommand?: (command: number) => boolean;
  /** default: warnings to stderr */
  log?: Logger;
  /** max_data_xfer_size offered to the client (default 1 MiB) */
  maxDataXfer?: number;
  /** how long a DMA_READ/DMA_WRITE waits for the client's reply (default 5000 ms) */
  dmaTimeoutMs?: number;
  /** refuse device DMA while the command register's bus master bit is clear (default true) */
  requireBusMaster?: boolean;
  /**
   * Largest DMA_READ (default 64 KiB). QEMU 10.2 sends each message with one non-blocking
   * sendmsg and takes a partial write for a whole one (hw/vfio-user/proxy.c vfio_user_send_qio),
   * so a reply larger than its socket send buffer (about 200 KiB) is cut short and the stream is
   * lost. DMA_READ replies are the only large messages QEMU sends; keep them well below that.
   */
  dmaReadChunk?: number;
}

const MAX_FDS = 16;
const PROTOCOL_MAJOR = 0;
const PROTOCOL_MINOR = 0;
const DEFAULT_XFER = 1 << 20;
const MAX_DMA_MAPS = 4096;
const FD_COMMANDS = new Set<number>([Command.DMA_MAP, Command.DEVICE_SET_IRQS]);

const defaultLog: Logger = (level, text) => {
  if (level === "warn") process.stderr.write(`[vfio-user] ${text}\n`);
};

interface Pending {
  command: number;
  count: number;
  address: bigint;
  resolve: (data: Uint8Array) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** fds received with a message: a handler takes what it keeps, the rest are closed after it. */
class FdBag {
  private taken = false;
  constructor(readonly fds: number[]) {}
  take(): number[] {
    this.taken = true;
    return this.fds;
  }
  release(): void {
    if (!this.taken) for (const fd of this.fds) closeFd(fd);
    this.taken = true;
  }
}

interface Session {
  conn: Connection;
  negotiated: boolean;
  /** the client's max_data_xfer_size (spec default 1 MiB) */
  clientMaxXfer: number;
  writeMultiple: boolean;
  pending: Map<number, Pending>;
  nextId: number;
}

export class VfioUserServer {
  readonly config: PciConfigSpace;
  readonly irqs: Interrupts;
  readonly dma: DmaController;
  private readonly device: DeviceModel;
  private readonly log: Logger;
  private readonly maxXfer: number;
  private readonly dmaTimeoutMs: number;
  private readonly dmaReadChunk: number;
  private readonly t0 = performance.now();
  private listener: Listener | undefined;
  private session: Session | undefined;
  readonly regions: DeviceRegions;
  private readonly sessionWaiters: (() => void)[] = [];
  /** counters for tests and the fuzz report */
  readonly stats = { messages: 0, refused: 0, disconnects: 0, connects: 0 };

  constructor(private readonly opts: ServerOptions) {
    this.device = opts.device;
    this.log = opts.log ?? defaultLog;
    this.maxXfer = opts.maxDataXfer ?? DEFAULT_XFER;
    this.dmaTimeoutMs = opts.dmaTimeoutMs ?? 5000;
    this.dmaReadChunk = opts.dmaReadChunk ?? 64 << 10;
    const def = opts.device.definition;
    this.config = new PciConfigSpace(def);
    this.irqs = new Interrupts(def.msix?.vectors ?? 0);
    this.regions = new DeviceRegions(def, this.config, this.irqs, this.maxXfer, this.log, (e) =>
      this.emit(e),
    );
    const requireMaster = opts.requireBusMaster ?? true;
    this.dma = new DmaController({
      messages: {
        read: (address, length) => this.dmaMessage(Command.DMA_READ, address, length),
        write: async (address, data) => {
          await this.dmaMessage(Command.DMA_WRITE, address, data.length, data);
        },
        maxTransfer: (kind) =>
          Math.min(
            kind === "read" ? this.dmaReadChunk : this.maxXfer,
            this.maxXfer,
            this.session?.clientMaxXfer ?? DEFAULT_XFER,
          ),
      },
      enabled: requireMaster ? () => this.config.busMaster : undefined,
      maxRegions: MAX_DMA_MAPS,
      onAccess: (a) =>
        this.emit({ kind: "dma", access: a.kind, address: a.address, length: a.length, path: a.path }),
      onNote: (text) => this.emit({ kind: "note", text }),
    });
    const server = this;
    const ctx: DeviceContext = {
      dma: this.dma,
      raiseIrq: (vector) => {
        const delivered = this.irqs.trigger(vector);
        this.emit({ kind: "irq", vector, delivered });
        return delivered;
      },
      get busMaster() {
        return server.config.busMaster;
      },
      trace: (event, detail) => this.emit({ kind: "device", event, detail }),
      log: (level, text) => this.log(level, `${def.name}: ${text}`),
    };
    this.device.attach(ctx);
    this.device.reset();
  }

  get socketPath(): string {
    return this.opts.socketPath;
  }

  get connected(): boolean {
    return this.session !== undefined;
  }

  /** Resolves when a client has connected (immediately if one is). */
  waitForClient(): Promise<void> {
    if (this.session) return Promise.resolve();
    return new Promise((resolve) => this.sessionWaiters.push(resolve));
  }

  listen(): void {
    if (this.listener) return;
    this.listener = Listener.open(
      this.opts.socketPath,
      { maxMessage: HEADER_SIZE + this.maxXfer + 4096, maxFds: MAX_FDS * 4 },
      {
        onConnect: (conn) => this.onConnect(conn),
        onMessage: (conn, msg) => this.onMessage(conn, msg),
        onDisconnect: (conn, reason) => this.onDisconnect(conn, reason),
        onLog: (text) => this.log("warn", text),
      },
    );
  }

  /** Closes the client connection and the socket; unmaps memory, closes every fd, removes the socket file. */
  async close(): Promise<void> {
    await this.listener?.close();
    this.listener = undefined;
    if (this.session) this.endSession(this.session, "server closed");
  }

  private emit(event: TraceEvent): void {
    this.opts.trace?.({ ...event, t: performance.now() - this.t0 });
  }

  private onConnect(conn: Connection): void {
    this.stats.connects++;
    this.session = {
      conn,
      negotiated: false,
      clientMaxXfer: DEFAULT_XFER,
      writeMultiple: false,
      pending: new Map(),
      nextId: 1,
    };
    this.emit({ kind: "connect" });
    for (const w of this.sessionWaiters.splice(0)) w();
  }

  private onDisconnect(conn: Connection, reason: string): void {
    const s = this.session;
    if (!s || s.conn !== conn) return;
    this.endSession(s, reason);
  }

  /** spec "Client Disconnection": unmap client memory, close its IRQ fds, keep device state. */
  private endSession(s: Session, reason: string): void {
    if (this.session !== s) return;
    this.session = undefined;
    this.stats.disconnects++;
    for (const p of s.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new DmaError(p.address, p.count, "aborted: client disconnected"));
    }
    s.pending.clear();
    this.dma.unmapAll();
    this.irqs.releaseAll();
    try {
      this.device.clientGone?.();
    } catch (err) {
      this.log("warn", `device clientGone hook failed: ${String(err)}`);
    }
    this.emit({ kind: "disconnect", reason });
  }

  /** Drops the client with a logged reason (framing lost, incompatible version). */
  private disconnect(s: Session, reason: string): void {
    this.log("warn", `disconnecting client: ${reason}`);
    s.conn.shutdown(reason);
  }

  private send(s: Session, msg: Buffer, info?: Record<string, unknown>): void {
    const h = this.opts.trace ? decodeHeader(msg) : undefined;
    if (h && this.opts.traceCommand?.(h.command) !== false) {
      this.emit({
        kind: "send",
        id: h.id,
        command: commandName(h.command),
        flags: h.flags,
        size: h.size,
        fds: 0,
        info,
      });
    }
    s.conn.send(msg);
  }

  private onMessage(conn: Connection, msg: IncomingMessage): void {
    const s = this.session;
    const bag = new FdBag(msg.fds);
    if (!s || s.conn !== conn) {
      bag.release();
      return;
    }
    this.stats.messages++;
    const h = decodeHeader(msg.data);
    const payload = msg.data.subarray(HEADER_SIZE);
    // every message is traced: the event (its fields decoded) is built only for a trace that wants it
    if (this.opts.trace && this.opts.traceCommand?.(h.command) !== false)
      this.emit({
        kind: "recv",
        id: h.id,
        command: commandName(h.command),
        flags: h.flags,
        size: h.size,
        fds: msg.fds.length,
        info: describe(h, payload),
      });
    if ((h.flags & Flags.TYPE_MASK) === Flags.TYPE_REPLY) {
      bag.release();
      this.onReply(s, h, payload, msg.fds.length);
      return;
    }
    let reply: Buffer | undefined;
    try {
      reply = this.dispatch(s, h, payload, bag, msg.ctrunc);
    } catch (err) {
      bag.release();
      const perr =
        err instanceof ProtocolError
          ? err
          : new ProtocolError(Errno.EIO, `internal error: ${(err as Error).stack ?? err}`);
      if (!(err instanceof ProtocolError)) this.log("warn", `${commandName(h.command)}: ${perr.message}`);
      this.stats.refused++;
      this.emit({
        kind: "refused",
        id: h.id,
        command: commandName(h.command),
        errno: errnoName(perr.errno),
        reason: perr.message,
      });
      if (!(h.flags & Flags.NO_REPLY) && this.session === s && s.conn.isOpen)
        this.send(s, encodeErrorReply(h, perr.errno));
      return;
    } finally {
      bag.release();
    }
    if (!(h.flags & Flags.NO_REPLY) && reply && this.session === s && s.conn.isOpen) this.send(s, reply);
  }

  private dispatch(s: Session, h: Header, payload: Buffer, bag: FdBag, ctrunc: boolean): Buffer {
    const type = h.flags & Flags.TYPE_MASK;
    if (type !== Flags.TYPE_COMMAND) fail(Errno.EINVAL, `message type ${type} is neither command nor reply`);
    if (h.flags & ~KNOWN_FLAGS)
      fail(Errno.EINVAL, `unknown header flags 0x${(h.flags & ~KNOWN_FLAGS).toString(16)}`);
    if (h.flags & Flags.ERROR) fail(Errno.EINVAL, "Error flag set on a command");
    if (h.error !== 0) fail(Errno.EINVAL, `error field ${h.error} is reserved in a command`);
    if (ctrunc) fail(Errno.EINVAL, `more fds than the ${MAX_FDS * 4} a message may carry`);
    if (bag.fds.length > 0 && !FD_COMMANDS.has(h.command)) {
      fail(Errno.EINVAL, `${bag.fds.length} fds sent with ${commandName(h.command)}, which takes none`);
    }
    if (bag.fds.length > MAX_FDS) fail(Errno.EINVAL, `${bag.fds.length} fds exceed max_msg_fds ${MAX_FDS}`);
    if (!s.negotiated && h.command !== Command.VERSION)
      fail(Errno.EINVAL, "VERSION must be the first message");
    switch (h.command) {
      case Command.VERSION:
        return this.onVersion(s, h, payload);
      case Command.DMA_MAP:
        return this.onDmaMap(h, payload, bag);
      case Command.DMA_UNMAP:
        return this.onDmaUnmap(h, payload);
      case Command.DEVICE_GET_INFO:
        return deviceInfoReply(h, payload);
      case Command.DEVICE_GET_REGION_INFO:
        return regionInfoReply(h, payload, this.regions);
      case Command.DEVICE_GET_IRQ_INFO:
        return irqInfoReply(h, payload, this.irqs);
      case Command.DEVICE_SET_IRQS: {
        const req = decodeIrqSet(payload);
        this.irqs.setIrqs(req, payload.length, bag.take());
        return encodeReply(h);
      }
      case Command.REGION_READ: {
        const a = decodeRegionAccess(payload, "REGION_READ");
        if (a.data.length !== 0) fail(Errno.EINVAL, `REGION_READ: ${a.data.length} unexpected data bytes`);
        const data = this.regions.read(a);
        return encodeReply(
          h,
          encodeRegionAccess({ offset: a.offset, region: a.region, count: a.count, data }),
        );
      }
      case Command.REGION_WRITE: {
        const a = decodeRegionAccess(payload, "REGION_WRITE");
        if (a.data.length !== a.count)
          fail(Errno.EINVAL, `REGION_WRITE: count ${a.count} but ${a.data.length} data bytes`);
        this.regions.write(a);
        return encodeReply(h, encodeRegionAccess({ offset: a.offset, region: a.region, count: a.count }));
      }
      case Command.REGION_WRITE_MULTI: {
        if (!s.writeMultiple) fail(Errno.EINVAL, "REGION_WRITE_MULTI without negotiating write_multiple");
        const writes = decodeWriteMulti(payload);
        for (const w of writes) this.regions.check(w, "REGION_WRITE_MULTI");
        for (const w of writes) this.regions.write(w);
        const out = Buffer.alloc(8);
        out.writeBigUInt64LE(BigInt(writes.length));
        return encodeReply(h, out);
      }
      case Command.DEVICE_RESET:
        if (payload.length !== 0) fail(Errno.EINVAL, "DEVICE_RESET carries no payload");
        this.resetDevice();
        return encodeReply(h);
      case Command.DMA_READ:
      case Command.DMA_WRITE:
        fail(Errno.EINVAL, `${commandName(h.command)} goes from server to client`);
        break;
      case Command.DEVICE_GET_REGION_IO_FDS:
      case Command.DIRTY_PAGES:
      case Command.DEVICE_FEATURE:
      case Command.MIG_DATA_READ:
      case Command.MIG_DATA_WRITE:
        fail(Errno.ENOTSUP, `${commandName(h.command)} is not supported by this server`);
        break;
    }
    fail(Errno.ENOSYS, `unknown command ${h.command}`);
  }

  // ------------------------------------------------------------------ VERSION (spec "Version")

  private onVersion(s: Session, h: Header, payload: Buffer): Buffer {
    if (s.negotiated) fail(Errno.EINVAL, "VERSION already negotiated");
    const v = decodeVersion(payload);
    if (v.major !== PROTOCOL_MAJOR) {
      // "The server replies with a compatible version ... or closes the connection."
      const reason = `client proposes protocol major ${v.major}, server speaks ${PROTOCOL_MAJOR}`;
      this.send(s, encodeErrorReply(h, Errno.ENOTSUP));
      this.disconnect(s, reason);
      fail(Errno.ENOTSUP, reason);
    }
    const theirs: VersionCaps = v.capabilities ?? {};
    s.clientMaxXfer = theirs.max_data_xfer_size ?? DEFAULT_XFER;
    // Reply: a subset of the proposed capabilities, with the server's limits.
    const caps: Record<string, number | boolean> = {};
    if (theirs.max_msg_fds !== undefined) caps.max_msg_fds = MAX_FDS;
    if (theirs.max_data_xfer_size !== undefined) caps.max_data_xfer_size = this.maxXfer;
    if (theirs.pgsizes !== undefined) caps.pgsizes = 4096;
    if (theirs.max_dma_maps !== undefined) caps.max_dma_maps = Math.min(MAX_DMA_MAPS, theirs.max_dma_maps);
    if (theirs.write_multiple !== undefined) caps.write_multiple = theirs.write_multiple === true;
    s.writeMultiple = caps.write_multiple === true;
    // QEMU receives the reply into its request's buffer: the reply must not be larger.
    const order = ["write_multiple", "max_dma_maps", "pgsizes", "max_msg_fds", "max_data_xfer_size"];
    let body = encodeVersion(PROTOCOL_MAJOR, PROTOCOL_MINOR, JSON.stringify({ capabilities: caps }));
    while (HEADER_SIZE + body.length > h.size && Object.keys(caps).length > 0) {
      const drop = order.find((k) => k in caps) as string;
      if (drop === "write_multiple") s.writeMultiple = false;
      delete caps[drop];
      body = encodeVersion(PROTOCOL_MAJOR, PROTOCOL_MINOR, JSON.stringify({ capabilities: caps }));
    }
    if (HEADER_SIZE + body.length > h.size) body = encodeVersion(PROTOCOL_MAJOR, PROTOCOL_MINOR);
    s.negotiated = true;
    return encodeReply(h, body);
  }

  // ------------------------------------------------------------------ DMA_MAP / DMA_UNMAP

  private onDmaMap(h: Header, payload: Buffer, bag: FdBag): Buffer {
    const req = decodeDmaMap(payload);
    if (req.argsz < 32) fail(Errno.EINVAL, `DMA_MAP: argsz ${req.argsz} < 32`);
    if (bag.fds.length > 1) fail(Errno.EINVAL, `DMA_MAP: ${bag.fds.length} fds, at most 1`);
    const fd = bag.take()[0];
    this.dma.map(req, fd);
    return encodeReply(h);
  }

  private onDmaUnmap(h: Header, payload: Buffer): Buffer {
    const req = decodeDmaUnmap(payload);
    if (req.flags & ~Vfio.DMA_UNMAP_FLAG_ALL) {
      fail(
        req.flags & (Vfio.DMA_UNMAP_FLAG_GET_DIRTY_BITMAP | Vfio.DMA_UNMAP_FLAG_VADDR)
          ? Errno.ENOTSUP
          : Errno.EINVAL,
        `DMA_UNMAP: unsupported flags 0x${req.flags.toString(16)}`,
      );
    }
    if (req.flags & Vfio.DMA_UNMAP_FLAG_ALL) {
      if (req.address !== 0n || req.size !== 0n)
        fail(Errno.EINVAL, "DMA_UNMAP: ALL needs address and size 0");
      this.dma.unmapAll();
    } else {
      this.dma.unmap(req.address, req.size);
    }
    // "The server responds with the original DMA entry in the request" (if argsz allows).
    return encodeReply(h, req.argsz >= DMA_UNMAP_SIZE ? encodeDmaUnmap(req) : undefined);
  }

  private resetDevice(): void {
    this.config.reset();
    this.irqs.reset();
    this.device.reset();
    this.emit({ kind: "device", event: "reset" });
  }

  // ------------------------------------------------------------------ server -> client DMA messages

  private dmaMessage(
    command: number,
    address: bigint,
    count: number,
    data?: Uint8Array,
  ): Promise<Uint8Array> {
    const s = this.session;
    if (!s?.conn.isOpen) return Promise.reject(new DmaError(address, count, "refused: no client connected"));
    const id = s.nextId;
    s.nextId = (s.nextId + 1) & 0xffff;
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        s.pending.delete(id);
        reject(
          new DmaError(address, count, `${commandName(command)} timed out after ${this.dmaTimeoutMs} ms`),
        );
      }, this.dmaTimeoutMs);
      s.pending.set(id, { command, count, address, resolve, reject, timer });
      const payload = encodeDmaRw(address, count, command === Command.DMA_WRITE ? data : undefined);
      this.send(s, encodeMessage({ id, command, flags: Flags.TYPE_COMMAND, error: 0 }, payload), {
        address: `0x${address.toString(16)}`,
        count,
      });
    });
  }

  private onReply(s: Session, h: Header, payload: Buffer, fds: number): void {
    const p = s.pending.get(h.id);
    if (!p || p.command !== h.command) {
      this.emit({ kind: "note", text: `unexpected reply id ${h.id} ${commandName(h.command)}: ignored` });
      return;
    }
    s.pending.delete(h.id);
    clearTimeout(p.timer);
    if (fds > 0) this.emit({ kind: "note", text: `reply id ${h.id} carried ${fds} fds: closed` });
    if (h.flags & Flags.ERROR) {
      p.reject(
        new DmaError(
          p.address,
          p.count,
          `${commandName(h.command)} failed in the client: ${errnoName(h.error)}`,
        ),
      );
      return;
    }
    if (p.command === Command.DMA_WRITE) {
      p.resolve(new Uint8Array(0));
      return;
    }
    try {
      const r = decodeDmaRw(payload, true);
      if (r.address !== p.address || r.count !== p.count) {
        throw new ProtocolError(Errno.EINVAL, `reply for 0x${r.address.toString(16)}+${r.count}`);
      }
      p.resolve(Buffer.from(r.data));
    } catch (err) {
      p.reject(new DmaError(p.address, p.count, `malformed DMA_READ reply: ${(err as Error).message}`));
    }
  }
}

/** Starts a server listening on `socketPath` for `device`. Close it to remove the socket and every fd. */
export async function startServer(opts: ServerOptions): Promise<VfioUserServer> {
  const server = new VfioUserServer(opts);
  server.listen();
  return server;
}
