/**
 * PCI configuration space of a type 0 function: header, BAR sizing, command/status, and a
 * capability list (PCI Express endpoint, MSI-X). Offsets and bit meanings are from the PCI Local
 * Bus 3.0 / PCI Express Base specifications, as in Linux's include/uapi/linux/pci_regs.h.
 * Every byte has a write mask and a write-1-to-clear mask, so any access width works.
 */
import type { BarDefinition, DeviceDefinition } from "./device.ts";

export const Cfg = {
  VENDOR_ID: 0x00,
  DEVICE_ID: 0x02,
  COMMAND: 0x04,
  STATUS: 0x06,
  REVISION: 0x08,
  CLASS_PROG: 0x09,
  CACHE_LINE_SIZE: 0x0c,
  LATENCY_TIMER: 0x0d,
  HEADER_TYPE: 0x0e,
  BAR0: 0x10,
  SUBSYSTEM_VENDOR_ID: 0x2c,
  SUBSYSTEM_ID: 0x2e,
  ROM_ADDRESS: 0x30,
  CAPABILITY_LIST: 0x34,
  INTERRUPT_LINE: 0x3c,
  INTERRUPT_PIN: 0x3d,
} as const;

export const Command = {
  IO: 1 << 0,
  MEMORY: 1 << 1,
  MASTER: 1 << 2,
  PARITY: 1 << 6,
  SERR: 1 << 8,
  INTX_DISABLE: 1 << 10,
} as const;

const STATUS_CAP_LIST = 1 << 4;
/** detected parity, signaled system error, received master/target abort, signaled target abort, master data parity */
const STATUS_W1C = 0xf900;

export const CapId = { PM: 0x01, MSI: 0x05, EXP: 0x10, MSIX: 0x11 } as const;

/** PCI Express capability, version 2, endpoint: 60 bytes (pci_regs.h PCI_CAP_EXP_ENDPOINT_SIZEOF_V2). */
const EXP_SIZE = 0x3c;
const EXP = {
  FLAGS: 0x02,
  DEVCAP: 0x04,
  DEVCTL: 0x08,
  DEVSTA: 0x0a,
  LNKCAP: 0x0c,
  LNKCTL: 0x10,
  LNKSTA: 0x12,
  LNKCAP2: 0x2c,
  LNKCTL2: 0x30,
} as const;

/** MSI-X capability: control, table offset/BIR, PBA offset/BIR (PCI 3.0 6.8.2). */
const MSIX_SIZE = 12;
export const MSIX = {
  FLAGS: 0x02,
  TABLE: 0x04,
  PBA: 0x08,
  FLAGS_QSIZE: 0x07ff,
  FLAGS_MASKALL: 0x4000,
  FLAGS_ENABLE: 0x8000,
} as const;

export interface Capability {
  id: number;
  offset: number;
  size: number;
}

export interface ConfigChange {
  command?: { old: number; now: number };
  msix?: { enabled: boolean; masked: boolean };
  bar?: { index: number; address: bigint };
}

