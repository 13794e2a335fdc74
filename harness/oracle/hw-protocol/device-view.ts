/**
 * What one device's trace says about its objects, read in order: which QPs, CQs, EQs, MRs, AHs,
 * GIDs and doorbell pages exist, since when, and how each that is gone went (its destroy command,
 * or a reset of the device); which CQs a QP completes on; how a QP entered ERROR; the key each
 * MR's MPT holds. Rule hw-protocol asks it about the object a refused command or a doorbell names.
 */
import type { ErdmaTraceEventOf } from "../../protocol/hw-trace.ts";

export type ObjectKind = "qp" | "cq" | "eq" | "mr" | "ah" | "gid" | "db";

/** How an object stopped existing. */
export interface Gone {
  t: number;
  /** the command that destroyed it (DESTROY_QP), or the reset that lost it */
  by: string;
  /** set when a reset lost it: whether the driver ordered the reset (DEV_CTRL.RESET) */
  reset?: { driverOrdered: boolean; reason: string };
}

interface Life {
  created?: number;
  gone?: Gone;
}

/** How a QP entered ERROR: by a command, or by the device on its own (a WQE failed, the LLP closed). */
export interface ErrorEntry {
  t: number;
  byDevice: boolean;
  why?: string;
}

interface QpFacts {
  cqns: number[];
  error?: ErrorEntry;
}

/** The key an MR's MPT holds, and what set it. */
export interface MptKey {
  key: number;
  t: number;
  by: string;
}

const DESTROYED_BY: Record<ObjectKind, string> = {
  qp: "DESTROY_QP",
  cq: "DESTROY_CQ",
  eq: "DESTROY_EQ",
  mr: "DEREG_MR",
  ah: "DESTROY_AH",
  gid: "SET_GID (delete)",
  db: "FREE_DB",
};

/** The reset reason erdma's driver writes (erdma_main.c erdma_hw_reset); others come from the platform. */
const DRIVER_RESET = "DEV_CTRL.RESET";

export function objectName(kind: ObjectKind, id: number): string {
  switch (kind) {
    case "mr":
      return `MR 0x${id.toString(16)}`;
    case "db":
      return `doorbell page ${id}`;
    default:
      return `${kind.toUpperCase()} ${id}`;
  }
}

/** The table key of an object: an MR by its MPT index (its key changes with fast registration). */
function keyOf(kind: ObjectKind, id: number): string {
  return kind === "mr" ? `mr/${id >>> 8}` : `${kind}/${id}`;
}

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) ? v : undefined;
}

/** The commands that make or remove an object with no state event: its kind, the detail naming it, which of the two. */
const OBJECT_COMMANDS: Partial<
  Record<string, { kind: ObjectKind; idField: string; creates: (detail: Record<string, unknown>) => boolean }>
> = {
  CREATE_AH: { kind: "ah", idField: "ahn", creates: () => true },
  DESTROY_AH: { kind: "ah", idField: "ahn", creates: () => false },
  SET_GID: { kind: "gid", idField: "index", creates: (d) => d.op !== "del" },
  ALLOC_DB: { kind: "db", idField: "sdb", creates: () => true },
  FREE_DB: { kind: "db", idField: "sdb", creates: () => false },
};

export class DeviceView {
  private readonly lives = new Map<string, Life>();
  private readonly qpFacts = new Map<number, QpFacts>();
  private readonly mptKeys = new Map<number, MptKey>();

  /** Takes a state event: objects created and destroyed, the device reset, a QP entering ERROR. */
  state(e: ErdmaTraceEventOf<"state">): void {
    if (e.object === "device") {
      if (e.to.startsWith("reset")) this.reset(e.t, e.to);
      return;
    }
    if (e.object === "cmdq") return;
    const kind: ObjectKind = e.object;
    if (e.from === "none") this.create(kind, e.id, e.t);
    if (e.to === "destroyed" || e.to === "deregistered") this.destroy(kind, e.id, e.t);
    if (kind === "mr" && e.from === "none")
      this.mptKeys.set(e.id >>> 8, { key: e.id & 0xff, t: e.t, by: "REG_MR" });
    if (kind === "qp" && e.to.startsWith("ERROR") && !e.from.startsWith("ERROR")) {
      const byDevice = e.to !== "ERROR";
      const why = byDevice ? e.to.replace(/^ERROR \((.*)\)$/, "$1") : undefined;
      this.facts(e.id).error = { t: e.t, byDevice, ...(why ? { why } : {}) };
    }
  }

