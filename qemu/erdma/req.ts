/**
 * A CMDQ request as the device fetched it: the SQE's bytes (hdr first). Reading a field beyond the
 * SQE is a malformed command (BAD_LENGTH): 6.1 drivers send 64-byte SQEs, later ones 128-byte SQEs
 * (hw.h:122), and a field the request does not carry must not be taken from the next SQE.
 */
import { CmdStatus, fail } from "./status.ts";

export class Req {
  private readonly dv: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get length(): number {
    return this.bytes.length;
  }

  has(offset: number, size: number): boolean {
    return offset + size <= this.bytes.length;
  }

  private need(offset: number, size: number, what: string): void {
    if (!this.has(offset, size))
      fail(CmdStatus.BAD_LENGTH, `${what} at byte ${offset} beyond the ${this.length}-byte SQE`);
  }

  u8(offset: number, what = "field"): number {
    this.need(offset, 1, what);
    return this.dv.getUint8(offset);
  }

  u16(offset: number, what = "field"): number {
    this.need(offset, 2, what);
    return this.dv.getUint16(offset, true);
  }

  u32(offset: number, what = "field"): number {
    this.need(offset, 4, what);
    return this.dv.getUint32(offset, true);
  }

  u64(offset: number, what = "field"): bigint {
    this.need(offset, 8, what);
    return this.dv.getBigUint64(offset, true);
  }

  be16(offset: number, what = "field"): number {
    this.need(offset, 2, what);
    return this.dv.getUint16(offset, false);
  }

  be32(offset: number, what = "field"): number {
    this.need(offset, 4, what);
    return this.dv.getUint32(offset, false);
  }

  bytesAt(offset: number, size: number, what = "field"): Uint8Array {
    this.need(offset, size, what);
    return this.bytes.slice(offset, offset + size);
  }
}
