/**
 * hil-testdev: a small PCI device to prove the vfio-user server end to end. A scratch register,
 * a DMA engine that copies or fills guest memory when its doorbell is written, and an MSI-X
 * interrupt when it is done. IDs 0x1ded:0x7e57 ("test") are for testing only; no real hardware
 * uses them. guest/testdev/hil_testdev.c drives it; keep the register map in sync with it.
 */
import type { AccessSize, DeviceContext, DeviceDefinition, DeviceModel } from "../vfio-user/device.ts";

export const TESTDEV_VENDOR = 0x1ded;
export const TESTDEV_DEVICE = 0x7e57;
export const TESTDEV_ID_VALUE = 0x7e57_0001;

/** BAR0 registers (32-bit unless noted). */
export const Reg = {
  ID: 0x00, // RO magic/version
  SCRATCH: 0x04, // RW
  STATUS: 0x08, // RO: bit0 busy, bit1 done, bit2 error
  ERROR: 0x0c, // RO: error code of the last command
  SRC_LO: 0x10,
  SRC_HI: 0x14,
  DST_LO: 0x18,
  DST_HI: 0x1c,
  LEN: 0x20,
  PATTERN: 0x24, // fill pattern, a 32-bit word repeated
  CMD: 0x28, // doorbell: bits 0-3 op, bit 8 interrupt when done
  IRQ_VECTOR: 0x2c, // RW: MSI-X vector for completion
  DONE_COUNT: 0x30, // RO: commands completed
  IRQ_COUNT: 0x34, // RO: interrupts raised
  SCRATCH64: 0x40, // RW, 64 bits
} as const;

export const Status = { BUSY: 1, DONE: 2, ERROR: 4 } as const;
export const Op = { COPY: 1, FILL: 2 } as const;
export const CMD_IRQ = 1 << 8;
export const TestdevError = {
  NONE: 0,
  BUSY: 1,
  BAD_COMMAND: 2,
  READ_FAULT: 3,
  WRITE_FAULT: 4,
  BAD_LENGTH: 5,
} as const;

export const MAX_DMA_LEN = 16 << 20;
const CHUNK = 1 << 20;
const REG_FILE = 0x100;
const WRITABLE = new Set<number>([
  Reg.SCRATCH,
  Reg.SRC_LO,
  Reg.SRC_HI,
  Reg.DST_LO,
  Reg.DST_HI,
  Reg.LEN,
  Reg.PATTERN,
  Reg.CMD,
  Reg.IRQ_VECTOR,
  Reg.SCRATCH64,
  Reg.SCRATCH64 + 4,
]);

export const testdevDefinition: DeviceDefinition = {
  name: "hil-testdev",
  identity: {
    vendorId: TESTDEV_VENDOR,
    deviceId: TESTDEV_DEVICE,
    subsystemVendorId: TESTDEV_VENDOR,
    subsystemId: TESTDEV_DEVICE,
    classCode: 0xff0000, // "device does not fit any defined class"
    revision: 1,
  },
  bars: [], // filled in by the constructor (handlers bound to the instance)
  msix: { vectors: 4, bar: 2, tableOffset: 0, pbaOffset: 0x800 },
  pcie: true,
};

export class TestDevice implements DeviceModel {
  readonly definition: DeviceDefinition;
  private ctx: DeviceContext | undefined;
  private readonly regs = Buffer.alloc(REG_FILE);
  /** bumped on reset and disconnect: a DMA still running from before must not complete */
  private generation = 0;

  constructor() {
    this.definition = {
      ...testdevDefinition,
      bars: [
        {
          index: 0,
          size: 0x1000,
          type: "mem64",
          read: (off, size) => this.read(off, size),
          write: (off, size, v) => this.write(off, size, v),
        },
        { index: 2, size: 0x1000, type: "mem32" },
      ],
    };
  }

  attach(ctx: DeviceContext): void {
    this.ctx = ctx;
  }

  reset(): void {
    this.generation++;
    this.regs.fill(0);
    this.regs.writeUInt32LE(TESTDEV_ID_VALUE, Reg.ID);
  }

  clientGone(): void {
    this.generation++;
    const st = this.reg(Reg.STATUS);
    if (st & Status.BUSY) this.finish(TestdevError.READ_FAULT, false);
  }

  private reg(off: number): number {
    return this.regs.readUInt32LE(off);
  }

  private setReg(off: number, v: number): void {
    this.regs.writeUInt32LE(v >>> 0, off);
  }

