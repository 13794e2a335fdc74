/**
 * Check (c): the producer indexes a REFLUSH carries against the doorbells the device saw for that
 * QP's queues (contract.ts, reflush). Each queue's index is a value the driver's producer index
 * held: one of its doorbells' (0 before the first). It may be ahead of the doorbells seen so far by
 * doorbells still in flight (they must arrive), or behind by a post that raced the worker's read
 * (another REFLUSH, or the QP's DESTROY_QP, must follow). REFLUSHes of one QP never go back.
 */
import { fmt } from "./device-view.ts";

const INDEX_BITS = 16;
const MOD = 2 ** INDEX_BITS;
const HALF = MOD / 2;

/** Entries from `from` forward to `to` on a 16-bit ring. */
function ahead(to: number, from: number): number {
  return (((to - from) % MOD) + MOD) % MOD;
}

type Queue = "sq" | "rq";

interface QueueHistory {
  /** every producer index a doorbell carried, and 0 (the index before the first) */
  rung: Set<number>;
  last: number;
}

/** A REFLUSH older than a doorbell the device had seen: it needs a later REFLUSH or the QP's destroy. */
interface Stale {
  at: number;
  t: number;
  queue: Queue;
  carried: number;
  seen: number;
}

/** A REFLUSH index ahead of every doorbell seen so far: a later doorbell must carry it. */
interface InFlight {
  at: number;
  t: number;
  queue: Queue;
  carried: number;
  seen: number;
}

interface QpLedger {
  /** the trace shows the QP's creation: its every doorbell is in it */
  whole: boolean;
  sq: QueueHistory;
  rq: QueueHistory;
  reflushed?: { sq: number; rq: number; t: number };
  stale: Stale[];
  inFlight: InFlight[];
}

/** One disagreement, as the rule words it. */
export interface ReflushFinding {
  at: number;
  t: number;
  qpn: number;
  reason: string;
}

const NAME: Record<Queue, string> = { sq: "SQ", rq: "RQ" };

function fresh(whole: boolean): QpLedger {
  return {
    whole,
    sq: { rung: new Set([0]), last: 0 },
    rq: { rung: new Set([0]), last: 0 },
    stale: [],
    inFlight: [],
  };
}

function doorbellsOf(h: QueueHistory): string {
  const values = [...h.rung].filter((v) => v !== 0);
  if (values.length === 0) return "none";
  const shown = values.slice(-6).join(", ");
  return values.length > 6 ? `..., ${shown}` : shown;
}

/** The REFLUSH ledger of one device. */
export class ReflushLedger {
  private readonly qps = new Map<number, QpLedger>();

  /** A QP was created: its indexes start at 0. */
  created(qpn: number): void {
    this.qps.set(qpn, fresh(true));
  }

  /** The QP was destroyed: a stale REFLUSH needs no successor (its work was cancelled). */
  destroyed(qpn: number): ReflushFinding[] {
    const l = this.qps.get(qpn);
    this.qps.delete(qpn);
    return l ? this.unmet(qpn, l, "before its DESTROY_QP") : [];
  }

  /** An SQ or RQ doorbell of an existing QP. */
  doorbell(qpn: number, queue: Queue, pi: number): void {
    const l = this.ledger(qpn);
    l[queue].rung.add(pi);
    l[queue].last = pi;
    l.inFlight = l.inFlight.filter((f) => f.queue !== queue || f.carried !== pi);
  }

  /** A REFLUSH the device accepted; its problems (a value never rung, going back). */
  reflush(at: number, t: number, qpn: number, pis: { sq: number; rq: number }): ReflushFinding[] {
    const l = this.ledger(qpn);
    const out: ReflushFinding[] = [];
    // a later REFLUSH answers an earlier stale one if it carries at least the doorbell it missed
    l.stale = l.stale.filter((s) => ahead(pis[s.queue], s.seen) >= HALF);
    for (const queue of ["sq", "rq"] as const) {
      const h = l[queue];
      const v = pis[queue];
      const name = `REFLUSH of QP ${qpn} carries ${queue}_pi ${v}`;
      const before = l.reflushed?.[queue];
      if (v >= MOD) {
        out.push({
          at,
          t,
          qpn,
          reason: `${name}: the driver's ${queue}_pi is a u16 (erdma_verbs.h kern_qp)`,
        });
        continue;
      }
      if (before !== undefined && v !== before && ahead(before, v) < HALF) {
        out.push({
          at,
          t,
          qpn,
          reason: `${name} after a REFLUSH that carried ${before} (t=${fmt(l.reflushed?.t ?? 0)}): the ${NAME[queue]} producer index went back`,
        });
        continue;
      }
      if (v === h.last) continue;
      if (ahead(v, h.last) < HALF) {
        l.inFlight.push({ at, t, queue, carried: v, seen: h.last });
      } else if (h.rung.has(v) || !l.whole) {
        // (a QP created before this trace may have rung it before)
        l.stale.push({ at, t, queue, carried: v, seen: h.last });
      } else {
        out.push({
          at,
          t,
          qpn,
          reason: `${name}, which no ${NAME[queue]} doorbell of QP ${qpn} carried (doorbells: ${doorbellsOf(h)})`,
        });
      }
    }
    l.reflushed = { ...pis, t };
    return out;
  }

  /** At the end of the trace: the REFLUSHes that were never made good. */
  end(): ReflushFinding[] {
    return [...this.qps].flatMap(([qpn, l]) => this.unmet(qpn, l, "in this trace"));
  }

  private unmet(qpn: number, l: QpLedger, where: string): ReflushFinding[] {
    const destroyed = where !== "in this trace";
    return [
      ...l.inFlight.map((f) => ({
        at: f.at,
        t: f.t,
        qpn,
        reason: `REFLUSH of QP ${qpn} carries ${f.queue}_pi ${f.carried}, ahead of every ${NAME[f.queue]} doorbell the device saw (the last: ${f.seen}), and no doorbell carrying it came ${where}`,
      })),
      // a stale REFLUSH before the QP's destroy is the driver cancelling its own work (the contract)
      ...(destroyed
        ? []
        : l.stale.map((s) => ({
            at: s.at,
            t: s.t,
            qpn,
            reason: `REFLUSH of QP ${qpn} carries ${s.queue}_pi ${s.carried} though the device had seen the ${NAME[s.queue]} doorbell move to ${s.seen}, and no later REFLUSH or DESTROY_QP of QP ${qpn} follows: the WQEs from ${s.carried} to ${s.seen} are never reflushed`,
          }))),
    ];
  }

  private ledger(qpn: number): QpLedger {
    let l = this.qps.get(qpn);
    if (!l) {
      l = fresh(false);
      this.qps.set(qpn, l);
    }
    return l;
  }
}
