import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

/** sha256 over a sequence of parts; each part is length-prefixed so ("ab","c") differs from ("a","bc"). */
export function hashParts(parts: ReadonlyArray<string | Uint8Array>): string {
  const h = createHash("sha256");
  for (const part of parts) {
    const bytes = typeof part === "string" ? Buffer.from(part, "utf8") : part;
    h.update(`${bytes.length}:`);
    h.update(bytes);
  }
  return h.digest("hex");
}

export async function hashFile(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/** A short form for directory names and messages. */
export function shortKey(key: string): string {
  return key.slice(0, 16);
}