  /** Takes a command the device completed: the objects it made or removed that have no state event. */
  command(e: ErdmaTraceEventOf<"cmd">): void {
    if (e.status !== 0) return;
    const d = e.detail ?? {};
    if (e.name === "CREATE_QP") {
      const qpn = num(d.qpn);
      if (qpn !== undefined)
        this.facts(qpn).cqns = [num(d.sqCqn), num(d.rqCqn)].filter((x): x is number => x !== undefined);
      return;
    }
    const made = OBJECT_COMMANDS[e.name];
    const id = made && num(d[made.idField]);
    if (made === undefined || id === undefined) return;
    if (made.creates(d)) this.create(made.kind, id, e.t);
    else this.destroy(made.kind, id, e.t);
  }

  /** Takes a WQE the device executed: a fast registration gives its MPT a new key. */
  wqe(e: ErdmaTraceEventOf<"wqe">): void {
    if (e.op !== "REG_MR" || e.status !== 0 || !e.mr) return;
    const stag = Number.parseInt(e.mr.stag, 16);
    if (!Number.isInteger(stag)) return;
    this.mptKeys.set(stag >>> 8, {
      key: stag & 0xff,
      t: e.t,
      by: `the REG_MR WQE QP ${e.qpn} ${e.queue} WQE ${e.index}`,
    });
  }

  /** Whether the object exists now, as far as this trace tells. */
  exists(kind: ObjectKind, id: number): boolean {
    const life = this.lives.get(keyOf(kind, id));
    return life !== undefined && life.gone === undefined;
  }

  /** How the object stopped existing, if the trace shows it. */
  gone(kind: ObjectKind, id: number): Gone | undefined {
    return this.lives.get(keyOf(kind, id))?.gone;
  }

  /** When the object was created, if this trace shows it. */
  created(kind: ObjectKind, id: number): number | undefined {
    return this.lives.get(keyOf(kind, id))?.created;
  }

  /**
   * Why the object is not there, in words to follow its name: " after DESTROY_QP of QP 3
   * (t=21837.855)", ", which the device does not have (...)".
   */
  absence(kind: ObjectKind, id: number): string {
    const gone = this.gone(kind, id);
    const name = objectName(kind, id);
    if (!gone) return `, which the device does not have (no creation of ${name} in this trace)`;
    if (gone.reset) return ` after ${name} was lost in ${gone.by} (t=${fmt(gone.t)})`;
    return ` after ${gone.by} of ${name} (t=${fmt(gone.t)})`;
  }

  /** The CQs a QP completes on (CREATE_QP's send and receive CQ). */
  cqnsOf(qpn: number): number[] {
    return this.qpFacts.get(qpn)?.cqns ?? [];
  }

  /** The QPs that complete on a CQ, as far as this trace tells. */
  qpsOn(cqn: number): number[] {
    return [...this.qpFacts].filter(([, f]) => f.cqns.includes(cqn)).map(([qpn]) => qpn);
  }

  /** How the QP entered ERROR, if it is in it. */
  errorEntry(qpn: number): ErrorEntry | undefined {
    return this.qpFacts.get(qpn)?.error;
  }

  mptKey(mpt: number): MptKey | undefined {
    return this.mptKeys.get(mpt);
  }

  private facts(qpn: number): QpFacts {
    let f = this.qpFacts.get(qpn);
    if (!f) {
      f = { cqns: [] };
      this.qpFacts.set(qpn, f);
    }
    return f;
  }

  private create(kind: ObjectKind, id: number, t: number): void {
    this.lives.set(keyOf(kind, id), { created: t });
    if (kind === "qp") this.qpFacts.set(id, { cqns: [] });
  }

  private destroy(kind: ObjectKind, id: number, t: number): void {
    const life = this.lives.get(keyOf(kind, id)) ?? {};
    life.gone = { t, by: DESTROYED_BY[kind] };
    this.lives.set(keyOf(kind, id), life);
    if (kind === "qp") delete this.facts(id).error;
  }

  private reset(t: number, to: string): void {
    const reason = to.replace(/^reset \((.*)\)$/, "$1");
    const gone: Gone = {
      t,
      by: `a device reset (${reason})`,
      reset: { driverOrdered: reason === DRIVER_RESET, reason },
    };
    for (const life of this.lives.values()) life.gone ??= gone;
    this.qpFacts.clear();
    this.mptKeys.clear();
  }
}

/** A trace time (ms on the device server's clock) as problems quote it. */
export function fmt(t: number): string {
  return String(Math.round(t * 1000) / 1000);
}
