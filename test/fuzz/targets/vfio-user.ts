/**
 * Fuzz target: the vfio-user server's message decoding and handling (qemu/vfio-user), with the
 * test device behind it, as a client (QEMU, steered by the guest) would reach it. The server runs
 * in this process on a fake connection, so one input costs no socket or thread; its framing
 * follows recv-worker.mjs (the header's size field, 16..maxMessage, else the connection is lost).
 *
 * Input: records of [spec u8][length u16 LE][length bytes]. The bytes are one message whose size
 * field is set to the length, unless spec bit 6 keeps it (then the record is framed by it, as the
 * stream would be). Spec bits 0-2 give how many fds arrive with it (7 means 17, over the limit),
 * bit 3 makes them eventfds instead of 64 KiB memfds, bit 4 alternates the two kinds, bit 5 marks
 * the control data truncated (MSG_CTRUNC).
 *
 * Oracles: no exception escapes the server; every device DMA the server lets through lies inside
 * a region the client mapped (as its replies said) and still maps; after the disconnect every fd
 * the input passed is closed.
 */
import { TestDevice } from "../../../qemu/testdev/device.ts";
import { QEMU_CAPS } from "../../../qemu/vfio-user/client.ts";
import { closeFd, eventFd, memfdCreate } from "../../../qemu/vfio-user/libc.ts";
import {
  Command,
  decodeHeader,
  encodeDmaMap,
  encodeDmaUnmap,
  encodeIrqSet,
  encodeMessage,
  encodeRegionAccess,
  encodeRegionInfo,
  encodeVersion,
  encodeWriteMulti,
  Flags,
  HEADER_SIZE,
  Vfio,
} from "../../../qemu/vfio-user/protocol.ts";
import { type TraceEvent, VfioUserServer } from "../../../qemu/vfio-user/server.ts";
import type { Connection, IncomingMessage } from "../../../qemu/vfio-user/transport.ts";
import { ByteReader } from "../bytes.ts";
import { fdsLeaked, markEventFd, openFds } from "../fds.ts";
import type { Findings, FuzzTarget } from "../target.ts";

const MAX_XFER = 64 << 10;
const MAX_MESSAGE = HEADER_SIZE + MAX_XFER + 4096; // as server.listen() sets it
const MEMFD_SIZE = 0x10000;

/** The server's connection handlers (private: the transport calls them). */
interface ServerInternals {
  onConnect(conn: Connection): void;
  onMessage(conn: Connection, msg: IncomingMessage): void;
  onDisconnect(conn: Connection, reason: string): void;
}

class FakeConnection {
  isOpen = true;
  localCloseReason: string | undefined;
  readonly sent: Buffer[] = [];
  send(data: Uint8Array): void {
    if (this.isOpen) this.sent.push(Buffer.from(data));
  }
  shutdown(reason: string): void {
    this.isOpen = false;
    this.localCloseReason ??= reason;
  }
}

interface Region {
  address: bigint;
  size: bigint;
  flags: number;
}

function makeFds(spec: number): number[] {
  const code = spec & 7;
  const n = code === 7 ? 17 : code;
  return Array.from({ length: n }, (_, i) => {
    const event = spec & 0x10 ? i % 2 === 0 : (spec & 8) !== 0;
    if (!event) return memfdCreate("fuzz", MEMFD_SIZE);
    const fd = eventFd();
    markEventFd(fd);
    return fd;
  });
}

/** Splits a record into the messages the receive worker would frame, or says why the stream broke. */
function frame(spec: number, bytes: Uint8Array): { messages: Buffer[]; broken?: string } {
  const buf = Buffer.from(bytes);
  if (!(spec & 0x40)) {
    if (buf.length < HEADER_SIZE) return { messages: [], broken: "peer closed inside a header" };
    if (buf.length > MAX_MESSAGE) return { messages: [], broken: "message too large" };
    buf.writeUInt32LE(buf.length, 4);
    return { messages: [buf] };
  }
  const messages: Buffer[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < HEADER_SIZE) return { messages, broken: "peer closed inside a header" };
    const size = buf.readUInt32LE(at + 4);
    if (size < HEADER_SIZE || size > MAX_MESSAGE) return { messages, broken: `message size ${size}` };
    if (at + size > buf.length) return { messages, broken: "peer closed inside a message" };
    messages.push(buf.subarray(at, at + size));
    at += size;
  }
  return { messages };
}

