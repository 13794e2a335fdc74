/**
 * Reads a fuzz input as a stream of choices (in the manner of libFuzzer's FuzzedDataProvider): every
 * byte string is a valid program, and an exhausted input reads as zeros so a harness always ends.
 */
export class ByteReader {
  private at = 0;
  constructor(private readonly data: Uint8Array) {}

  get left(): number {
    return this.data.length - this.at;
  }

  u8(): number {
    return this.at < this.data.length ? (this.data[this.at++] as number) : 0;
  }

  u16(): number {
    return this.u8() | (this.u8() << 8);
  }

  u32(): number {
    return (this.u16() | (this.u16() << 16)) >>> 0;
  }

  u64(): bigint {
    return BigInt(this.u32()) | (BigInt(this.u32()) << 32n);
  }

  /** 0 <= n < max (max >= 1) */
  below(max: number): number {
    if (max <= 1) return 0;
    const v = max <= 0x100 ? this.u8() : max <= 0x10000 ? this.u16() : this.u32();
    return v % max;
  }

  bool(): boolean {
    return (this.u8() & 1) === 1;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.below(xs.length)] as T;
  }

  /** up to `n` bytes (fewer at the end of the input) */
  bytes(n: number): Uint8Array {
    const out = this.data.subarray(this.at, Math.min(this.data.length, this.at + n));
    this.at += out.length;
    return out;
  }
}
