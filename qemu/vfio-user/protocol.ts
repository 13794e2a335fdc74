/**
 * vfio-user message codec. Layouts follow QEMU's docs/interop/vfio-user.rst ("the spec" below,
 * section names quoted) and, where QEMU 10.2's client differs from the text, what the client
 * actually sends (noted at each place). All fields are little-endian (host order on x86_64).
 * Pure functions over Buffers: no sockets, no device knowledge.
 */

/** spec "Commands" */
export const Command = {
  VERSION: 1,
  DMA_MAP: 2,
  DMA_UNMAP: 3,
  DEVICE_GET_INFO: 4,
  DEVICE_GET_REGION_INFO: 5,
  DEVICE_GET_REGION_IO_FDS: 6,
  DEVICE_GET_IRQ_INFO: 7,
  DEVICE_SET_IRQS: 8,
  REGION_READ: 9,
  REGION_WRITE: 10,
  DMA_READ: 11,
  DMA_WRITE: 12,
  DEVICE_RESET: 13,
  DIRTY_PAGES: 14,
  REGION_WRITE_MULTI: 15,
  DEVICE_FEATURE: 16,
  MIG_DATA_READ: 17,
  MIG_DATA_WRITE: 18,
} as const;

const commandNames = new Map<number, string>(Object.entries(Command).map(([k, v]) => [v, k]));

export function commandName(cmd: number): string {
  return commandNames.get(cmd) ?? `UNKNOWN(${cmd})`;
}

/** spec "Header": flags bits 0-3 type, 4 No_reply, 5 Error. */
export const Flags = {
  TYPE_MASK: 0xf,
  TYPE_COMMAND: 0x0,
  TYPE_REPLY: 0x1,
  NO_REPLY: 0x10,
  ERROR: 0x20,
} as const;
export const KNOWN_FLAGS = Flags.TYPE_MASK | Flags.NO_REPLY | Flags.ERROR;

export const HEADER_SIZE = 16;

/** Linux errno values used in replies (the spec's Error field is "a UNIX errno value"). */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  EIO: 5,
  E2BIG: 7,
  EBADF: 9,
  ENOMEM: 12,
  EFAULT: 14,
  EBUSY: 16,
  EEXIST: 17,
  ENODEV: 19,
  EINVAL: 22,
  ENOSPC: 28,
  ERANGE: 34,
  ENOSYS: 38,
  ENOTSUP: 95,
  ETIMEDOUT: 110,
} as const;

const errnoNames = new Map<number, string>(Object.entries(Errno).map(([k, v]) => [v, k]));
export function errnoName(e: number): string {
  return errnoNames.get(e) ?? `errno ${e}`;
}

/** <linux/vfio.h> constants the messages reuse. */
export const Vfio = {
  DEVICE_FLAGS_RESET: 1 << 0,
  DEVICE_FLAGS_PCI: 1 << 1,
  REGION_INFO_FLAG_READ: 1 << 0,
  REGION_INFO_FLAG_WRITE: 1 << 1,
  REGION_INFO_FLAG_MMAP: 1 << 2,
  REGION_INFO_FLAG_CAPS: 1 << 3,
  IRQ_INFO_EVENTFD: 1 << 0,
  IRQ_INFO_MASKABLE: 1 << 1,
  IRQ_INFO_AUTOMASKED: 1 << 2,
  IRQ_INFO_NORESIZE: 1 << 3,
  IRQ_SET_DATA_NONE: 1 << 0,
  IRQ_SET_DATA_BOOL: 1 << 1,
  IRQ_SET_DATA_EVENTFD: 1 << 2,
  IRQ_SET_ACTION_MASK: 1 << 3,
  IRQ_SET_ACTION_UNMASK: 1 << 4,
  IRQ_SET_ACTION_TRIGGER: 1 << 5,
  IRQ_SET_DATA_TYPE_MASK: 0x7,
  IRQ_SET_ACTION_TYPE_MASK: 0x38,
  DMA_MAP_FLAG_READ: 1 << 0,
  DMA_MAP_FLAG_WRITE: 1 << 1,
  DMA_UNMAP_FLAG_GET_DIRTY_BITMAP: 1 << 0,
  DMA_UNMAP_FLAG_ALL: 1 << 1,
  DMA_UNMAP_FLAG_VADDR: 1 << 2,
  PCI_BAR0_REGION_INDEX: 0,
  PCI_ROM_REGION_INDEX: 6,
  PCI_CONFIG_REGION_INDEX: 7,
  PCI_VGA_REGION_INDEX: 8,
  PCI_NUM_REGIONS: 9,
  PCI_INTX_IRQ_INDEX: 0,
  PCI_MSI_IRQ_INDEX: 1,
  PCI_MSIX_IRQ_INDEX: 2,
  PCI_ERR_IRQ_INDEX: 3,
  PCI_REQ_IRQ_INDEX: 4,
  PCI_NUM_IRQS: 5,
} as const;