export async function runVfioUser(input: Uint8Array): Promise<Findings> {
  const outOfBounds: string[] = [];
  const fdsBefore = openFds();
  // what the client mapped, as the server's replies told it
  let mapped: Region[] = [];
  const checkAccess = (e: Extract<TraceEvent, { kind: "dma" }>) => {
    const need = e.access === "read" ? Vfio.DMA_MAP_FLAG_READ : Vfio.DMA_MAP_FLAG_WRITE;
    let cur = e.address;
    const end = e.address + BigInt(e.length);
    while (cur < end) {
      const r = mapped.find((x) => cur >= x.address && cur < x.address + x.size && (x.flags & need) === need);
      if (!r) {
        outOfBounds.push(
          `${e.access} 0x${e.address.toString(16)}+${e.length}: 0x${cur.toString(16)} not mapped`,
        );
        return;
      }
      cur = r.address + r.size;
    }
  };
  const server = new VfioUserServer({
    socketPath: "/nonexistent/fuzz.sock",
    device: new TestDevice(),
    maxDataXfer: MAX_XFER,
    dmaTimeoutMs: 60_000,
    log: () => {},
    trace: (e) => {
      if (e.kind === "dma") checkAccess(e);
    },
  });
  const internals = server as unknown as ServerInternals;
  const conn = new FakeConnection();
  const asConn = conn as unknown as Connection;
  internals.onConnect(asConn);
  const r = new ByteReader(input);
  try {
    while (r.left > 0 && conn.isOpen) {
      const spec = r.u8();
      const { messages, broken } = frame(spec, r.bytes(r.u16()));
      let fds = makeFds(spec);
      for (const data of messages) {
        const sentBefore = conn.sent.length;
        internals.onMessage(asConn, { data, fds, ctrunc: (spec & 0x20) !== 0 });
        fds = [];
        mapped = afterMessage(data, conn.sent.slice(sentBefore), mapped, server);
        // let the device's DMA (started by a doorbell) run
        for (let i = 0; i < 4; i++) await Promise.resolve();
        if (!conn.isOpen) break;
      }
      if (fds.length > 0) {
        // fds that arrived with no whole message: the transport closes them ("closed" with fds)
        for (const fd of fds) closeFd(fd);
      }
      if (broken) conn.shutdown(broken);
    }
    await new Promise((res) => setImmediate(res));
  } finally {
    internals.onDisconnect(asConn, conn.localCloseReason ?? "peer closed");
    mapped = [];
  }
  await new Promise((res) => setImmediate(res));
  return { outOfBounds, fdLeaks: await fdsLeaked(fdsBefore) };
}

/** Updates the oracle's map table from a DMA_MAP/UNMAP and the replies it got. */
function afterMessage(data: Buffer, replies: Buffer[], mapped: Region[], server: VfioUserServer): Region[] {
  const h = decodeHeader(data);
  if ((h.flags & Flags.TYPE_MASK) !== Flags.TYPE_COMMAND) return mapped;
  if (h.command !== Command.DMA_MAP && h.command !== Command.DMA_UNMAP) return mapped;
  const reply = replies.find(
    (m) => m.readUInt16LE(0) === h.id && (m.readUInt32LE(8) & Flags.TYPE_MASK) === 1,
  );
  let ok: boolean;
  if (reply) ok = (reply.readUInt32LE(8) & Flags.ERROR) === 0;
  else {
    // NO_REPLY: whether it took effect can only be seen in the server's table
    if (h.flags & Flags.NO_REPLY && data.length >= HEADER_SIZE + (h.command === Command.DMA_MAP ? 32 : 24)) {
      const p = data.subarray(HEADER_SIZE);
      const address = p.readBigUInt64LE(h.command === Command.DMA_MAP ? 16 : 8);
      const size = p.readBigUInt64LE(h.command === Command.DMA_MAP ? 24 : 16);
      const present = server.dma.list().some((x) => x.address === address && x.size === size);
      ok = h.command === Command.DMA_MAP ? present : !present;
    } else ok = false;
  }
  if (!ok) return mapped;
  const p = data.subarray(HEADER_SIZE);
  if (h.command === Command.DMA_MAP) {
    return [
      ...mapped,
      { flags: p.readUInt32LE(4), address: p.readBigUInt64LE(16), size: p.readBigUInt64LE(24) },
    ];
  }
  const flags = p.readUInt32LE(4);
  if (flags & Vfio.DMA_UNMAP_FLAG_ALL) return [];
  const address = p.readBigUInt64LE(8);
  const size = p.readBigUInt64LE(16);
  return mapped.filter((x) => !(x.address === address && x.size === size));
}

