/**
 * The views of a trace the rules share: the QPs, every WR with its completions and the QP state
 * it was posted in, the drains with their observed ERR transitions and markers, and which WRs must
 * have completed by when. A drain's marker is a WR of its queue like any other (posted in ERR, it
 * must be flushed, in order, once); QP states are only what the trace shows (a modify that
 * returned 0, a query, an error completion or event), never assumed from a drain.
 */
import type { PostOp } from "../protocol/commands.ts";
import type { CqeRecord, TraceRecord, TraceRecordOf } from "../protocol/trace.ts";
import { postedWrs, WC_SUCCESS, WC_WR_FLUSH_ERR } from "../protocol/trace.ts";

export type MarkerCqeRecord = TraceRecordOf<"drain_marker_cqe">;

/** DESTROYED: a destroy step took the QP down (its WRs owe no completion from then on) */
export type QpState = "RESET" | "INIT" | "RTR" | "RTS" | "SQD" | "SQE" | "ERR" | "DESTROYED" | "UNKNOWN";
export type Queue = "sq" | "rq";

export interface QpInfo {
  name: string;
  qpNum: number | undefined;
  scq: string | undefined;
  rcq: string | undefined;
}

export interface Completion {
  rec: CqeRecord | MarkerCqeRecord;
  /** the record's index in the trace */
  at: number;
  wr: Wr | undefined;
}

export interface Wr {
  qp: string;
  queue: Queue;
  op: PostOp;
  wrId: number;
  call: number;
  /** the index of its post record */
  at: number;
  /** its place among the WRs posted to its queue */
  seq: number;
  /** a receive always is (only sends can go without a completion) */
  signaled: boolean;
  accepted: boolean;
  rc: number;
  /** its index within its post call */
  indexInCall: number;
  postedIn: QpState;
  completions: Completion[];
  /** a drain's marker: `call` is the drain's, wrId the marker's as the executor saw it (-1: none) */
  marker?: boolean;
  /** made invalid on purpose (bad=): the driver must refuse it */
  invalid: boolean;
}

export interface DrainQueue {
  queue: Queue;
  /** the ERR transition the drain made for this queue: its modify record and the return code */
  modify?: { at: number; retAt: number | undefined; rc: number | undefined };
  /** the marker WR, once its post was seen */
  marker?: Wr;
}

export interface Drain {
  qp: string;
  which: "qp" | "sq" | "rq";
  call: number;
  at: number;
  /** the index of drain_ret; undefined: ib_drain_* never returned */
  retAt: number | undefined;
  /** per drained queue (sq before rq, as ib_drain_qp does them): what the executor saw of it */
  queues: DrainQueue[];
  /** the QP state queried right after the drain returned, when the executor reports it */
  stateAfter?: string;
}

