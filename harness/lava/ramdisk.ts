/**
 * The job's ramdisk as one gzip-compressed newc archive. The guest image is layers of newc
 * archives laid end to end (harness/image/initramfs.ts), which the kernel reads whole; LAVA's
 * overlay step (lava_dispatcher/actions/deploy/apply_overlay.py AppendOverlays, 2023.01) gunzips
 * the ramdisk, unpacks it with GNU cpio, which stops at the first archive's trailer, and packs the
 * tree again: every layer after the first would be lost. So the layers' entries are written into
 * one archive, in their order (a later entry of a path replaces an earlier one, as when the
 * kernel unpacks the layers), with one trailer and inode numbers of its own.
 */
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip, gunzipSync } from "node:zlib";
import { HilError } from "../../util/errors.ts";

const HEADER = 110;
const MAGIC = "070701";
const TRAILER = "TRAILER!!!";
const align4 = (n: number) => (n + 3) & ~3;

function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/** A part's bytes, gunzipped when it is gzip (the layers come both ways). */
async function archiveBytes(path: string): Promise<Buffer> {
  const data = await readFile(path);
  return data[0] === 0x1f && data[1] === 0x8b ? gunzipSync(data) : data;
}

/**
 * The records of newc archives laid end to end, trailers left out, each renumbered from `ino`
 * (a record keeps its bytes otherwise: mode, owner, mtime, device numbers, data).
 */
export function* newcRecords(buf: Buffer, where: string, firstIno = 1): Generator<Buffer> {
  let ino = firstIno;
  let at = 0;
  while (at < buf.length) {
    if (buf[at] === 0) {
      at++; // the zero padding between archives
      continue;
    }
    if (at + HEADER > buf.length || buf.toString("ascii", at, at + 6) !== MAGIC)
      throw new HilError(`not a newc (${MAGIC}) cpio header at offset ${at}`, { where });
    const field = (i: number) => Number.parseInt(buf.toString("ascii", at + 6 + i * 8, at + 14 + i * 8), 16);
    const size = field(6);
    const nameSize = field(11);
    const name = buf.toString("utf8", at + HEADER, at + HEADER + nameSize - 1);
    const end = align4(align4(at + HEADER + nameSize) + size);
    if (end > buf.length + 3) throw new HilError(`the cpio entry ${name} is cut off`, { where });
    if (name !== TRAILER) {
      const record = Buffer.from(buf.subarray(at, Math.min(end, buf.length)));
      record.write(hex8(ino++), 6, "ascii");
      yield record.length === end - at
        ? record
        : Buffer.concat([record, Buffer.alloc(end - at - record.length)]);
    }
    at = end;
  }
}

function trailer(): Buffer {
  const name = Buffer.from(`${TRAILER}\0`);
  const fields = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, name.length, 0].map(hex8).join("");
  const head = Buffer.concat([Buffer.from(MAGIC + fields, "ascii"), name]);
  return Buffer.concat([head, Buffer.alloc(align4(head.length) - head.length)]);
}

/** Writes `parts` (newc archives, each plain or gzip, each possibly several laid end to end) as one gzip newc archive. */
export async function writeSingleArchiveRamdisk(out: string, parts: readonly string[]): Promise<void> {
  async function* records(): AsyncGenerator<Buffer> {
    let ino = 1;
    for (const part of parts) {
      for (const r of newcRecords(await archiveBytes(part), part, ino)) {
        ino++;
        yield r;
      }
    }
    yield trailer();
  }
  await pipeline(Readable.from(records()), createGzip({ level: 6 }), createWriteStream(out));
}
