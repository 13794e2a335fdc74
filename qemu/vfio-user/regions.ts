/**
 * Device regions as the client accesses them (spec "VFIO_USER_REGION_READ/WRITE"): BARs 0-5 through
 * the device's handlers, split into naturally aligned 1/2/4/8-byte accesses, the MSI-X table and
 * PBA inside their BAR, and PCI config space (region 7). Every access is bound-checked first.
 */
import type { AccessSize, BarDefinition, DeviceDefinition } from "./device.ts";
import type { Interrupts } from "./irqs.ts";
import type { PciConfigSpace } from "./pci-config.ts";
import { Errno, fail, type RegionAccess, Vfio } from "./protocol.ts";
import type { Logger, TraceEvent } from "./trace.ts";

export const NUM_REGIONS = Vfio.PCI_NUM_REGIONS;

export class DeviceRegions {
  private readonly bars: (BarDefinition | undefined)[] = [];

  constructor(
    private readonly def: DeviceDefinition,
    private readonly config: PciConfigSpace,
    private readonly irqs: Interrupts,
    private readonly maxXfer: number,
    private readonly log: Logger,
    private readonly emit: (e: TraceEvent) => void,
  ) {
    for (const bar of def.bars) this.bars[bar.index] = bar;
  }

  /** Size of region `index` (0 when absent: the upper half of a 64-bit BAR, ROM, VGA). */
  size(index: number): number {
    if (index === Vfio.PCI_CONFIG_REGION_INDEX) return this.config.size;
    if (index < 6) return this.bars[index]?.size ?? 0;
    return 0;
  }

  check(a: { offset: bigint; region: number; count: number }, what: string): void {
    if (a.region >= NUM_REGIONS) fail(Errno.EINVAL, `${what}: region ${a.region} out of range`);
    const size = this.size(a.region);
    if (size === 0) fail(Errno.EINVAL, `${what}: region ${a.region} is not implemented`);
    if (a.count === 0) fail(Errno.EINVAL, `${what}: count 0`);
    if (a.count > this.maxXfer)
      fail(Errno.EINVAL, `${what}: count ${a.count} > max_data_xfer_size ${this.maxXfer}`);
    if (a.offset + BigInt(a.count) > BigInt(size)) {
      fail(
        Errno.EINVAL,
        `${what}: 0x${a.offset.toString(16)}+${a.count} beyond region ${a.region} (${size} bytes)`,
      );
    }
  }

  /** Reads a checked range of a region. */
  read(a: { offset: bigint; region: number; count: number }): Buffer {
    this.check(a, "REGION_READ");
    const off = Number(a.offset);
    return a.region === Vfio.PCI_CONFIG_REGION_INDEX
      ? this.config.read(off, a.count)
      : this.barAccess(a.region, off, a.count);
  }

  write(a: RegionAccess): void {
    this.check(a, "REGION_WRITE");
    const off = Number(a.offset);
    if (a.region === Vfio.PCI_CONFIG_REGION_INDEX) {
      const change = this.config.write(off, a.data);
      if (change.msix) {
        for (const vector of this.irqs.setFunctionMasked(change.msix.masked)) {
          this.emit({ kind: "irq", vector, delivered: true });
        }
      }
      if (change.command || change.msix || change.bar) {
        this.emit({
          kind: "config",
          change: {
            ...(change.command ? { command: change.command.now, busMaster: this.config.busMaster } : {}),
            ...(change.msix ? { msix: change.msix } : {}),
            ...(change.bar ? { bar: change.bar.index, address: `0x${change.bar.address.toString(16)}` } : {}),
          },
        });
      }
      return;
    }
    this.barAccess(a.region, off, a.count, a.data);
  }

  /** Reads (data undefined) or writes a BAR range as naturally aligned 1/2/4/8-byte accesses. */
  private barAccess(index: number, offset: number, count: number, data?: Uint8Array): Buffer {
    const bar = this.bars[index] as BarDefinition;
    const out = Buffer.alloc(data ? 0 : count);
    const msix = this.def.msix;
    let pos = 0;
    while (pos < count) {
      const at = offset + pos;
      let size: AccessSize = 8;
      while (size > 1 && (size > count - pos || at % size !== 0)) size = (size / 2) as AccessSize;
      if (
        msix &&
        msix.bar === index &&
        at >= msix.tableOffset &&
        at < msix.tableOffset + this.irqs.tableBytes
      ) {
        if (data) this.irqs.tableWrite(at - msix.tableOffset, data.subarray(pos, pos + size));
        else this.irqs.tableRead(at - msix.tableOffset, size).copy(out, pos);
      } else if (
        msix &&
        msix.bar === index &&
        at >= msix.pbaOffset &&
        at < msix.pbaOffset + this.irqs.pbaBytes
      ) {
        if (!data) this.irqs.pbaRead(at - msix.pbaOffset, size).copy(out, pos);
      } else if (data) {
        const v = readLE(data, pos, size);
        try {
          bar.write?.(at, size, v);
        } catch (err) {
          this.log(
            "warn",
            `${this.def.name}: BAR${index} write at 0x${at.toString(16)} threw: ${String(err)}`,
          );
          fail(Errno.EIO, `device write handler failed at BAR${index}+0x${at.toString(16)}`);
        }
      } else {
        let v: number | bigint = 0;
        try {
          v = bar.read?.(at, size) ?? 0;
        } catch (err) {
          this.log(
            "warn",
            `${this.def.name}: BAR${index} read at 0x${at.toString(16)} threw: ${String(err)}`,
          );
          fail(Errno.EIO, `device read handler failed at BAR${index}+0x${at.toString(16)}`);
        }
        writeLE(out, pos, size, v);
      }
      pos += size;
    }
    return out;
  }
}

function readLE(buf: Uint8Array, pos: number, size: AccessSize): number | bigint {
  const dv = new DataView(buf.buffer, buf.byteOffset + pos, size);
  switch (size) {
    case 1:
      return dv.getUint8(0);
    case 2:
      return dv.getUint16(0, true);
    case 4:
      return dv.getUint32(0, true);
    default:
      return dv.getBigUint64(0, true);
  }
}

function writeLE(buf: Buffer, pos: number, size: AccessSize, v: number | bigint): void {
  switch (size) {
    case 1:
      buf.writeUInt8(Number(BigInt.asUintN(8, BigInt(v))), pos);
      return;
    case 2:
      buf.writeUInt16LE(Number(BigInt.asUintN(16, BigInt(v))), pos);
      return;
    case 4:
      buf.writeUInt32LE(Number(BigInt.asUintN(32, BigInt(v))), pos);
      return;
    default:
      buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)), pos);
  }
}
