/**
 * Interrupts: the MSI-X table and PBA a BAR exposes, and the eventfds the client gives per vector
 * (spec "VFIO_USER_DEVICE_SET_IRQS", semantics of <linux/vfio.h> struct vfio_irq_set).
 *
 * QEMU's vfio-user-pci emulates the MSI-X table itself and routes a vector's eventfd through its
 * own mask/pending logic, so the server signals the eventfd whenever one is set. The table and PBA
 * here serve clients that access them through the BAR; a vector triggered without an eventfd, or
 * while the function is masked, is recorded as pending in the PBA.
 */
import { writeSync } from "node:fs";
import { closeFd, isEventFd } from "./libc.ts";
import { Errno, fail, type IrqSet, Vfio } from "./protocol.ts";

const ONE = (() => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(1n);
  return b;
})();

export interface IrqIndexInfo {
  count: number;
  flags: number;
}

export class Interrupts {
  /** eventfd per MSI-X vector, -1 when none */
  private readonly fds: number[];
  private readonly table: Buffer;
  private readonly pba: Buffer;
  private functionMasked = false;
  readonly raised: number[];

  constructor(readonly vectors: number) {
    this.fds = new Array(vectors).fill(-1);
    this.raised = new Array(vectors).fill(0);
    this.table = Buffer.alloc(vectors * 16);
    this.pba = Buffer.alloc(Math.ceil(vectors / 64) * 8);
    this.resetTable();
  }

  /** The IRQ types a PCI device reports (DEVICE_GET_IRQ_INFO): only MSI-X has vectors. */
  info(index: number): IrqIndexInfo {
    if (index === Vfio.PCI_MSIX_IRQ_INDEX && this.vectors > 0) {
      return { count: this.vectors, flags: Vfio.IRQ_INFO_EVENTFD | Vfio.IRQ_INFO_NORESIZE };
    }
    return {
      count: 0,
      flags:
        index === Vfio.PCI_INTX_IRQ_INDEX || index === Vfio.PCI_MSI_IRQ_INDEX ? Vfio.IRQ_INFO_EVENTFD : 0,
    };
  }

  /**
   * Validates and applies a SET_IRQS request; takes ownership of `fds` (kept or closed).
   * Throws ProtocolError (fds closed) when the request is malformed.
   */
  setIrqs(req: IrqSet, payloadLength: number, fds: number[]): void {
    try {
      this.checkSetIrqs(req, payloadLength, fds);
    } catch (err) {
      for (const fd of fds) closeFd(fd);
      throw err;
    }
    const dataType = req.flags & Vfio.IRQ_SET_DATA_TYPE_MASK;
    if (req.index !== Vfio.PCI_MSIX_IRQ_INDEX) return; // only "disable all" reaches here
    if (dataType === Vfio.IRQ_SET_DATA_EVENTFD) {
      for (let i = 0; i < req.count; i++) {
        const v = req.start + i;
        const old = this.fds[v] as number;
        if (old >= 0) closeFd(old);
        // No fds: "de-assigns the specified previously configured interrupts".
        this.fds[v] = fds.length ? (fds[i] as number) : -1;
      }
      return;
    }
    if (req.count === 0) {
      // start 0, count 0, DATA_NONE: disable every interrupt of the index.
      this.releaseAll();
      return;
    }
    // DATA_NONE / DATA_BOOL with TRIGGER: the client asks the device to fire these vectors.
    for (let i = 0; i < req.count; i++) {
      if (dataType === Vfio.IRQ_SET_DATA_BOOL && req.data[i] === 0) continue;
      this.trigger(req.start + i);
    }
  }

