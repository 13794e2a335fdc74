/**
 * Byte-level mutations of a corpus entry, the usual set (after libFuzzer's MutationDispatcher):
 * bit flips, random and "interesting" values at random offsets (8/16/32/64-bit, either endianness),
 * small arithmetic, byte insertion and deletion, block copy, and crossover with another entry.
 */

/** mulberry32: small and seedable, so a campaign repeats with its seed. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n) };
}
export type Rng = ReturnType<typeof prng>;

const INTERESTING: readonly bigint[] = [
  0n,
  1n,
  2n,
  3n,
  4n,
  7n,
  8n,
  15n,
  16n,
  31n,
  32n,
  63n,
  64n,
  0x7fn,
  0x80n,
  0xffn,
  0x100n,
  0x3ffn,
  0x400n,
  0xfffn,
  0x1000n,
  0x7fffn,
  0x8000n,
  0xffffn,
  0x10000n,
  0x7fffffffn,
  0x80000000n,
  0xfffffffen,
  0xffffffffn,
  0x100000000n,
  0x7fffffffffffffffn,
  0x8000000000000000n,
  0xfffffffffffff000n,
  0xffffffffffffffffn,
];

function putValue(out: Uint8Array, at: number, width: number, value: bigint, bigEndian: boolean): void {
  for (let i = 0; i < width && at + i < out.length; i++) {
    const byte = Number((value >> BigInt(8 * i)) & 0xffn);
    out[bigEndian ? at + width - 1 - i : at + i] = byte;
  }
}

export function mutate(
  input: Uint8Array,
  rng: Rng,
  other: Uint8Array | undefined,
  maxLen: number,
): Uint8Array {
  let out: Uint8Array = Uint8Array.from(input);
  const rounds = 1 + rng.int(rng.int(2) ? 2 : 6);
  for (let r = 0; r < rounds; r++) {
    const len = out.length;
    switch (rng.int(len === 0 ? 1 : 11)) {
      case 0: {
        // insert random bytes
        const at = rng.int(len + 1);
        const n = 1 + rng.int(rng.int(4) ? 4 : 32);
        const ins = Uint8Array.from({ length: n }, () => rng.int(256));
        out = concat(out.subarray(0, at), ins, out.subarray(at));
        break;
      }
      case 1: {
        const at = rng.int(len);
        out[at] = (out[at] as number) ^ (1 << rng.int(8));
        break;
      }
      case 2:
        out[rng.int(len)] = rng.int(256);
        break;
      case 3:
      case 4: {
        const width = [1, 2, 4, 8][rng.int(4)] as number;
        const v = INTERESTING[rng.int(INTERESTING.length)] as bigint;
        putValue(
          out,
          rng.int(len),
          width,
          rng.int(4) ? v : -v & ((1n << BigInt(8 * width)) - 1n),
          rng.int(4) === 0,
        );
        break;
      }
      case 5: {
        const at = rng.int(len);
        out[at] = ((out[at] as number) + rng.int(71) - 35) & 0xff;
        break;
      }
      case 6: {
        // delete a block
        const at = rng.int(len);
        const n = 1 + rng.int(Math.min(len - at, rng.int(4) ? 4 : 64));
        out = concat(out.subarray(0, at), out.subarray(at + n));
        break;
      }
      case 7: {
        // copy a block over another place
        const from = rng.int(len);
        const n = 1 + rng.int(Math.min(len - from, 32));
        out.copyWithin(rng.int(len), from, from + n);
        break;
      }
      case 8: {
        // duplicate a block (repeats a record of the program)
        const from = rng.int(len);
        const n = 1 + rng.int(Math.min(len - from, 64));
        const at = rng.int(len + 1);
        out = concat(out.subarray(0, at), out.slice(from, from + n), out.subarray(at));
        break;
      }
      case 9:
      case 10: {
        if (!other || other.length === 0) break;
        // crossover: a prefix of this entry with a suffix of the other, or a block of it inserted
        const at = rng.int(len + 1);
        const from = rng.int(other.length);
        const n = 1 + rng.int(other.length - from);
        out = rng.int(2)
          ? concat(out.subarray(0, at), other.subarray(from))
          : concat(out.subarray(0, at), other.subarray(from, from + n), out.subarray(at));
        break;
      }
    }
  }
  return out.length > maxLen ? out.subarray(0, maxLen) : out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
