/** "52:54:00:12:34:56" / "52-54-..." / 6 bytes / a 48-bit number -> the 48-bit value. */
export function parseMac(mac: string | Uint8Array | bigint): bigint {
  let bytes: number[];
  if (typeof mac === "bigint") {
    if (mac < 0n || mac >= 1n << 48n) throw new RangeError(`MAC ${mac} is not 48 bits`);
    return mac;
  }
  if (typeof mac === "string") {
    const parts = mac.trim().split(/[:-]/);
    if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p)))
      throw new RangeError(`bad MAC "${mac}"`);
    bytes = parts.map((p) => Number.parseInt(p, 16));
  } else {
    if (mac.length !== 6) throw new RangeError(`MAC has ${mac.length} bytes, not 6`);
    bytes = [...mac];
  }
  return bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}
