/**
 * The views of a trace the rules share: the QPs, every WR with its completions and the QP state
 * it was posted in, the drains, and which WRs must have completed by when.
 */
import type { CqeRecord, TraceRecord } from "../protocol/trace.ts";
import { postedWrs, WC_SUCCESS, WC_WR_FLUSH_ERR } from "../protocol/trace.ts";

export type QpState = "RESET" | "INIT" | "RTR" | "RTS" | "SQD" | "SQE" | "ERR" | "UNKNOWN";
export type Queue = "sq" | "rq";

export interface QpInfo {
  name: string;
  qpNum: number | undefined;
  scq: string | undefined;
  rcq: string | undefined;
}

export interface Completion {
  rec: CqeRecord;
  /** the record's index in the trace */
  at: number;
  wr: Wr | undefined;
}

export interface Wr {
  qp: string;
  queue: Queue;
  op: string;
  wrId: number;
  call: number;
  /** the index of its post record */
  at: number;
  /** its place among the WRs posted to its queue */
  seq: number;
  signaled: boolean;
  accepted: boolean;
  rc: number;
  /** its index within its post call */
  indexInCall: number;
  postedIn: QpState;
  completions: Completion[];
}

export interface Drain {
  qp: string;
  which: "qp" | "sq" | "rq";
  at: number;
  /** the index of drain_ret; undefined: ib_drain_* never returned */
  retAt: number | undefined;
}

export interface PostCall {
  call: number;
  qp: string;
  queue: Queue;
  at: number;
  retAt: number | undefined;
  rc: number;
  bad: number | null;
  postedIn: QpState;
  wrs: Wr[];
}

interface Transition {
  at: number;
  state: QpState;
}

const ERR_EVENT_CODES = new Set([1, 2, 3]); // IB_EVENT_QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR
const LEFT_CONNECTION = new Set([
  "DISCONNECTED",
  "TIMEWAIT_EXIT",
  "CONNECT_ERROR",
  "UNREACHABLE",
  "REJECTED",
]);

export function isError(c: CqeRecord): boolean {
  return c.status !== WC_SUCCESS;
}
export function isFlush(c: CqeRecord): boolean {
  return c.status === WC_WR_FLUSH_ERR;
}
export function drainCovers(d: Drain, q: Queue): boolean {
  return d.which === "qp" || d.which === q;
}

/** One trace record as evidence: the record as the trace has it, prefixed with its index. */
export function quote(records: readonly TraceRecord[], at: number): string {
  return `#${at} ${JSON.stringify(records[at])}`;
}

export class TraceModel {
  readonly qps = new Map<string, QpInfo>();
  readonly wrs: Wr[] = [];
  readonly calls: PostCall[] = [];
  readonly completions: Completion[] = [];
  readonly drains: Drain[] = [];
  private readonly transitions = new Map<string, Transition[]>();

  constructor(readonly records: readonly TraceRecord[]) {
    this.collectQps();
    this.collectStates();
    this.collectWrs();
    this.collectCompletions();
    this.collectDrains();
  }

  private setState(qp: string, at: number, state: QpState): void {
    const list = this.transitions.get(qp) ?? [];
    list.push({ at, state });
    this.transitions.set(qp, list);
  }

  private collectQps(): void {
    for (const r of this.records) {
      if (r.ev === "create" && r.kind === "qp")
        this.qps.set(r.name, { name: r.name, qpNum: r.qp_num, scq: r.scq, rcq: r.rcq });
    }
  }

  private collectStates(): void {
    const modifies = new Map<number, { qp: string; state: string }>();
    this.records.forEach((r, at) => {
      switch (r.ev) {
        case "create":
          if (r.kind === "qp") this.setState(r.name, at, r.cm ? "UNKNOWN" : "RESET");
          break;
        case "cm":
          if (!this.qps.has(r.id)) break;
          if (r.event === "ESTABLISHED") this.setState(r.id, at, "RTS");
          else if (LEFT_CONNECTION.has(r.event) && this.stateAt(r.id, at) !== "ERR")
            this.setState(r.id, at, "UNKNOWN");
          break;
        case "modify":
          modifies.set(r.call, { qp: r.qp, state: r.state });
          break;
        case "modify_ret": {
          const m = modifies.get(r.call);
          if (m && r.rc === 0) this.setState(m.qp, at, m.state as QpState);
          break;
        }
        case "drain":
          // ib_drain_* moves the whole QP to ERR before posting its marker
          this.setState(r.qp, at, "ERR");
          break;
        case "cqe":
          // an RC QP whose WR completes in error other than a flush is in the Error state
          if (r.status !== WC_SUCCESS && r.status !== WC_WR_FLUSH_ERR) this.setState(r.qp, at, "ERR");
          break;
        case "async":
          if (ERR_EVENT_CODES.has(r.code)) this.setState(r.qp, at, "ERR");
          break;
        case "query":
          if (r.rc === 0 && r.state && r.state !== "UNSET") this.setState(r.qp, at, r.state as QpState);
          break;
        default:
          break;
      }
    });
  }

