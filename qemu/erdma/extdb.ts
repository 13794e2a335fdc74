/**
 * Extended doorbell pages (ALLOC_DB/FREE_DB, advertised by CAP_FLAGS_EXTEND_DB): each user context
 * gets its own SQ, RQ and CQ doorbell page in BAR0, named by page index (the driver maps
 * func_bar + (off << PAGE_SHIFT), erdma_verbs.c:1397-1399). Pages never include the shared pages
 * kernel queues use (SQ page 95, the first RQ and CQ pages). Doorbells are decoded by the space
 * they land in.
 *
 * The response's page fields are named for the role the driver gives them, not for their names in
 * erdma_hw.h: Linux 6.12 and 7.2 map the page in ALLOC_DB_RESP_RDB (63:48) as the context's CQ
 * doorbell page and the one in ALLOC_DB_RESP_CDB (47:32) as its RQ doorbell page
 * (erdma_verbs.c:1398-1399; 7.2 :1510-1511), and rdma-core rings CQ and RQ doorbells there. So the
 * device hands out `rdb` (63:48) from the CQ doorbell space and `cdb` (47:32) from the RQ space;
 * the other way round, a user CQ's arm lands in the RQ space and is lost (seen with the real
 * driver and rdma-core 44). CREATE_QP's RQDB and CREATE_CQ's CQDB fields carry the wire values
 * back (rdb_off and cdb_off) and are checked against the allocation by those names.
 */
import {
  BAR0_SIZE,
  CQDB_SPACE_OFFSET,
  HW_PAGE_SHIFT,
  RQDB_SPACE_OFFSET,
  RQDB_SPACE_SIZE,
  SDB_SHARED_PAGE_INDEX,
  SQDB_SPACE_OFFSET,
  SQDB_SPACE_SIZE,
} from "./hw.ts";

export interface ExtDbAllocation {
  sdb: number;
  rdb: number;
  cdb: number;
}

function pages(start: number, end: number, skip: number[]): number[] {
  const out: number[] = [];
  for (let p = start >> HW_PAGE_SHIFT; p < end >> HW_PAGE_SHIFT; p++) if (!skip.includes(p)) out.push(p);
  return out;
}

export class ExtDbPages {
  private readonly free: { sdb: number[]; rdb: number[]; cdb: number[] };
  private readonly used = new Map<string, ExtDbAllocation>();

  constructor() {
    this.free = {
      sdb: pages(SQDB_SPACE_OFFSET, SQDB_SPACE_OFFSET + SQDB_SPACE_SIZE, [SDB_SHARED_PAGE_INDEX]),
      // the wire's RDB field is the context's CQ doorbell page, CDB its RQ page (see above)
      rdb: pages(CQDB_SPACE_OFFSET, BAR0_SIZE, [CQDB_SPACE_OFFSET >> HW_PAGE_SHIFT]),
      cdb: pages(RQDB_SPACE_OFFSET, RQDB_SPACE_OFFSET + RQDB_SPACE_SIZE, [
        RQDB_SPACE_OFFSET >> HW_PAGE_SHIFT,
      ]),
    };
  }

  alloc(): ExtDbAllocation | undefined {
    if (this.free.sdb.length === 0 || this.free.rdb.length === 0 || this.free.cdb.length === 0)
      return undefined;
    const a = {
      sdb: this.free.sdb.shift() ?? 0,
      rdb: this.free.rdb.shift() ?? 0,
      cdb: this.free.cdb.shift() ?? 0,
    };
    this.used.set(key(a), a);
    return a;
  }

  /** False when (sdb, rdb, cdb) is not an allocation of this device. */
  release(a: ExtDbAllocation): boolean {
    const k = key(a);
    if (!this.used.has(k)) return false;
    this.used.delete(k);
    this.free.sdb.unshift(a.sdb);
    this.free.rdb.unshift(a.rdb);
    this.free.cdb.unshift(a.cdb);
    return true;
  }

  isAllocated(kind: "sdb" | "rdb" | "cdb", page: number): boolean {
    for (const a of this.used.values()) if (a[kind] === page) return true;
    return false;
  }

  get count(): number {
    return this.used.size;
  }
}

function key(a: ExtDbAllocation): string {
  return `${a.sdb}/${a.rdb}/${a.cdb}`;
}
