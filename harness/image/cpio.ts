import { createWriteStream } from "node:fs";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";

/**
 * A newc ("070701") archive writer, as the kernel's initramfs unpacker reads it. Owners are root,
 * mtimes zero and inode numbers sequential, so the same tree always gives the same bytes.
 *
 * Kept instead of a maintained tool because neither fits the image build as it runs: GNU cpio
 * archives a tree on disk, so /dev/console (a character device the kernel opens before any devtmpfs
 * exists) would need mknod, which needs root, and `hil` builds images as any user; the kernel's
 * usr/gen_init_cpio does take device nodes from a spec file, but is a C program in each kernel's
 * source, while one image serves every kernel (it would tie the image to a kernel tree and a
 * compile step). The format is small and fixed (Documentation/driver-api/early-userspace/
 * buffer-format.rst); test/unit tests read the archives back with GNU cpio.
 */
export type CpioEntry =
  | { kind: "dir"; path: string; mode: number }
  | { kind: "file"; path: string; mode: number; data: Uint8Array }
  | { kind: "symlink"; path: string; target: string }
  | { kind: "chardev"; path: string; mode: number; major: number; minor: number };

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFCHR = 0o020000;

function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

function pad4(length: number): Buffer {
  return Buffer.alloc((4 - (length % 4)) % 4);
}

function record(
  ino: number,
  mode: number,
  name: string,
  data: Uint8Array,
  rdev = { major: 0, minor: 0 },
): Buffer[] {
  const nameBytes = Buffer.from(`${name}\0`, "utf8");
  const nlink = (mode & 0o170000) === S_IFDIR ? 2 : 1;
  const header =
    "070701" +
    [ino, mode, 0, 0, nlink, 0, data.length, 0, 0, rdev.major, rdev.minor, nameBytes.length, 0]
      .map(hex8)
      .join("");
  const head = Buffer.concat([Buffer.from(header, "ascii"), nameBytes]);
  return [head, pad4(head.length), Buffer.from(data), pad4(data.length)];
}

export function encodeEntry(entry: CpioEntry, ino: number): Buffer[] {
  const name = entry.path.replace(/^\/+/, "");
  switch (entry.kind) {
    case "dir":
      return record(ino, S_IFDIR | (entry.mode & 0o7777), name, new Uint8Array());
    case "file":
      return record(ino, S_IFREG | (entry.mode & 0o7777), name, entry.data);
    case "symlink":
      return record(ino, S_IFLNK | 0o777, name, Buffer.from(entry.target, "utf8"));
    case "chardev":
      return record(ino, S_IFCHR | (entry.mode & 0o7777), name, new Uint8Array(), entry);
  }
}

export function encodeTrailer(): Buffer[] {
  return record(0, 0, "TRAILER!!!", new Uint8Array());
}

/** Every entry of a directory tree, parents before children, names in byte order. */
export async function* walkTree(root: string, prefix = ""): AsyncGenerator<CpioEntry> {
  const names = (await readdir(join(root, prefix))).sort((a, b) =>
    Buffer.compare(Buffer.from(a), Buffer.from(b)),
  );
  for (const name of names) {
    const rel = prefix ? `${prefix}/${name}` : name;
    const host = join(root, rel);
    const st = await lstat(host);
    if (st.isDirectory()) {
      yield { kind: "dir", path: rel, mode: st.mode };
      yield* walkTree(root, rel);
    } else if (st.isSymbolicLink()) {
      yield { kind: "symlink", path: rel, target: await readlink(host) };
    } else if (st.isFile()) {
      yield { kind: "file", path: rel, mode: st.mode, data: await readFile(host) };
    }
  }
}

async function* encodeAll(entries: AsyncIterable<CpioEntry> | Iterable<CpioEntry>): AsyncGenerator<Buffer> {
  let ino = 1;
  for await (const entry of entries) yield* encodeEntry(entry, ino++);
  yield* encodeTrailer();
}

/** Writes the entries as a gzip-compressed newc archive; returns the number of entries. */
export async function writeCpioGz(
  out: string,
  entries: AsyncIterable<CpioEntry> | Iterable<CpioEntry>,
): Promise<number> {
  let count = 0;
  async function* counted() {
    for await (const e of entries) {
      count++;
      yield e;
    }
  }
  await pipeline(Readable.from(encodeAll(counted())), createGzip({ level: 6 }), createWriteStream(out));
  return count;
}

export interface CpioListing {
  path: string;
  mode: number;
  size: number;
}

/**
 * Lists the entries of newc archives laid end to end, as the kernel reads an initramfs made of
 * layers (GNU cpio stops at the first trailer). `data` is uncompressed.
 */
export function listCpio(data: Uint8Array): CpioListing[] {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const entries: CpioListing[] = [];
  let at = 0;
  const align = (n: number) => (n + 3) & ~3;
  while (at + 110 <= buf.length) {
    if (buf[at] === 0) {
      at++;
      continue;
    }
    const magic = buf.toString("ascii", at, at + 6);
    if (magic !== "070701") throw new Error(`not a newc header at offset ${at}`);
    const field = (i: number) => Number.parseInt(buf.toString("ascii", at + 6 + i * 8, at + 14 + i * 8), 16);
    const mode = field(1);
    const size = field(6);
    const nameSize = field(11);
    const path = buf.toString("utf8", at + 110, at + 110 + nameSize - 1);
    at = align(at + 110 + nameSize);
    at = align(at + size);
    if (path !== "TRAILER!!!") entries.push({ path, mode, size });
  }
  return entries;
}