  private checkSetIrqs(req: IrqSet, payloadLength: number, fds: number[]): void {
    if (req.argsz !== payloadLength) {
      fail(Errno.EINVAL, `SET_IRQS: argsz ${req.argsz} differs from the payload size ${payloadLength}`);
    }
    if (req.flags & ~(Vfio.IRQ_SET_DATA_TYPE_MASK | Vfio.IRQ_SET_ACTION_TYPE_MASK)) {
      fail(Errno.EINVAL, `SET_IRQS: unknown flags 0x${req.flags.toString(16)}`);
    }
    const dataType = req.flags & Vfio.IRQ_SET_DATA_TYPE_MASK;
    const action = req.flags & Vfio.IRQ_SET_ACTION_TYPE_MASK;
    const one = (v: number) => v !== 0 && (v & (v - 1)) === 0;
    if (!one(dataType)) fail(Errno.EINVAL, "SET_IRQS: exactly one DATA flag is required");
    if (!one(action)) fail(Errno.EINVAL, "SET_IRQS: exactly one ACTION flag is required");
    if (req.index >= Vfio.PCI_NUM_IRQS) fail(Errno.EINVAL, `SET_IRQS: IRQ index ${req.index} out of range`);
    if (action !== Vfio.IRQ_SET_ACTION_TRIGGER) {
      fail(Errno.EINVAL, "SET_IRQS: MASK/UNMASK are not supported (the IRQ info has no MASKABLE flag)");
    }
    const dataLen = payloadLength - 20;
    const expectData = dataType === Vfio.IRQ_SET_DATA_BOOL ? req.count : 0;
    if (dataLen !== expectData) fail(Errno.EINVAL, `SET_IRQS: ${dataLen} data bytes, expected ${expectData}`);
    if (dataType === Vfio.IRQ_SET_DATA_EVENTFD) {
      if (fds.length !== 0 && fds.length !== req.count) {
        fail(Errno.EINVAL, `SET_IRQS: ${fds.length} fds for ${req.count} vectors`);
      }
      fds.forEach((fd, i) => {
        if (!isEventFd(fd)) fail(Errno.EINVAL, `SET_IRQS: fd ${i} is not an eventfd`);
      });
    } else if (fds.length) {
      fail(Errno.EINVAL, "SET_IRQS: fds sent without DATA_EVENTFD");
    }
    const count = this.info(req.index).count;
    if (req.count === 0) {
      if (req.start !== 0 || dataType !== Vfio.IRQ_SET_DATA_NONE) {
        fail(Errno.EINVAL, "SET_IRQS: count 0 is only valid with start 0 and DATA_NONE (disable all)");
      }
      return;
    }
    if (req.start >= count || req.count > count - req.start) {
      fail(
        Errno.EINVAL,
        `SET_IRQS: vectors ${req.start}+${req.count} outside the ${count} of index ${req.index}`,
      );
    }
  }

  /** Signals a vector; returns false when it was only marked pending. */
  trigger(vector: number): boolean {
    if (!Number.isInteger(vector) || vector < 0 || vector >= this.vectors) return false;
    const fd = this.fds[vector] as number;
    if (fd < 0 || this.functionMasked) {
      this.setPending(vector, true);
      return false;
    }
    try {
      writeSync(fd, ONE);
    } catch {
      this.setPending(vector, true);
      return false;
    }
    this.raised[vector] = (this.raised[vector] ?? 0) + 1;
    return true;
  }

  hasEventFd(vector: number): boolean {
    return (this.fds[vector] ?? -1) >= 0;
  }

  /**
   * The MSI-X Function Mask bit (QEMU forwards writes of the MSI-X control word). On unmask, a
   * vector that became pending meanwhile is delivered now, as PCI 3.0 6.8.2.9 asks.
   */
  setFunctionMasked(masked: boolean): number[] {
    const wasMasked = this.functionMasked;
    this.functionMasked = masked;
    const fired: number[] = [];
    if (wasMasked && !masked) {
      for (let v = 0; v < this.vectors; v++) {
        if (this.isPending(v) && this.hasEventFd(v)) {
          this.setPending(v, false);
          if (this.trigger(v)) fired.push(v);
        }
      }
    }
    return fired;
  }

  isPending(vector: number): boolean {
    return (((this.pba[vector >> 3] as number) >> (vector & 7)) & 1) === 1;
  }

  private setPending(vector: number, on: boolean): void {
    const byte = vector >> 3;
    const bit = 1 << (vector & 7);
    const cur = this.pba[byte] as number;
    this.pba[byte] = on ? cur | bit : cur & ~bit;
  }

  /** Table reads/writes through the BAR (16-byte entries: address lo/hi, data, vector control). */
  tableRead(offset: number, size: number): Buffer {
    return Buffer.from(this.table.subarray(offset, offset + size));
  }

  tableWrite(offset: number, data: Uint8Array): void {
    this.table.set(data.subarray(0, Math.max(0, this.table.length - offset)), offset);
  }

  pbaRead(offset: number, size: number): Buffer {
    return Buffer.from(this.pba.subarray(offset, offset + size));
  }

  get tableBytes(): number {
    return this.table.length;
  }

  get pbaBytes(): number {
    return this.pba.length;
  }

  private resetTable(): void {
    this.table.fill(0);
    // Vector control: masked after reset (PCI 3.0 6.8.2.9).
    for (let v = 0; v < this.vectors; v++) this.table.writeUInt32LE(1, v * 16 + 12);
    this.pba.fill(0);
  }

  /** Device reset: table and PBA to power-on values; the client's eventfds stay assigned. */
  reset(): void {
    this.resetTable();
    this.functionMasked = false;
  }

  /** Client gone or "disable all": close every eventfd. */
  releaseAll(): void {
    for (let v = 0; v < this.vectors; v++) {
      const fd = this.fds[v] as number;
      if (fd >= 0) closeFd(fd);
      this.fds[v] = -1;
    }
  }
}