  private read(off: number, size: AccessSize): number | bigint {
    if (off + size > REG_FILE) return size === 8 ? 0n : 0;
    switch (size) {
      case 1:
        return this.regs.readUInt8(off);
      case 2:
        return this.regs.readUInt16LE(off);
      case 4:
        return this.regs.readUInt32LE(off);
      default:
        return this.regs.readBigUInt64LE(off);
    }
  }

  private write(off: number, size: AccessSize, value: number | bigint): void {
    if (off + size > REG_FILE) return;
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64LE(BigInt.asUintN(64, BigInt(value)));
    let doorbell = false;
    for (let i = 0; i < size; i++) {
      const at = off + i;
      const word = at & ~3;
      if (!WRITABLE.has(word)) continue;
      this.regs[at] = bytes[i] as number;
      if (word === Reg.CMD) doorbell = true;
    }
    if (doorbell) this.doorbell(this.reg(Reg.CMD));
  }

  /** Starts a command. State changes now (the guest may read STATUS next); the DMA runs after the reply. */
  private doorbell(cmd: number): void {
    const ctx = this.ctx;
    if (!ctx) return;
    ctx.trace("doorbell", { cmd });
    if (this.reg(Reg.STATUS) & Status.BUSY) {
      this.setReg(Reg.ERROR, TestdevError.BUSY);
      this.setReg(Reg.STATUS, this.reg(Reg.STATUS) | Status.ERROR);
      return;
    }
    const op = cmd & 0xf;
    const len = this.reg(Reg.LEN);
    const irq = (cmd & CMD_IRQ) !== 0;
    if (op !== Op.COPY && op !== Op.FILL) {
      this.finish(TestdevError.BAD_COMMAND, irq);
      return;
    }
    if (len === 0 || len > MAX_DMA_LEN) {
      this.finish(TestdevError.BAD_LENGTH, irq);
      return;
    }
    const src = (BigInt(this.reg(Reg.SRC_HI)) << 32n) | BigInt(this.reg(Reg.SRC_LO));
    const dst = (BigInt(this.reg(Reg.DST_HI)) << 32n) | BigInt(this.reg(Reg.DST_LO));
    const pattern = this.reg(Reg.PATTERN);
    this.setReg(Reg.STATUS, Status.BUSY);
    this.setReg(Reg.ERROR, TestdevError.NONE);
    const gen = this.generation;
    setImmediate(() => {
      this.run(op, src, dst, len, pattern).then(
        (err) => {
          if (gen === this.generation) this.finish(err, irq);
        },
        (e: unknown) => {
          if (gen === this.generation) {
            ctx.log("warn", `DMA engine failed: ${String(e)}`);
            this.finish(TestdevError.WRITE_FAULT, irq);
          }
        },
      );
    });
  }

  private async run(op: number, src: bigint, dst: bigint, len: number, pattern: number): Promise<number> {
    const dma = (this.ctx as DeviceContext).dma;
    let fill: Buffer | undefined;
    if (op === Op.FILL) {
      const word = Buffer.alloc(4);
      word.writeUInt32LE(pattern >>> 0);
      fill = Buffer.alloc(Math.min(len, CHUNK)).fill(word);
    }
    for (let done = 0; done < len; done += CHUNK) {
      const n = Math.min(CHUNK, len - done);
      let data: Uint8Array;
      if (fill) data = fill.subarray(0, n);
      else {
        try {
          data = await dma.read(src + BigInt(done), n);
        } catch (err) {
          this.ctx?.trace("dma-fault", { reason: String((err as Error).message) });
          return TestdevError.READ_FAULT;
        }
      }
      try {
        await dma.write(dst + BigInt(done), data);
      } catch (err) {
        this.ctx?.trace("dma-fault", { reason: String((err as Error).message) });
        return TestdevError.WRITE_FAULT;
      }
    }
    return TestdevError.NONE;
  }

  private finish(err: number, irq: boolean): void {
    this.setReg(Reg.ERROR, err);
    this.setReg(Reg.STATUS, Status.DONE | (err ? Status.ERROR : 0));
    this.setReg(Reg.DONE_COUNT, this.reg(Reg.DONE_COUNT) + 1);
    this.ctx?.trace("done", { error: err });
    if (irq && this.ctx) {
      const vector = this.reg(Reg.IRQ_VECTOR);
      this.ctx.raiseIrq(vector);
      this.setReg(Reg.IRQ_COUNT, this.reg(Reg.IRQ_COUNT) + 1);
    }
  }
}

export function createTestDevice(): TestDevice {
  return new TestDevice();
}