/** A request the server refuses: the errno goes into an error reply, the reason into the log. */
export class ProtocolError extends Error {
  constructor(
    readonly errno: number,
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

export function fail(errno: number, message: string): never {
  throw new ProtocolError(errno, message);
}

export interface Header {
  id: number;
  command: number;
  size: number;
  flags: number;
  error: number;
}

export function decodeHeader(buf: Uint8Array): Header {
  if (buf.length < HEADER_SIZE)
    fail(Errno.EINVAL, `message of ${buf.length} bytes is shorter than the header`);
  const dv = view(buf);
  return {
    id: dv.getUint16(0, true),
    command: dv.getUint16(2, true),
    size: dv.getUint32(4, true),
    flags: dv.getUint32(8, true),
    error: dv.getUint32(12, true),
  };
}

/** A whole message: header (size computed) plus payload. */
export function encodeMessage(h: Omit<Header, "size">, payload: Uint8Array = EMPTY): Buffer {
  const out = Buffer.alloc(HEADER_SIZE + payload.length);
  out.writeUInt16LE(h.id & 0xffff, 0);
  out.writeUInt16LE(h.command & 0xffff, 2);
  out.writeUInt32LE(out.length, 4);
  out.writeUInt32LE(h.flags >>> 0, 8);
  out.writeUInt32LE(h.error >>> 0, 12);
  out.set(payload, HEADER_SIZE);
  return out;
}

export function encodeReply(request: Header, payload: Uint8Array = EMPTY): Buffer {
  return encodeMessage(
    { id: request.id, command: request.command, flags: Flags.TYPE_REPLY, error: 0 },
    payload,
  );
}

/** spec "Header": "If an error occurs, the reply message must only include the reply header." */
export function encodeErrorReply(request: Header, errno: number): Buffer {
  return encodeMessage({
    id: request.id,
    command: request.command,
    flags: Flags.TYPE_REPLY | Flags.ERROR,
    error: errno,
  });
}

const EMPTY = new Uint8Array(0);

function view(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

function need(payload: Uint8Array, size: number, what: string, exact = true): DataView {
  if (exact ? payload.length !== size : payload.length < size) {
    fail(
      Errno.EINVAL,
      `${what}: payload is ${payload.length} bytes, expected ${exact ? "" : "at least "}${size}`,
    );
  }
  return view(payload);
}

// ---------------------------------------------------------------- VFIO_USER_VERSION (spec "Version")

export interface VersionCaps {
  max_msg_fds?: number;
  max_data_xfer_size?: number;
  max_dma_maps?: number;
  pgsizes?: number;
  twin_socket?: { supported?: boolean; fd_index?: number };
  write_multiple?: boolean;
  /** QEMU 10.2 sends this (not in the spec text); kept opaque. */
  migration?: Record<string, unknown>;
}

export interface VersionMessage {
  major: number;
  minor: number;
  /** the parsed "capabilities" object; undefined when no JSON was sent */
  capabilities: VersionCaps | undefined;
  /** the raw JSON text, if any */
  json: string | undefined;
}

const capValidators: Record<string, (v: unknown) => boolean> = {
  max_msg_fds: (v) => Number.isSafeInteger(v) && (v as number) >= 0,
  max_data_xfer_size: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  max_dma_maps: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  pgsizes: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  write_multiple: (v) => typeof v === "boolean",
  twin_socket: (v) => typeof v === "object" && v !== null && !Array.isArray(v),
  migration: (v) => typeof v === "object" && v !== null && !Array.isArray(v),
};

/** Request and reply share the layout: major u16, minor u16, optional NUL-terminated JSON. */
export function decodeVersion(payload: Uint8Array): VersionMessage {
  const dv = need(payload, 4, "VERSION", false);
  const major = dv.getUint16(0, true);
  const minor = dv.getUint16(2, true);
  if (payload.length === 4) return { major, minor, capabilities: undefined, json: undefined };
  const data = payload.subarray(4);
  const nul = data.indexOf(0);
  if (nul !== data.length - 1) fail(Errno.EINVAL, "VERSION: version data must be one NUL-terminated string");
  const json = Buffer.from(data.subarray(0, nul)).toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    fail(Errno.EINVAL, "VERSION: version data is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    fail(Errno.EINVAL, "VERSION: version data is not a JSON object");
  }
  const caps = (parsed as Record<string, unknown>).capabilities;
  if (caps === undefined) return { major, minor, capabilities: undefined, json };
  if (typeof caps !== "object" || caps === null || Array.isArray(caps)) {
    fail(Errno.EINVAL, "VERSION: capabilities is not an object");
  }
  for (const [k, v] of Object.entries(caps)) {
    const ok = capValidators[k];
    if (ok && !ok(v)) fail(Errno.EINVAL, `VERSION: capability ${k} has a bad value ${JSON.stringify(v)}`);
  }
  const tw = (caps as VersionCaps).twin_socket;
  if (
    tw &&
    ((tw.supported !== undefined && typeof tw.supported !== "boolean") || tw.fd_index !== undefined)
  ) {
    // fd_index is "only valid in the reply message"
    fail(Errno.EINVAL, "VERSION: twin_socket is malformed for a request");
  }
  return { major, minor, capabilities: caps as VersionCaps, json };
}

export function encodeVersion(major: number, minor: number, json?: string): Buffer {
  const text = json === undefined ? undefined : Buffer.from(`${json}\0`, "utf8");
  const out = Buffer.alloc(4 + (text?.length ?? 0));
  out.writeUInt16LE(major, 0);
  out.writeUInt16LE(minor, 2);
  if (text) text.copy(out, 4);
  return out;
}

// ---------------------------------------------------------------- fixed-layout structs

/**
 * A struct's fixed part in wire order: each field a little-endian u32 (a number) or u64 (a
 * bigint), packed one after the other from offset 0.
 */
type Layout<T> = readonly { [K in keyof T]: readonly [K, T[K] extends bigint ? "u64" : "u32"] }[keyof T][];

function readFields<T>(dv: DataView, layout: Layout<T>): T {
  const out: Record<string, number | bigint> = {};
  let at = 0;
  for (const [name, kind] of layout) {
    out[name as string] = kind === "u64" ? dv.getBigUint64(at, true) : dv.getUint32(at, true);
    at += kind === "u64" ? 8 : 4;
  }
  return out as T;
}

/** The fixed part written at the start of a buffer of `size` bytes (the rest, if any, zero). */
function writeFields<T>(size: number, layout: Layout<T>, value: T): Buffer {
  const out = Buffer.alloc(size);
  let at = 0;
  for (const [name, kind] of layout) {
    const v = value[name];
    if (kind === "u64") out.writeBigUInt64LE(v as bigint, at);
    else out.writeUInt32LE(v as number, at);
    at += kind === "u64" ? 8 : 4;
  }
  return out;
}

// ---------------------------------------------------------------- DMA_MAP / DMA_UNMAP

/** spec "VFIO_USER_DMA_MAP": argsz, flags, offset, address, size (32 bytes). */
export interface DmaMapRequest {
  argsz: number;
  flags: number;
  offset: bigint;
  address: bigint;
  size: bigint;
}

export const DMA_MAP_SIZE = 32;
const DMA_MAP_LAYOUT: Layout<DmaMapRequest> = [
  ["argsz", "u32"],
  ["flags", "u32"],
  ["offset", "u64"],
  ["address", "u64"],
  ["size", "u64"],
];

export function decodeDmaMap(payload: Uint8Array): DmaMapRequest {
  return readFields(need(payload, DMA_MAP_SIZE, "DMA_MAP"), DMA_MAP_LAYOUT);
}

export function encodeDmaMap(r: Omit<DmaMapRequest, "argsz"> & { argsz?: number }): Buffer {
  return writeFields(DMA_MAP_SIZE, DMA_MAP_LAYOUT, { ...r, argsz: r.argsz ?? DMA_MAP_SIZE });
}

/** spec "VFIO_USER_DMA_UNMAP": argsz, flags, address, size (24 bytes); the reply echoes it. */
export interface DmaUnmapRequest {
  argsz: number;
  flags: number;
  address: bigint;
  size: bigint;
}

export const DMA_UNMAP_SIZE = 24;
const DMA_UNMAP_LAYOUT: Layout<DmaUnmapRequest> = [
  ["argsz", "u32"],
  ["flags", "u32"],
  ["address", "u64"],
  ["size", "u64"],
];

export function decodeDmaUnmap(payload: Uint8Array): DmaUnmapRequest {
  return readFields(need(payload, DMA_UNMAP_SIZE, "DMA_UNMAP"), DMA_UNMAP_LAYOUT);
}

export function encodeDmaUnmap(r: Omit<DmaUnmapRequest, "argsz"> & { argsz?: number }): Buffer {
  return writeFields(DMA_UNMAP_SIZE, DMA_UNMAP_LAYOUT, { ...r, argsz: r.argsz ?? DMA_UNMAP_SIZE });
}

// ---------------------------------------------------------------- DEVICE_GET_INFO

/** spec "VFIO_USER_DEVICE_GET_INFO": argsz, flags, num_regions, num_irqs (16 bytes). */
export interface DeviceInfo {
  argsz: number;
  flags: number;
  numRegions: number;
  numIrqs: number;
}

export const DEVICE_INFO_SIZE = 16;
const DEVICE_INFO_LAYOUT: Layout<DeviceInfo> = [
  ["argsz", "u32"],
  ["flags", "u32"],
  ["numRegions", "u32"],
  ["numIrqs", "u32"],
];

export function decodeDeviceInfo(payload: Uint8Array): DeviceInfo {
  return readFields(need(payload, DEVICE_INFO_SIZE, "DEVICE_GET_INFO"), DEVICE_INFO_LAYOUT);
}

export function encodeDeviceInfo(i: DeviceInfo): Buffer {
  return writeFields(DEVICE_INFO_SIZE, DEVICE_INFO_LAYOUT, i);
}

// ---------------------------------------------------------------- DEVICE_GET_REGION_INFO

/** spec "VFIO_USER_DEVICE_GET_REGION_INFO": argsz, flags, index, cap_offset, size, offset (32 bytes). */
export interface RegionInfo {
  argsz: number;
  flags: number;
  index: number;
  capOffset: number;
  size: bigint;
  offset: bigint;
}

export const REGION_INFO_SIZE = 32;
const REGION_INFO_LAYOUT: Layout<RegionInfo> = [
  ["argsz", "u32"],
  ["flags", "u32"],
  ["index", "u32"],
  ["capOffset", "u32"],
  ["size", "u64"],
  ["offset", "u64"],
];

export function decodeRegionInfo(payload: Uint8Array, exact = true): RegionInfo {
  return readFields(need(payload, REGION_INFO_SIZE, "DEVICE_GET_REGION_INFO", exact), REGION_INFO_LAYOUT);
}

export function encodeRegionInfo(r: RegionInfo): Buffer {
  return writeFields(REGION_INFO_SIZE, REGION_INFO_LAYOUT, r);
}

// ---------------------------------------------------------------- DEVICE_GET_IRQ_INFO

/** spec "VFIO_USER_DEVICE_GET_IRQ_INFO": argsz, flags, index, count (16 bytes). */
export interface IrqInfo {
  argsz: number;
  flags: number;
  index: number;
  count: number;
}

export const IRQ_INFO_SIZE = 16;
const IRQ_INFO_LAYOUT: Layout<IrqInfo> = [
  ["argsz", "u32"],
  ["flags", "u32"],
  ["index", "u32"],
  ["count", "u32"],
];

export function decodeIrqInfo(payload: Uint8Array): IrqInfo {
  return readFields(need(payload, IRQ_INFO_SIZE, "DEVICE_GET_IRQ_INFO"), IRQ_INFO_LAYOUT);
}

export function encodeIrqInfo(i: IrqInfo): Buffer {
  return writeFields(IRQ_INFO_SIZE, IRQ_INFO_LAYOUT, i);
}

// ---------------------------------------------------------------- DEVICE_SET_IRQS

/** spec "VFIO_USER_DEVICE_SET_IRQS": argsz, flags, index, start, count, then data (bools). */
export interface IrqSet {
  argsz: number;
  flags: number;
  index: number;
  start: number;
  count: number;
  data: Uint8Array;
}

export const IRQ_SET_SIZE = 20;
const IRQ_SET_LAYOUT: Layout<Omit<IrqSet, "data">> = [
  ["argsz", "u32"],
  ["flags", "u32"],
  ["index", "u32"],
  ["start", "u32"],
  ["count", "u32"],
];

export function decodeIrqSet(payload: Uint8Array): IrqSet {
  const fixed = readFields(need(payload, IRQ_SET_SIZE, "DEVICE_SET_IRQS", false), IRQ_SET_LAYOUT);
  return { ...fixed, data: payload.subarray(IRQ_SET_SIZE) };
}

export function encodeIrqSet(
  s: Omit<IrqSet, "argsz" | "data"> & { argsz?: number; data?: Uint8Array },
): Buffer {
  const data = s.data ?? EMPTY;
  const size = IRQ_SET_SIZE + data.length;
  const out = writeFields(size, IRQ_SET_LAYOUT, { ...s, argsz: s.argsz ?? size });
  out.set(data, IRQ_SET_SIZE);
  return out;
}

// ---------------------------------------------------------------- REGION_READ / REGION_WRITE

/** spec "VFIO_USER_REGION_READ/WRITE": offset u64, region u32, count u32, then data. */
export interface RegionAccess {
  offset: bigint;
  region: number;
  count: number;
  data: Uint8Array;
}

export const REGION_ACCESS_SIZE = 16;
const REGION_ACCESS_LAYOUT: Layout<Omit<RegionAccess, "data">> = [
  ["offset", "u64"],
  ["region", "u32"],
  ["count", "u32"],
];

export function decodeRegionAccess(payload: Uint8Array, what: string): RegionAccess {
  const fixed = readFields(need(payload, REGION_ACCESS_SIZE, what, false), REGION_ACCESS_LAYOUT);
  return { ...fixed, data: payload.subarray(REGION_ACCESS_SIZE) };
}

export function encodeRegionAccess(a: {
  offset: bigint;
  region: number;
  count: number;
  data?: Uint8Array;
}): Buffer {
  const data = a.data ?? EMPTY;
  const out = writeFields(REGION_ACCESS_SIZE + data.length, REGION_ACCESS_LAYOUT, a);
  out.set(data, REGION_ACCESS_SIZE);
  return out;
}

// ---------------------------------------------------------------- REGION_WRITE_MULTI

/** spec "VFIO_USER_REGION_WRITE_MULTI": wr_cnt u64, then wr_cnt writes of 24 bytes each (offset, region, count, data[8]). */
export const WRITE_MULTI_ENTRY_SIZE = 24;
export const WRITE_MULTI_MAX = 200; // QEMU's VFIO_USER_MULTI_MAX

export function decodeWriteMulti(payload: Uint8Array): RegionAccess[] {
  const dv = need(payload, 8, "REGION_WRITE_MULTI", false);
  const n = dv.getBigUint64(0, true);
  if (n === 0n || n > BigInt(WRITE_MULTI_MAX))
    fail(Errno.EINVAL, `REGION_WRITE_MULTI: wr_cnt ${n} outside 1..${WRITE_MULTI_MAX}`);
  const count = Number(n);
  if (payload.length !== 8 + count * WRITE_MULTI_ENTRY_SIZE) {
    fail(Errno.EINVAL, `REGION_WRITE_MULTI: ${payload.length} bytes do not hold ${count} writes`);
  }
  const out: RegionAccess[] = [];
  for (let i = 0; i < count; i++) {
    const base = 8 + i * WRITE_MULTI_ENTRY_SIZE;
    const c = dv.getUint32(base + 12, true);
    if (c === 0 || c > 8) fail(Errno.EINVAL, `REGION_WRITE_MULTI: write ${i} has count ${c} (1..8)`);
    out.push({
      offset: dv.getBigUint64(base, true),
      region: dv.getUint32(base + 8, true),
      count: c,
      data: payload.subarray(base + 16, base + 16 + c),
    });
  }
  return out;
}

export function encodeWriteMulti(
  writes: readonly { offset: bigint; region: number; data: Uint8Array }[],
): Buffer {
  const out = Buffer.alloc(8 + writes.length * WRITE_MULTI_ENTRY_SIZE);
  out.writeBigUInt64LE(BigInt(writes.length), 0);
  writes.forEach((w, i) => {
    const base = 8 + i * WRITE_MULTI_ENTRY_SIZE;
    out.writeBigUInt64LE(w.offset, base);
    out.writeUInt32LE(w.region, base + 8);
    out.writeUInt32LE(w.data.length, base + 12);
    out.set(w.data.subarray(0, 8), base + 16);
  });
  return out;
}

// ---------------------------------------------------------------- DMA_READ / DMA_WRITE (server -> client)

/**
 * QEMU 10.2 (hw/vfio-user/protocol.h VFIOUserDMARW, pci.c vfio_user_dma_read/write) differs from
 * spec "VFIO_USER_DMA_READ": after the header come offset u64 and count u32 (not u64); data starts
 * right after count (message offset 28) and the struct is padded to 32, so a message is
 * 32 + count bytes with 4 unused bytes at the end. QEMU rejects requests shorter than 32 bytes.
 * The DMA_READ reply has the same layout with the data; the DMA_WRITE reply is a bare header.
 */
export const DMA_RW_SIZE = 16; // payload bytes before (padded) data: offset 8 + count 4 + pad 4
export const DMA_RW_DATA = 12; // data offset within the payload

export function encodeDmaRw(address: bigint, count: number, data?: Uint8Array): Buffer {
  const out = Buffer.alloc(DMA_RW_SIZE + (data ? count : 0));
  out.writeBigUInt64LE(address, 0);
  out.writeUInt32LE(count, 8);
  if (data) out.set(data.subarray(0, count), DMA_RW_DATA);
  return out;
}

export interface DmaRw {
  address: bigint;
  count: number;
  data: Uint8Array;
}

/** Decodes a DMA_READ/DMA_WRITE payload (request, or DMA_READ reply) in QEMU's layout. */
export function decodeDmaRw(payload: Uint8Array, withData: boolean): DmaRw {
  const dv = need(payload, DMA_RW_SIZE, "DMA_READ/WRITE", false);
  const address = dv.getBigUint64(0, true);
  const count = dv.getUint32(8, true);
  if (withData && payload.length < DMA_RW_SIZE + count) {
    fail(Errno.EINVAL, `DMA_READ/WRITE: ${payload.length} bytes cannot hold ${count} data bytes`);
  }
  return { address, count, data: withData ? payload.subarray(DMA_RW_DATA, DMA_RW_DATA + count) : EMPTY };
}