export interface PostCall {
  call: number;
  qp: string;
  queue: Queue;
  at: number;
  /** the index of its post_ret record (none for a drain's marker: its record carries its rc) */
  retAt: number | undefined;
  rc: number;
  bad: number | null;
  postedIn: QpState;
  wrs: Wr[];
  /** a drain's marker post (its call is the drain's) */
  marker?: boolean;
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

export function isError(c: CqeRecord | MarkerCqeRecord): boolean {
  return c.status !== WC_SUCCESS;
}
export function isFlush(c: CqeRecord | MarkerCqeRecord): boolean {
  return c.status === WC_WR_FLUSH_ERR;
}
export function drainCovers(d: Drain, q: Queue): boolean {
  return d.which === "qp" || d.which === q;
}

/** The WR as a problem names it: its queue, its wr_id and the index of the record that posted it. */
export function ref(w: Wr): { qp: string; queue: Queue; wrId: number; post: number } {
  return { qp: w.qp, queue: w.queue, wrId: w.wrId, post: w.at };
}

/** Completions as a problem names them: their records' indexes in the trace. */
export function cqeRefs(completions: readonly Completion[]): number[] {
  return completions.map((c) => c.at);
}

/** The completions whose WR the trace saw posted (a stray CQE has none). */
export function completionsOfPostedWrs(model: TraceModel): Array<Completion & { wr: Wr }> {
  return model.completions.filter((c): c is Completion & { wr: Wr } => c.wr !== undefined);
}

/** The WR as a reason says it: "WR 1003", or "the drain's marker". */
export function wrName(w: Wr): string {
  return w.marker ? "the drain's marker" : `WR ${w.wrId}`;
}

/** One trace record as evidence: the record as the trace has it, prefixed with its index. */
export function quote(records: readonly TraceRecord[], at: number): string {
  return `#${at} ${JSON.stringify(records[at])}`;
}

/** A post call as evidence: its post record, and its post_ret when the trace has one. */
export function quoteCall(records: readonly TraceRecord[], call: PostCall): string[] {
  return [call.at, ...(call.retAt === undefined ? [] : [call.retAt])].map((at) => quote(records, at));
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

  /** The WRs of one queue in posting order (markers included). */
  queueWrs(qp: string, queue: Queue): Wr[] {
    return this.wrs.filter((w) => w.qp === qp && w.queue === queue);
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
    const drainQp = new Map<number, string>();
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
          drainQp.set(r.call, r.qp);
          break;
        case "drain_ret": {
          const qp = drainQp.get(r.call);
          if (qp && r.state && r.state !== "UNSET") this.setState(qp, at, r.state as QpState);
          break;
        }
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
        case "destroy":
          // a destroy step's (the teardown's destroys come after everything is judged)
          if (r.kind === "qp" && r.why === "command") this.setState(r.name, at, "DESTROYED");
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
    const markers = this.records.flatMap((r, at) =>
      r.ev === "drain_marker"
        ? [
            {
              qp: r.qp,
              queue: r.queue,
              op: r.queue === "sq" ? ("write" as const) : ("recv" as const),
              wrId: r.wr_id ?? -1,
              call: r.call,
              at,
              signaled: r.queue === "rq" || (r.signaled ?? true),
              accepted: r.rc === 0,
              rc: r.rc,
              invalid: false,
              marker: true,
            },
          ]
        : [],
    );
    const posts = [...postedWrs(this.records), ...markers].sort((x, y) => x.at - y.at);
    const seqs = new Map<string, number>();
    const byCall = new Map<string, PostCall>();
    for (const p of posts) {
      const key = `${p.qp}/${p.queue}`;
      const seq = seqs.get(key) ?? 0;
      seqs.set(key, seq + 1);
      const marker = "marker" in p;
      const callKey = marker ? `marker/${p.call}/${p.queue}` : `${p.call}`;
      let call = byCall.get(callKey);
      if (!call) {
        const retAt = marker ? undefined : rets.get(p.call);
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
          ...(marker ? { marker: true } : {}),
        };
        byCall.set(callKey, call);
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
    const index = new Map(
      this.wrs.filter((w) => !w.marker).map((w) => [key(w.qp, w.queue, w.call, w.wrId), w]),
    );
    const markerOf = new Map(this.wrs.filter((w) => w.marker).map((w) => [`${w.call}/${w.queue}`, w]));
    this.records.forEach((r, at) => {
      if (r.ev !== "cqe" && r.ev !== "drain_marker_cqe") return;
      const wr =
        r.ev === "cqe"
          ? index.get(key(r.qp, r.queue, r.call, r.wr_id))
          : markerOf.get(`${r.call}/${r.queue}`);
      const c: Completion = { rec: r, at, wr };
      wr?.completions.push(c);
      this.completions.push(c);
    });
  }

  private collectDrains(): void {
    const rets = new Map<number, number>();
    const modifyRets = new Map<number, number>();
    this.records.forEach((r, at) => {
      if (r.ev === "drain_ret") rets.set(r.call, at);
      if (r.ev === "modify_ret") modifyRets.set(r.call, at);
    });
    this.records.forEach((r, at) => {
      if (r.ev !== "drain") return;
      const retAt = rets.get(r.call);
      const end = retAt ?? this.records.length;
      const queues: DrainQueue[] = (r.which === "qp" ? (["sq", "rq"] as const) : [r.which]).map((queue) => ({
        queue,
      }));
      // within the drain, queue by queue (sq before rq): its ERR transition, then its marker; a
      // failed transition ends that queue's drain (__ib_drain_* WARNs and returns)
      let next = 0;
      for (let i = at + 1; i < end; i++) {
        const x = this.records[i];
        if (x?.ev === "modify" && x.qp === r.qp) {
          let q = queues[next];
          if (q?.modify && !q.marker && q.modify.rc !== 0) q = queues[++next];
          const mRet = modifyRets.get(x.call);
          const ret = mRet === undefined ? undefined : this.records[mRet];
          if (q) q.modify = { at: i, retAt: mRet, rc: ret?.ev === "modify_ret" ? ret.rc : undefined };
        }
        if (x?.ev === "drain_marker" && x.call === r.call) {
          const q = queues.find((d) => d.queue === x.queue);
          if (q) {
            q.marker = this.wrs.find((w) => w.marker && w.at === i);
            next = queues.indexOf(q) + 1;
          }
        }
      }
      const ret = retAt === undefined ? undefined : this.records[retAt];
      this.drains.push({
        qp: r.qp,
        which: r.which,
        call: r.call,
        at,
        retAt,
        queues,
        ...(ret?.ev === "drain_ret" && ret.state !== undefined ? { stateAfter: ret.state } : {}),
      });
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
   * the QP ends in ERR (the run settles the CQs before it ends), else none. A run that ended in a
   * hung drain (hil-uverbs' `hang` record) polled only the CQ the drain waited on to the end: what
   * another CQ still held is not known.
   */
  deadline(w: Wr): number | undefined {
    if (!this.owesCompletion(w)) return undefined;
    if (this.finalState(w.qp) !== "ERR") return undefined;
    const hang = this.records.find((r) => r.ev === "hang");
    if (hang?.ev === "hang" && this.cqOf(w.qp, w.queue) !== hang.cq) return undefined;
    return this.records.length;
  }

  cqOf(qp: string, q: Queue): string | undefined {
    const info = this.qps.get(qp);
    return q === "sq" ? info?.scq : info?.rcq;
  }
}