// ---- seeds -------------------------------------------------------------------------------------

function record(spec: number, msg: Buffer): Buffer {
  const head = Buffer.alloc(3);
  head[0] = spec;
  head.writeUInt16LE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

let seedId = 1;
function cmd(command: number, payload?: Uint8Array, flags = 0): Buffer {
  return encodeMessage({ id: seedId++, command, flags, error: 0 }, payload);
}

const version = () => cmd(Command.VERSION, encodeVersion(0, 0, JSON.stringify(QEMU_CAPS)));
const busMaster = () =>
  cmd(
    Command.REGION_WRITE,
    encodeRegionAccess({ offset: 4n, region: 7, count: 2, data: Buffer.from([6, 0]) }),
  );
const reg32 = (offset: number, value: number) => {
  const data = Buffer.alloc(4);
  data.writeUInt32LE(value >>> 0);
  return cmd(Command.REGION_WRITE, encodeRegionAccess({ offset: BigInt(offset), region: 0, count: 4, data }));
};

function seeds(): Uint8Array[] {
  const fill = (dst: number, op: number) => [
    record(0, reg32(0x18, dst)),
    record(0, reg32(0x1c, 0)),
    record(0, reg32(0x20, 256)),
    record(0, reg32(0x10, 0x100000)),
    record(0, reg32(0x24, 0x5a5a5a5a)),
    record(0, reg32(0x28, op | 0x100)),
    record(0, cmd(Command.REGION_READ, encodeRegionAccess({ offset: 8n, region: 0, count: 4 }))),
  ];
  const map = (address: bigint, withFd: boolean) =>
    record(
      withFd ? 1 : 0,
      cmd(Command.DMA_MAP, encodeDmaMap({ flags: 3, offset: 0n, address, size: 0x10000n })),
    );
  const irqs = record(
    0x09,
    cmd(Command.DEVICE_SET_IRQS, encodeIrqSet({ flags: 0x24, index: 2, start: 0, count: 1 })),
  );
  return [
    Buffer.concat([record(0, version())]),
    Buffer.concat([
      record(0, version()),
      record(0, busMaster()),
      map(0x100000n, true),
      map(0x200000n, false),
      irqs,
      ...fill(0x100000, 2),
      ...fill(0x200000, 1),
      record(0, cmd(Command.DMA_UNMAP, encodeDmaUnmap({ flags: 0, address: 0x100000n, size: 0x10000n }))),
      record(0, cmd(Command.DEVICE_RESET)),
    ]),
    Buffer.concat([
      record(0, version()),
      record(0, cmd(Command.DEVICE_GET_INFO, Buffer.from([16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))),
      record(
        0,
        cmd(
          Command.DEVICE_GET_REGION_INFO,
          encodeRegionInfo({ argsz: 32, flags: 0, index: 2, capOffset: 0, size: 0n, offset: 0n }),
        ),
      ),
      record(0, cmd(Command.REGION_READ, encodeRegionAccess({ offset: 0n, region: 7, count: 64 }))),
      record(
        0,
        cmd(
          Command.REGION_WRITE_MULTI,
          encodeWriteMulti([{ offset: 4n, region: 0, data: Buffer.from([1, 2, 3, 4]) }]),
        ),
      ),
      record(0x40, Buffer.concat([busMaster(), busMaster()])),
    ]),
  ];
}

export const vfioUserTarget: FuzzTarget = {
  name: "vfio-user",
  watch: /\/qemu\/(vfio-user|testdev)\//,
  maxLen: 4096,
  timeoutMs: 5000,
  seeds,
  run: runVfioUser,
};
