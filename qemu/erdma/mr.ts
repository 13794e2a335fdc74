/**
 * Memory regions: the MPT entry REG_MR writes (hw.h:248-280) — key, PD, type, access rights, the
 * IOVA range and its MTT — and translation of IOVA ranges to guest addresses for the data path.
 * The stag is mpt_index << 8 | key (erdma_verbs.c:153-155, :1032).
 */
import type { Dma } from "./dma.ts";
import { MrRight } from "./hw.ts";
import { type MttDescriptor, MttWalker } from "./mtt.ts";

export type MrKind = "normal" | "frmr" | "dma";

export interface Segment {
  address: bigint;
  length: number;
}

export function rightsNames(bits: number): string[] {
  return Object.entries(MrRight)
    .filter(([, bit]) => (bits & bit) !== 0)
    .map(([name]) => name.toLowerCase());
}

export class MemoryRegion {
  private readonly walker: MttWalker | undefined;
  /** an FRMR registered with its page list in the REG_MR WQE (MTT type 0) */
  private inlinePages: bigint[] | undefined;

  constructor(
    readonly mptIndex: number,
    public key: number,
    readonly pd: number,
    readonly kind: MrKind,
    /** MrRight bits */
    public rights: number,
    public valid: boolean,
    public va: bigint,
    public length: bigint,
    readonly mtt: MttDescriptor | undefined,
    dma: Dma,
  ) {
    this.walker = mtt ? new MttWalker(dma, mtt) : undefined;
  }

  get stag(): number {
    return ((this.mptIndex << 8) | this.key) >>> 0;
  }

  allows(right: number): boolean {
    return (this.rights & right) === right;
  }

  /**
   * The REG_MR work request (fast registration, erdma_qp.c IB_WR_REG_MR): a new key, IOVA range and
   * rights; pages inline in the WQE or in the FRMR's own table, which the driver filled.
   */
  fastRegister(r: { key: number; va: bigint; length: bigint; rights: number; inlinePages?: bigint[] }): void {
    this.key = r.key;
    this.va = r.va;
    this.length = r.length;
    this.rights = r.rights;
    this.inlinePages = r.inlinePages;
    this.valid = true;
  }

  /**
   * Guest address segments for [iova, iova+length). DMA MRs map IOVA = guest address; normal MRs
   * walk the MTT. Throws RangeError outside the region.
   */
  async translate(iova: bigint, length: number, context: string): Promise<Segment[]> {
    if (length <= 0) return [];
    if (this.kind === "dma") return [{ address: iova, length }];
    if (iova < this.va || iova + BigInt(length) > this.va + this.length) {
      throw new RangeError(`[0x${iova.toString(16)}, +${length}) outside MR 0x${this.stag.toString(16)}`);
    }
    const walker = this.walker;
    const mtt = this.mtt;
    const inline = this.inlinePages;
    if (!mtt || (!walker && !inline))
      throw new RangeError(`MR 0x${this.stag.toString(16)} has no translation`);
    const shift = BigInt(mtt.pageShift);
    const pageSize = 1n << shift;
    const base = this.va & ~(pageSize - 1n);
    const out: Segment[] = [];
    let at = iova;
    let left = BigInt(length);
    while (left > 0n) {
      const rel = at - base;
      const index = Number(rel >> shift);
      const within = rel & (pageSize - 1n);
      const chunk = left < pageSize - within ? left : pageSize - within;
      const page = inline ? inline[index] : await walker?.page(index, context);
      if (page === undefined)
        throw new RangeError(
          `MR 0x${this.stag.toString(16)} has no page ${index}: registered with ${inline?.length ?? 0} page(s) of ${pageSize} bytes for ${this.length} bytes at 0x${this.va.toString(16)}`,
        );
      const address = page + within;
      const last = out[out.length - 1];
      if (last && last.address + BigInt(last.length) === address) last.length += Number(chunk);
      else out.push({ address, length: Number(chunk) });
      at += chunk;
      left -= chunk;
    }
    return out;
  }

  toJSON(): Record<string, unknown> {
    return {
      stag: `0x${this.stag.toString(16)}`,
      mptIndex: this.mptIndex,
      key: this.key,
      pd: this.pd,
      kind: this.kind,
      rights: rightsNames(this.rights),
      valid: this.valid,
      va: `0x${this.va.toString(16)}`,
      length: `0x${this.length.toString(16)}`,
      mtt: this.mtt
        ? {
            level: this.mtt.level,
            count: this.mtt.count,
            pageShift: this.mtt.pageShift,
            entries: this.mtt.entries.map((e) => `0x${e.toString(16)}`),
          }
        : undefined,
    };
  }
}