  /** The QP's state just before record `at`, as far as the trace tells. */
  stateAt(qp: string, at: number): QpState {
    let state: QpState = "UNKNOWN";
    for (const t of this.transitions.get(qp) ?? []) {
      if (t.at >= at) break;
      state = t.state;
    }
    return state;
  }

  finalState(qp: string): QpState {
    return this.stateAt(qp, this.records.length);
  }

  /** The intervals [from, to) of records during which the QP was in `state`. */
  intervalsIn(qp: string, state: QpState): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    const list = this.transitions.get(qp) ?? [];
    list.forEach((t, i) => {
      if (t.state !== state) return;
      const next = list.slice(i + 1).find((n) => n.state !== state);
      out.push([t.at, next ? next.at : this.records.length]);
    });
    return out;
  }

  private collectWrs(): void {
    const rets = new Map<number, number>();
    this.records.forEach((r, at) => {
      if (r.ev === "post_ret") rets.set(r.call, at);
    });
    const seqs = new Map<string, number>();
    const byCall = new Map<number, PostCall>();
    for (const p of postedWrs(this.records)) {
      const key = `${p.qp}/${p.queue}`;
      const seq = seqs.get(key) ?? 0;
      seqs.set(key, seq + 1);
      let call = byCall.get(p.call);
      if (!call) {
        const retAt = rets.get(p.call);
        const ret = retAt === undefined ? undefined : this.records[retAt];
        call = {
          call: p.call,
          qp: p.qp,
          queue: p.queue,
          at: p.at,
          retAt,
          rc: p.rc,
          bad: ret?.ev === "post_ret" ? ret.bad : null,
          postedIn: this.stateAt(p.qp, p.at),
          wrs: [],
        };
        byCall.set(p.call, call);
        this.calls.push(call);
      }
      const wr: Wr = {
        ...p,
        seq,
        indexInCall: call.wrs.length,
        postedIn: call.postedIn,
        completions: [],
      };
      call.wrs.push(wr);
      this.wrs.push(wr);
    }
  }

  private collectCompletions(): void {
    const key = (qp: string, queue: string, call: number, wrId: number) => `${qp}/${queue}/${call}/${wrId}`;
    const index = new Map(this.wrs.map((w) => [key(w.qp, w.queue, w.call, w.wrId), w]));
    this.records.forEach((r, at) => {
      if (r.ev !== "cqe") return;
      const wr = index.get(key(r.qp, r.queue, r.call, r.wr_id));
      const c: Completion = { rec: r, at, wr };
      wr?.completions.push(c);
      this.completions.push(c);
    });
  }

  private collectDrains(): void {
    const rets = new Map<number, number>();
    this.records.forEach((r, at) => {
      if (r.ev === "drain_ret") rets.set(r.call, at);
    });
    this.records.forEach((r, at) => {
      if (r.ev === "drain") this.drains.push({ qp: r.qp, which: r.which, at, retAt: rets.get(r.call) });
    });
  }

  /** An unsignaled send WR followed on its queue by a signaled one that completed successfully. */
  completedSilently(w: Wr): boolean {
    if (w.queue !== "sq" || w.signaled) return false;
    return this.wrs.some(
      (o) =>
        o.qp === w.qp &&
        o.queue === "sq" &&
        o.seq > w.seq &&
        o.completions.some((c) => c.rec.status === WC_SUCCESS),
    );
  }

  /**
   * Whether the WR must produce a completion once its QP is in ERR: every accepted receive and
   * signaled send, every WR posted in ERR, but not an unsignaled send posted before the error
   * (it may have executed without a completion) nor one a later success covers.
   */
  owesCompletion(w: Wr): boolean {
    if (!w.accepted || this.completedSilently(w)) return false;
    if (w.queue === "rq" || w.signaled) return true;
    return w.postedIn === "ERR" || w.postedIn === "SQE";
  }

  /**
   * The record index by which an owed completion must be in the trace: the end of the trace when
   * the QP ends in ERR (the run settles the CQs before it ends), else none.
   */
  deadline(w: Wr): number | undefined {
    if (!this.owesCompletion(w)) return undefined;
    return this.finalState(w.qp) === "ERR" ? this.records.length : undefined;
  }

  cqOf(qp: string, q: Queue): string | undefined {
    const info = this.qps.get(qp);
    return q === "sq" ? info?.scq : info?.rcq;
  }
}
