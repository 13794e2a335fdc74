/**
 * Whether an x86 bzImage is whole, by its own setup header (Linux Documentation/arch/x86/boot.rst,
 * "The Real-Mode Kernel Header"): setup_sects at 0x1F1 (512-byte sectors of real-mode setup
 * after the boot sector; 0 means 4), syssize at 0x1F4 (16-byte paragraphs of protected-mode code),
 * the magic "HdrS" at 0x202. A file shorter than they add up to was cut short.
 */
import { open } from "node:fs/promises";
import type { EntryProblem } from "../../util/cache.ts";
import { sizeDifference } from "../../util/cache-manifest.ts";

const HEADER_END = 0x206;

export async function bzImageProblem(path: string, name = "bzImage"): Promise<EntryProblem | undefined> {
  let size: number;
  const header = Buffer.alloc(HEADER_END);
  try {
    const f = await open(path, "r");
    try {
      size = (await f.stat()).size;
      await f.read(header, 0, HEADER_END, 0);
    } finally {
      await f.close();
    }
  } catch {
    return { file: name, what: "is missing" };
  }
  if (size < HEADER_END || header.toString("latin1", 0x202, 0x206) !== "HdrS")
    return { file: name, what: "has no x86 boot header (HdrS)" };
  const setupSects = header.readUInt8(0x1f1) || 4;
  const expected = (setupSects + 1) * 512 + header.readUInt32LE(0x1f4) * 16;
  if (size < expected) return { file: name, what: sizeDifference(size, expected, "its header says") };
  return undefined;
}
