/** Bit fields (GENMASK-style [hi, lo] pairs) and little/big-endian access to byte buffers. */

export type Field = readonly [hi: number, lo: number];

/** Extracts field [hi, lo] (hi <= 31) of a 32-bit value as an unsigned number. */
export function get32(value: number, [hi, lo]: Field): number {
  const width = hi - lo + 1;
  const shifted = value >>> lo;
  return width >= 32 ? shifted >>> 0 : (shifted & ((1 << width) - 1)) >>> 0;
}

/** Places `v` in field [hi, lo] (hi <= 31), truncating it to the field's width. */
export function put32(v: number, [hi, lo]: Field): number {
  const width = hi - lo + 1;
  const masked = width >= 32 ? v >>> 0 : v & ((1 << width) - 1);
  return (masked << lo) >>> 0;
}

/** Extracts field [hi, lo] of a 64-bit value. */
export function get64(value: bigint, [hi, lo]: Field): bigint {
  return (value >> BigInt(lo)) & ((1n << BigInt(hi - lo + 1)) - 1n);
}

/** Extracts a field of a 64-bit value as a number (fields up to 53 bits wide). */
export function get64n(value: bigint, field: Field): number {
  return Number(get64(value, field));
}

/** Places `v` in field [hi, lo] of a 64-bit value. */
export function put64(v: bigint | number, [hi, lo]: Field): bigint {
  const mask = (1n << BigInt(hi - lo + 1)) - 1n;
  return (BigInt(v) & mask) << BigInt(lo);
}

export const U64_MASK = (1n << 64n) - 1n;

export function hex(v: number | bigint): string {
  return `0x${v.toString(16)}`;
}

/** Bytes of a little-endian u64. */
export function le64(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v & U64_MASK, true);
  return b;
}
