/**
 * Memory translation tables (MTT): how a queue buffer or memory region's bytes are found in guest
 * memory. A buffer is a run of equally sized pages, starting `offset` bytes into the first one.
 *
 * - level 0: the page addresses are in the command itself (qbuf/phy_addr/mtt_entry fields);
 * - level 1: the command points at a contiguous table of `count` u64 page addresses
 *   (erdma_verbs.c:27-36 assemble_qbuf_mtt_for_cmd, :139-147 regmr_cmd);
 * - levels 2 and 3 (MRs only, 6.12+ with MTT_VA): the command points at one table page holding the
 *   addresses of the next level's table pages, each `tablePageSize` bytes (erdma_verbs.c:696-747,
 *   :172-178 VERSION=1, MTT_PAGESIZE, size_h, mtt_cnt_h).
 *
 * A page address is where the buffer's bytes for that page begin: kernel queues pass their
 * (unaligned) coherent buffer as the single entry of a large "page" (erdma_verbs.c:59-80, :199-209).
 */
import type { Dma } from "./dma.ts";
import { CmdStatus, fail } from "./status.ts";

export interface MttDescriptor {
  /** log2 of the data page size */
  pageShift: number;
  /** 0 inline, 1..3 indirect */
  level: number;
  /** number of data pages */
  count: number;
  /** byte offset of the buffer in its first page */
  offset: number;
  /** level 0: the page addresses; otherwise [top table address] */
  entries: bigint[];
  /** levels >= 2: bytes per table page */
  tablePageSize?: number;
}

/** A queue buffer with every page address resolved and checked at creation. */
export class QueueBuffer {
  private readonly mask: bigint;

  constructor(
    readonly pages: readonly bigint[],
    readonly pageShift: number,
    readonly offset: number,
    readonly size: number,
  ) {
    this.mask = (1n << BigInt(pageShift)) - 1n;
  }

  /** Guest address of byte `off` of the buffer (`off` < size). Elements never straddle pages. */
  address(off: number): bigint {
    const v = BigInt(this.offset) + BigInt(off);
    const page = this.pages[Number(v >> BigInt(this.pageShift))];
    if (page === undefined) throw new RangeError(`queue offset ${off} beyond ${this.size} bytes`);
    return page + (v & this.mask);
  }

  toJSON(): Record<string, unknown> {
    return {
      pages: this.pages.map((p) => `0x${p.toString(16)}`),
      pageShift: this.pageShift,
      offset: this.offset,
      size: this.size,
    };
  }
}

/**
 * Resolves a queue's MTT (levels 0 and 1) and checks that every byte the queue uses is mapped.
 * `access` is what the device does to the queue ("read" for SQ/RQ, "write" for CQ).
 */
export async function resolveQueueBuffer(
  dma: Dma,
  mtt: MttDescriptor,
  size: number,
  access: "read" | "write",
  context: string,
): Promise<QueueBuffer> {
  if (mtt.pageShift < 12 || mtt.pageShift > 40)
    fail(CmdStatus.BAD_PARAM, `${context}: page shift ${mtt.pageShift}`);
  const pageSize = 2 ** mtt.pageShift;
  if (mtt.count < 1) fail(CmdStatus.BAD_PARAM, `${context}: no MTT entries`);
  if (mtt.offset < 0 || mtt.offset >= pageSize)
    fail(CmdStatus.BAD_PARAM, `${context}: page offset ${mtt.offset}`);
  const needed = Math.ceil((mtt.offset + size) / pageSize);
  if (needed > mtt.count) {
    fail(
      CmdStatus.BAD_PARAM,
      `${context}: ${mtt.count} pages of ${pageSize} cannot hold ${size} bytes at offset ${mtt.offset}`,
    );
  }
  let pages: bigint[];
  if (mtt.level === 0) {
    if (mtt.entries.length < needed)
      fail(CmdStatus.BAD_PARAM, `${context}: ${mtt.entries.length} inline entries`);
    pages = mtt.entries.slice(0, needed);
  } else if (mtt.level === 1) {
    const table = mtt.entries[0] ?? 0n;
    if (!dma.mapped(table, needed * 8, "read"))
      fail(CmdStatus.DMA_FAULT, `${context}: MTT table 0x${table.toString(16)} unmapped`);
    const bytes = await dma.read(table, needed * 8, `${context} MTT`);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    pages = [];
    for (let i = 0; i < needed; i++) pages.push(dv.getBigUint64(i * 8, true));
  } else {
    fail(CmdStatus.BAD_PARAM, `${context}: MTT level ${mtt.level} not supported for queues`);
  }
  const buf = new QueueBuffer(pages, mtt.pageShift, mtt.offset, size);
  for (let i = 0; i < needed; i++) {
    const start = Math.max(mtt.offset, i * pageSize);
    const end = Math.min(mtt.offset + size, (i + 1) * pageSize);
    const addr = buf.address(start - mtt.offset);
    if (!dma.mapped(addr, end - start, access)) {
      fail(CmdStatus.DMA_FAULT, `${context}: page ${i} at 0x${addr.toString(16)} (+${end - start}) unmapped`);
    }
  }
  return buf;
}

/**
 * Lazy translation for memory regions: finds the data page holding byte `index << pageShift` by
 * walking the MTT levels in guest memory, as hardware does at access time.
 */
export class MttWalker {
  constructor(
    private readonly dma: Dma,
    readonly mtt: MttDescriptor,
  ) {}

  /** Address of data page `index` (0-based). */
  async page(index: number, context: string): Promise<bigint> {
    if (!Number.isInteger(index) || index < 0 || index >= this.mtt.count) {
      throw new RangeError(`page ${index} outside 0..${this.mtt.count - 1}`);
    }
    if (this.mtt.level === 0) {
      const e = this.mtt.entries[index];
      if (e === undefined) throw new RangeError(`inline MTT has no entry ${index}`);
      return e;
    }
    return this.entry(1, index, context);
  }

  /** Entry `index` of the level-`level` table (level 1 holds data page addresses). */
  private async entry(level: number, index: number, context: string): Promise<bigint> {
    const top = this.mtt.entries[0] ?? 0n;
    if (level === this.mtt.level)
      return this.dma.readU64(top + BigInt(index) * 8n, `${context} MTT L${level}`);
    const tps = this.mtt.tablePageSize ?? 4096;
    const byte = index * 8;
    const tablePage = await this.entry(level + 1, Math.floor(byte / tps), context);
    return this.dma.readU64(tablePage + BigInt(byte % tps), `${context} MTT L${level}`);
  }
}
