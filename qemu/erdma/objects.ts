/** Object tables: the device's QPC/CQC/EQC/MPT arrays, indexed by the number the driver chose. */

import type { CmdObjectKind } from "./status.ts";

export class ObjectTable<T> {
  private readonly items = new Map<number, T>();

  constructor(
    readonly kind: CmdObjectKind,
    /** valid ids are 0 .. limit-1 */
    readonly limit: number,
  ) {}

  inRange(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.limit;
  }

  get(id: number): T | undefined {
    return this.items.get(id);
  }

  has(id: number): boolean {
    return this.items.has(id);
  }

  set(id: number, item: T): void {
    this.items.set(id, item);
  }

  delete(id: number): boolean {
    return this.items.delete(id);
  }

  get size(): number {
    return this.items.size;
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }
}
