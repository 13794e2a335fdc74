/**
 * Hand-built executor traces for the oracle's unit tests: TraceBuilder writes records the way
 * hil_kverbs does (each checked against the trace schema, so the rules see what the module can
 * really write), and verdictOf judges one rule of it under one oracle profile.
 */
import { judgeTrace, type RuleVerdict } from "../../harness/oracle/judge.ts";
import type { RuleId } from "../../harness/oracle/rule.ts";
import type { Observation } from "../../harness/protocol/observations.ts";
import { type TraceRecord, traceRecordSchema } from "../../harness/protocol/trace.ts";
import type { OracleProfile } from "../../harness/scenario/schema.ts";

export const FLUSH = 5;
export const SUCCESS = 0;
export const LOC_PROT_ERR = 4;
const STATUS_NAMES: Record<number, string> = { 0: "SUCCESS", 4: "LOC_PROT_ERR", 5: "WR_FLUSH_ERR" };
/** IB_WC opcodes by the names hil_kverbs writes (kv_wc_opcode_name) */
const WC_OPCODES: Record<string, number> = {
  SEND: 0,
  RDMA_WRITE: 1,
  RDMA_READ: 2,
  LOCAL_INV: 6,
  REG_MR: 8,
  RECV: 128,
  RECV_RDMA_WITH_IMM: 129,
};
/** the opcode a completion of a posted op carries when a test does not say */
const OPCODE_OF_OP: Record<string, string> = { send: "SEND", write: "RDMA_WRITE", recv: "RECV" };

interface QpOpts {
  qpNum: number;
  scq?: string;
  rcq?: string;
  sigAll?: boolean;
  /** false: no ESTABLISHED event (a QP never connected) */
  connected?: boolean;
}

export interface PostOpts {
  signal?: string;
  rc?: number;
  bad?: number | null;
  op?: string;
  /** bad=<i>: the index in the call of the WR made invalid on purpose */
  invalid?: number;
}

export interface CqeOpts {
  status?: number;
  cq?: string;
  /** the posted op whose usual opcode the completion carries (send, write, recv) */
  opcode?: string;
  /** the IB_WC opcode name itself (SEND, RDMA_READ, REG_MR, ...) */
  opcodeName?: string;
  qpNum?: number;
  call?: number;
}

export interface DrainOpts {
  modifyRc?: number;
  markerRc?: number;
}

/** Writes records the way hil_kverbs does: seq counting up, post/post_ret pairs, cqe with its call. */
export class TraceBuilder {
  readonly records: TraceRecord[] = [];
  private call = 0;
  private readonly callOf = new Map<string, { call: number; op: string }>();
  private readonly qps = new Map<string, Required<QpOpts>>();

  private push(fields: Record<string, unknown>): number {
    const seq = this.records.length;
    this.records.push(traceRecordSchema.parse({ seq, ns: seq * 1000, ...fields }));
    return seq;
  }

  qp(name: string, o: QpOpts): this {
    const full = { scq: "cq", rcq: "cq", sigAll: false, connected: true, ...o };
    this.qps.set(name, full);
    this.push({
      ev: "create",
      kind: "qp",
      name,
      qp_num: o.qpNum,
      cm: true,
      scq: full.scq,
      rcq: full.rcq,
      sig_all: full.sigAll,
      max_send_wr: 64,
      max_recv_wr: 64,
      max_send_sge: 1,
      max_inline_data: 0,
      cmd: 1,
    });
    if (full.connected) this.push({ ev: "cm", id: name, event: "ESTABLISHED", code: 9, status: 0 });
    return this;
  }

  post(qp: string, queue: "sq" | "rq", wrId: number, count: number, o: PostOpts = {}): this {
    const call = ++this.call;
    const op = o.op ?? (queue === "rq" ? "recv" : "send");
    this.push({
      ev: "post",
      call,
      qp,
      queue,
      op,
      wr_id: wrId,
      count,
      index: 0,
      len: 64,
      ...(queue === "sq" ? { signal: o.signal ?? "all" } : {}),
      ...(o.invalid === undefined ? {} : { invalid: o.invalid }),
    });
    const bad = o.bad !== undefined ? o.bad : o.rc ? 0 : null;
    this.push({ ev: "post_ret", call, rc: o.rc ?? 0, bad });
    for (let i = 0; i < count; i++) this.callOf.set(`${qp}/${queue}/${wrId + i}`, { call, op });
    return this;
  }

  cqe(qp: string, queue: "sq" | "rq", wrId: number, o: CqeOpts = {}): this {
    const posted = this.callOf.get(`${qp}/${queue}/${wrId}`);
    const info = this.qps.get(qp);
    const status = o.status ?? FLUSH;
    const opcodeName = o.opcodeName ?? OPCODE_OF_OP[o.opcode ?? posted?.op ?? "send"] ?? "SEND";
    this.push({
      ev: "cqe",
      cq: o.cq ?? (queue === "sq" ? info?.scq : info?.rcq) ?? "cq",
      qp,
      queue,
      wr_id: wrId,
      status,
      status_name: STATUS_NAMES[status] ?? "UNKNOWN",
      opcode: WC_OPCODES[opcodeName] ?? 0,
      opcode_name: opcodeName,
      qp_num: o.qpNum ?? info?.qpNum ?? 0,
      vendor_err: 0,
      byte_len: 0,
      call: o.call ?? posted?.call ?? 999,
    });
    return this;
  }