function isPow2(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

/** Checks a device's BAR and MSI-X declarations; throws with the first problem. */
export function validateDefinition(def: DeviceDefinition): void {
  const used = new Set<number>();
  for (const bar of def.bars) {
    if (!Number.isInteger(bar.index) || bar.index < 0 || bar.index > 5)
      throw new Error(`BAR index ${bar.index} outside 0..5`);
    const slots = bar.type === "mem64" ? [bar.index, bar.index + 1] : [bar.index];
    if (bar.type === "mem64" && bar.index === 5) throw new Error("a 64-bit BAR cannot start at index 5");
    for (const s of slots) {
      if (used.has(s)) throw new Error(`BAR ${bar.index} overlaps BAR slot ${s}`);
      used.add(s);
    }
    if (!isPow2(bar.size)) throw new Error(`BAR ${bar.index} size ${bar.size} is not a power of two`);
    if (bar.type === "io" && (bar.size < 4 || bar.size > 256))
      throw new Error(`I/O BAR ${bar.index} size must be 4..256`);
    if (bar.type !== "io" && bar.size < 16)
      throw new Error(`memory BAR ${bar.index} must be at least 16 bytes`);
    if (bar.type === "mem32" && bar.size > 0x8000_0000)
      throw new Error(`32-bit BAR ${bar.index} larger than 2 GiB`);
  }
  const m = def.msix;
  if (m) {
    if (!Number.isInteger(m.vectors) || m.vectors < 1 || m.vectors > 2048)
      throw new Error("MSI-X vectors must be 1..2048");
    const bar = def.bars.find((b) => b.index === m.bar);
    if (!bar || bar.type === "io") throw new Error(`MSI-X BAR ${m.bar} is not a declared memory BAR`);
    const tableEnd = m.tableOffset + m.vectors * 16;
    const pbaEnd = m.pbaOffset + Math.ceil(m.vectors / 64) * 8;
    if (m.tableOffset % 8 || m.pbaOffset % 8)
      throw new Error("MSI-X table and PBA offsets must be 8-byte aligned");
    if (tableEnd > bar.size || pbaEnd > bar.size)
      throw new Error(`MSI-X table or PBA does not fit in BAR ${m.bar}`);
    if (m.tableOffset < pbaEnd && m.pbaOffset < tableEnd) throw new Error("MSI-X table and PBA overlap");
  }
  const id = def.identity;
  for (const [k, v] of Object.entries({ vendorId: id.vendorId, deviceId: id.deviceId })) {
    if (!Number.isInteger(v) || v < 0 || v > 0xffff || v === 0xffff)
      throw new Error(`${k} 0x${v.toString(16)} is not a valid ID`);
  }
  if (!Number.isInteger(id.classCode) || id.classCode < 0 || id.classCode > 0xffffff)
    throw new Error("classCode is 24 bits");
}

export class PciConfigSpace {
  readonly size: number;
  private readonly bytes: Buffer;
  private readonly wmask: Buffer;
  private readonly w1cmask: Buffer;
  private readonly initial: Buffer;
  private readonly caps: Capability[] = [];
  private readonly bars: (BarDefinition | undefined)[] = [];
  private msixCap = -1;

  constructor(private readonly def: DeviceDefinition) {
    validateDefinition(def);
    const pcie = def.pcie ?? true;
    this.size = pcie ? 4096 : 256;
    this.bytes = Buffer.alloc(this.size);
    this.wmask = Buffer.alloc(this.size);
    this.w1cmask = Buffer.alloc(this.size);
    this.buildHeader();
    this.buildCapabilities(pcie);
    this.initial = Buffer.from(this.bytes);
  }

  private buildHeader(): void {
    const { identity } = this.def;
    const b = this.bytes;
    b.writeUInt16LE(identity.vendorId, Cfg.VENDOR_ID);
    b.writeUInt16LE(identity.deviceId, Cfg.DEVICE_ID);
    b.writeUInt8(identity.revision ?? 0, Cfg.REVISION);
    b.writeUIntLE(identity.classCode, Cfg.CLASS_PROG, 3);
    b.writeUInt8(0x00, Cfg.HEADER_TYPE); // type 0, single function
    b.writeUInt16LE(identity.subsystemVendorId ?? identity.vendorId, Cfg.SUBSYSTEM_VENDOR_ID);
    b.writeUInt16LE(identity.subsystemId ?? identity.deviceId, Cfg.SUBSYSTEM_ID);
    b.writeUInt8(0, Cfg.INTERRUPT_PIN); // MSI-X only, no INTx
    const hasIo = this.def.bars.some((bar) => bar.type === "io");
    const cmdMask =
      (hasIo ? Command.IO : 0) |
      Command.MEMORY |
      Command.MASTER |
      Command.PARITY |
      Command.SERR |
      Command.INTX_DISABLE;
    this.wmask.writeUInt16LE(cmdMask, Cfg.COMMAND);
    this.w1cmask.writeUInt16LE(STATUS_W1C, Cfg.STATUS);
    this.wmask.writeUInt8(0xff, Cfg.CACHE_LINE_SIZE);
    this.wmask.writeUInt8(0xff, Cfg.INTERRUPT_LINE);
    for (const bar of this.def.bars) {
      this.bars[bar.index] = bar;
      const off = Cfg.BAR0 + bar.index * 4;
      if (bar.type === "io") {
        b.writeUInt32LE(0x1, off);
        this.wmask.writeUInt32LE((~(bar.size - 1) & 0xfffffffc) >>> 0, off);
        continue;
      }
      const flags = (bar.type === "mem64" ? 0x4 : 0) | (bar.prefetchable ? 0x8 : 0);
      b.writeUInt32LE(flags, off);
      this.wmask.writeUInt32LE((~(bar.size - 1) & 0xfffffff0) >>> 0, off);
      if (bar.type === "mem64") {
        const hiMask = bar.size > 0x1_0000_0000 ? ~(bar.size / 0x1_0000_0000 - 1) >>> 0 : 0xffffffff;
        this.wmask.writeUInt32LE(hiMask, off + 4);
        if (bar.size >= 0x1_0000_0000) this.wmask.writeUInt32LE(0, off);
      }
    }
    // No expansion ROM: the ROM BAR stays zero and read-only.
  }

  private addCap(id: number, size: number): number {
    const last = this.caps[this.caps.length - 1];
    const offset = last ? (last.offset + last.size + 3) & ~3 : 0x40;
    if (offset + size > 0x100) throw new Error("capabilities do not fit in the 256-byte config space");
    this.bytes.writeUInt8(id, offset);
    this.bytes.writeUInt8(0, offset + 1);
    if (last) this.bytes.writeUInt8(offset, last.offset + 1);
    else {
      this.bytes.writeUInt8(offset, Cfg.CAPABILITY_LIST);
      this.bytes.writeUInt16LE(STATUS_CAP_LIST, Cfg.STATUS);
    }
    this.caps.push({ id, offset, size });
    return offset;
  }

  private buildCapabilities(pcie: boolean): void {
    const b = this.bytes;
    if (pcie) {
      const o = this.addCap(CapId.EXP, EXP_SIZE);
      b.writeUInt16LE(0x0002, o + EXP.FLAGS); // version 2, type 0 = PCI Express endpoint
      b.writeUInt32LE(1 << 15, o + EXP.DEVCAP); // role-based error reporting; 128-byte max payload; no FLR
      b.writeUInt16LE(0x2810, o + EXP.DEVCTL); // relaxed ordering, no snoop, max read request 512
      this.wmask.writeUInt16LE(0x79ff, o + EXP.DEVCTL);
      this.w1cmask.writeUInt16LE(0x000f, o + EXP.DEVSTA);
      b.writeUInt32LE(0x0000_0011, o + EXP.LNKCAP); // 2.5 GT/s, x1
      this.wmask.writeUInt16LE(0x01c3, o + EXP.LNKCTL);
      b.writeUInt16LE(0x0011, o + EXP.LNKSTA); // current: 2.5 GT/s, x1
      b.writeUInt32LE(0x0000_0002, o + EXP.LNKCAP2); // supported speeds: 2.5 GT/s
      b.writeUInt16LE(0x0001, o + EXP.LNKCTL2);
      this.wmask.writeUInt16LE(0x000f, o + EXP.LNKCTL2);
    }
    const m = this.def.msix;
    if (m) {
      const o = this.addCap(CapId.MSIX, MSIX_SIZE);
      b.writeUInt16LE(m.vectors - 1, o + MSIX.FLAGS);
      this.wmask.writeUInt16LE(MSIX.FLAGS_ENABLE | MSIX.FLAGS_MASKALL, o + MSIX.FLAGS);
      b.writeUInt32LE((m.tableOffset | m.bar) >>> 0, o + MSIX.TABLE);
      b.writeUInt32LE((m.pbaOffset | m.bar) >>> 0, o + MSIX.PBA);
      this.msixCap = o;
    }
    // Extended space (0x100..) stays zero: "no extended capabilities" (PCIe base spec 7.6.3).
  }

  capabilities(): readonly Capability[] {
    return this.caps;
  }

  read(offset: number, count: number): Buffer {
    return Buffer.from(this.bytes.subarray(offset, offset + count));
  }

  /** Applies a write with the per-byte masks; returns what changed that the server cares about. */
  write(offset: number, data: Uint8Array): ConfigChange {
    const oldCommand = this.command;
    const oldMsix = this.msixState();
    const oldBars = this.def.bars.map((bar) => this.barAddress(bar.index));
    for (let i = 0; i < data.length; i++) {
      const at = offset + i;
      const v = data[i] as number;
      const w = this.wmask[at] as number;
      const c = this.w1cmask[at] as number;
      const cur = this.bytes[at] as number;
      this.bytes[at] = ((cur & ~w) | (v & w)) & ~(v & c) & 0xff;
    }
    const change: ConfigChange = {};
    if (this.command !== oldCommand) change.command = { old: oldCommand, now: this.command };
    const msix = this.msixState();
    if (msix.enabled !== oldMsix.enabled || msix.masked !== oldMsix.masked) change.msix = msix;
    this.def.bars.forEach((bar, i) => {
      const now = this.barAddress(bar.index);
      if (now !== oldBars[i]) change.bar = { index: bar.index, address: now };
    });
    return change;
  }

  reset(): void {
    this.initial.copy(this.bytes);
  }

  get command(): number {
    return this.bytes.readUInt16LE(Cfg.COMMAND);
  }

  get busMaster(): boolean {
    return (this.command & Command.MASTER) !== 0;
  }

  msixState(): { enabled: boolean; masked: boolean } {
    if (this.msixCap < 0) return { enabled: false, masked: false };
    const flags = this.bytes.readUInt16LE(this.msixCap + MSIX.FLAGS);
    return { enabled: (flags & MSIX.FLAGS_ENABLE) !== 0, masked: (flags & MSIX.FLAGS_MASKALL) !== 0 };
  }

  /** The address programmed into a BAR (flag bits removed). */
  barAddress(index: number): bigint {
    const bar = this.bars[index];
    if (!bar) return 0n;
    const off = Cfg.BAR0 + index * 4;
    const lo = BigInt((this.bytes.readUInt32LE(off) & (bar.type === "io" ? 0xfffffffc : 0xfffffff0)) >>> 0);
    if (bar.type !== "mem64") return lo;
    return (BigInt(this.bytes.readUInt32LE(off + 4)) << 32n) | lo;
  }
}