  flush(qp: string, queue: "sq" | "rq", from: number, count: number): this {
    for (let i = 0; i < count; i++) this.cqe(qp, queue, from + i);
    return this;
  }

  modify(qp: string, state: string, rc = 0): this {
    const call = ++this.call;
    this.push({ ev: "modify", call, qp, state });
    this.push({ ev: "modify_ret", call, rc });
    return this;
  }

  private drainState?: { call: number; qp: string; queues: ("sq" | "rq")[] };

  /**
   * The drain record and what the kernel executor observes of ib_drain_* for its first queue: the
   * ERR transition (modify + modify_ret) and the marker post. markerDone() completes the marker
   * (and starts the next queue's), drained() is the return with the state queried after it.
   */
  drain(qp: string, which: "qp" | "sq" | "rq", o: DrainOpts = {}): this {
    const call = ++this.call;
    this.push({ ev: "drain", call, qp, which });
    this.drainState = { call, qp, queues: which === "qp" ? ["sq", "rq"] : [which] };
    return this.drainQueue(o);
  }

  private drainQueue(o: DrainOpts = {}): this {
    const d = this.drainState;
    const queue = d?.queues[0];
    if (!d || !queue) return this;
    const modify = ++this.call;
    this.push({ ev: "modify", call: modify, qp: d.qp, state: "ERR", by: "drain" });
    this.push({ ev: "modify_ret", call: modify, rc: o.modifyRc ?? 0 });
    if ((o.modifyRc ?? 0) !== 0) return this;
    this.push({ ev: "drain_marker", call: d.call, qp: d.qp, queue, how: "kernel", rc: o.markerRc ?? 0 });
    return this;
  }

  /** the current queue's marker completes (flushed); the next queue's drain starts */
  markerDone(o: { next?: DrainOpts } = {}): this {
    const d = this.drainState;
    const queue = d?.queues.shift();
    if (!d || !queue) return this;
    this.markerCqe(d.call, d.qp, queue);
    return this.drainQueue(o.next);
  }

  /** a completion of the drain `call`'s marker on `queue`, as the executor reports it */
  markerCqe(call: number, qp: string, queue: "sq" | "rq"): this {
    const info = this.qps.get(qp);
    this.push({
      ev: "drain_marker_cqe",
      call,
      cq: (queue === "sq" ? info?.scq : info?.rcq) ?? "cq",
      qp,
      queue,
      status: FLUSH,
      status_name: "WR_FLUSH_ERR",
      opcode: queue === "sq" ? 1 : 128,
      opcode_name: queue === "sq" ? "RDMA_WRITE" : "RECV",
      qp_num: info?.qpNum ?? 0,
      vendor_err: 0,
    });
    return this;
  }

  /** the call number of the last drain */
  get drainCall(): number {
    return this.drainState?.call ?? this.call;
  }

  /** state null: the executor did not report the QP's state after the drain */
  drained(state: string | null = "ERR"): this {
    this.push({
      ev: "drain_ret",
      call: this.drainState?.call ?? this.call,
      us: 50,
      ...(state === null ? {} : { state }),
    });
    return this;
  }

  private cmdId = 0;

  /** a command as the executors trace it: cmd, then done with its rc (none: it never finished) */
  cmd(line: string, rc: number | null = 0): this {
    const id = ++this.cmdId;
    this.push({ ev: "cmd", id, line });
    if (rc !== null) this.push({ ev: "done", id, op: line.split(" ")[0], rc, us: 5 });
    return this;
  }

  raw(fields: Record<string, unknown>): this {
    this.push(fields);
    return this;
  }
}

/** qp (qp_num 1, both queues on cq) connected to peer (qp_num 2, both queues on pcq) */
export function pair(): TraceBuilder {
  return new TraceBuilder().qp("qp", { qpNum: 1 }).qp("peer", { qpNum: 2, scq: "pcq", rcq: "pcq" });
}

/** One rule's verdict on the trace under one oracle profile. */
export function verdictOf(
  b: TraceBuilder,
  rule: RuleId,
  profile: OracleProfile = "linux",
  observations: Observation[] = [],
): RuleVerdict {
  const [j] = judgeTrace({ records: b.records, observations }, [profile]);
  const v = j?.rules.find((r) => r.rule === rule);
  if (!v) throw new Error(`no verdict for rule ${rule}`);
  return v;
}

/** The evidence line the oracle quotes for record `at` of the trace. */
export function quoted(b: TraceBuilder, at: number): string {
  return `#${at} ${JSON.stringify(b.records[at])}`;
}

/** The index of the last record of the trace (the one just written). */
export function last(b: TraceBuilder): number {
  return b.records.length - 1;
}
