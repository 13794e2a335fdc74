/**
 * The executors' trace: JSON lines, each with "seq" (never goes back), "ns" (since the executor
 * started) and "ev". hil_kverbs writes it to /sys/kernel/debug/hil_kverbs/trace, hil-uverbs to its
 * stdout; both write the same records, but for the few only one of them can (a drain's marker is
 * seen by both, in their own way: "how"). This file is the schema of every record and the parser
 * that checks a trace against it, plus the first derived views the oracle builds on (which WRs
 * were posted, which completions came back).
 */
import { z } from "zod";
import { HilError } from "../../util/errors.ts";
import { DRAIN_TARGETS, POLL_CONTEXTS, POST_OPS, type PostOp } from "./commands.ts";

const base = {
  seq: z.number().int().nonnegative(),
  ns: z.number().nonnegative(),
  /** the record did not fit the module's record buffer; fields at its end are missing */
  truncated: z.literal(true).optional(),
};
const int = z.number().int();
const uint = z.number().int().nonnegative();
const queue = z.enum(["sq", "rq"]);

const hello = z.strictObject({
  ...base,
  ev: z.literal("hello"),
  version: int,
  release: z.string(),
  pid: int,
});
const ibdev = z.strictObject({
  ...base,
  ev: z.literal("ibdev"),
  name: z.string(),
  action: z.enum(["add", "remove"]),
});
const cmd = z.strictObject({ ...base, ev: z.literal("cmd"), id: uint, line: z.string() });
const done = z.strictObject({
  ...base,
  ev: z.literal("done"),
  id: uint,
  op: z.string(),
  /** 0 or a negative errno */
  rc: int,
  us: uint,
  err: z.string().optional(),
});
const reject = z.strictObject({ ...base, ev: z.literal("reject"), line: z.string(), why: z.string() });
const device = z.strictObject({
  ...base,
  ev: z.literal("device"),
  name: z.string(),
  how: z.enum(["name", "addr"]),
  node_type: uint,
  max_qp_wr: uint,
  max_cqe: uint,
  max_qp_rd_atom: uint,
  /** the device's SGE limits: bad=<i> posts a WR with one SGE more than these */
  max_send_sge: uint.optional(),
  max_recv_sge: uint.optional(),
  max_fast_reg_page_list_len: uint.optional(),
});
const create = z.strictObject({
  ...base,
  ev: z.literal("create"),
  kind: z.enum(["pd", "cq", "qp", "listen"]),
  name: z.string(),
  // pd
  local_dma_lkey: uint.optional(),
  rkey: uint.optional(),
  // cq
  poll: z.enum(POLL_CONTEXTS).optional(),
  depth: uint.optional(),
  cqe: uint.optional(),
  // qp
  qp_num: uint.optional(),
  cm: z.boolean().optional(),
  scq: z.string().optional(),
  rcq: z.string().optional(),
  sig_all: z.boolean().optional(),
  max_send_wr: uint.optional(),
  max_recv_wr: uint.optional(),
  max_send_sge: uint.optional(),
  max_inline_data: uint.optional(),
  cmd: uint.optional(),
  // listen
  addr: z.string().optional(),
  port: uint.optional(),
  qp: z.string().optional(),
});
const unfinished = z.strictObject({ queue, wr_id: uint });
const destroy = z.strictObject({
  ...base,
  ev: z.literal("destroy"),
  kind: z.enum(["pd", "cq", "qp", "listen", "device"]),
  name: z.string(),
  why: z.string().optional(),
  rc: int.optional(),
  /** posted WRs that never completed (at most 8 listed) */
  unfinished: z.array(unfinished).optional(),
  unfinished_count: uint.optional(),
  pending_request: z.boolean().optional(),
});
const cm = z.strictObject({
  ...base,
  ev: z.literal("cm"),
  id: z.string(),
  child: z.literal(true).optional(),
  event: z.string(),
  code: uint,
  status: int,
});
const post = z.strictObject({
  ...base,
  ev: z.literal("post"),
  call: uint,
  qp: z.string(),
  queue,
  op: z.enum(POST_OPS),
  /** the first WR's wr_id; the call's WRs are wr_id, wr_id+1, ... */
  wr_id: uint,
  count: uint,
  /** the index of the call's first WR within its command (for signal=<n>) */
  index: uint,
  len: uint,
  signal: z.string().optional(),
  /** reg_mr, local_inv, send_inv: the MR number of the call's first WR (the QP's, or for send_inv the peer's) */
  mr: uint.optional(),
  /** reg_mr: the access flags asked for */
  access: z.string().optional(),
  /** bad=<i>: the index in this call of the WR made invalid (one SGE more than the device allows) */
  invalid: uint.optional(),
});
/**
 * A fast-registration MR of a QP (post_send op=reg_mr mr=<i>): allocated (ib_alloc_mr), mapped
 * for a REG_MR WR with a fresh key (ib_map_mr_sg, ib_update_fast_reg_key), deregistered when its
 * QP is destroyed.
 */
const mr = z.strictObject({
  ...base,
  ev: z.literal("mr"),
  qp: z.string(),
  mr: uint,
  action: z.enum(["alloc", "map", "dereg"]),
  lkey: uint.optional(),
  rkey: uint.optional(),
  rc: int.optional(),
});
const postRet = z.strictObject({
  ...base,
  ev: z.literal("post_ret"),
  call: uint,
  rc: int,
  /**
   * index of *bad_wr within the call, null when none came back. A bad with rc 0 is a driver or
   * provider inconsistency (libsiw's post_send returns 0 with *bad_wr set when a later WR of the
   * call is refused); postedWrs goes by rc, so such WRs count as posted.
   */
  bad: int.nullable(),
});
/** Where a completion was polled: its CQ, and the QP and queue of its WR. */
const completionOn = { cq: z.string(), qp: z.string(), queue };
/** An ib_wc's fields, with the names of its status and opcode. */
const workCompletion = {
  status: uint,
  status_name: z.string(),
  opcode: uint,
  opcode_name: z.string(),
  qp_num: uint,
  vendor_err: uint,
};
const cqe = z.strictObject({
  ...base,
  ev: z.literal("cqe"),
  ...completionOn,
  wr_id: uint,
  ...workCompletion,
  byte_len: uint,
  /** the post call the WR came from */
  call: uint,
  /** how many completions this WR has had, when more than one */
  n: int.optional(),
  imm: uint.optional(),
  /** the rkey a SEND_WITH_INV invalidated (IB_WC_WITH_INVALIDATE) */
  inv: uint.optional(),
  /** FNV-1a 32 of the received bytes (successful RECV) */
  sum: uint.optional(),
});
const asyncEvent = z.strictObject({
  ...base,
  ev: z.literal("async"),
  qp: z.string(),
  event: z.string(),
  code: uint,
});
const poll = z.strictObject({
  ...base,
  ev: z.literal("poll"),
  cq: z.string(),
  got: int,
  min: uint,
  total: int,
});
const modify = z.strictObject({
  ...base,
  ev: z.literal("modify"),
  call: uint,
  qp: z.string(),
  state: z.string(),
  /** "drain": the ERR transition a drain made (ib_drain_*'s own ib_modify_qp, seen by the executor) */
  by: z.literal("drain").optional(),
});
const modifyRet = z.strictObject({ ...base, ev: z.literal("modify_ret"), call: uint, rc: int });
const query = z.strictObject({
  ...base,
  ev: z.literal("query"),
  qp: z.string(),
  rc: int,
  state: z.string().optional(),
  cur_state: z.string().optional(),
});
const drain = z.strictObject({
  ...base,
  ev: z.literal("drain"),
  call: uint,
  qp: z.string(),
  which: z.enum(DRAIN_TARGETS),
});
const drainRet = z.strictObject({
  ...base,
  ev: z.literal("drain_ret"),
  call: uint,
  us: uint,
  /** the QP's state queried right after the drain returned */
  state: z.string().optional(),
});
/**
 * A drain posted its marker WR on a queue: "kernel", ib_drain_*'s own post seen by hil_kverbs
 * (which watches the device's post_send/post_recv while a drain runs); "user", hil-uverbs' drain.
 */
const drainMarker = z.strictObject({
  ...base,
  ev: z.literal("drain_marker"),
  /** the drain's call */
  call: uint,
  qp: z.string(),
  queue,
  how: z.enum(["kernel", "user"]),
  /** the marker's wr_id as the device saw it (the user drain's; the kernel's marker has none) */
  wr_id: uint.optional(),
  /** the post's return: 0 or a negative errno */
  rc: int,
  /** whether the marker asked for a completion (ib_drain_sq's RDMA WRITE does not; in ERR it gets one all the same) */
  signaled: z.boolean().optional(),
});
/** The marker's completion, in completion order among the cqe records. */
const drainMarkerCqe = z.strictObject({
  ...base,
  ev: z.literal("drain_marker_cqe"),
  call: uint,
  ...completionOn,
  ...workCompletion,
});
/** hil-uverbs: a drain's marker did not complete within the drain timeout; the run ended there. */
const hang = z.strictObject({
  ...base,
  ev: z.literal("hang"),
  call: uint,
  qp: z.string(),
  op: z.literal("drain"),
  which: z.enum(DRAIN_TARGETS),
  queue,
  cq: z.string(),
  waited_ms: uint,
});
const disconnect = z.strictObject({ ...base, ev: z.literal("disconnect"), qp: z.string(), rc: int });
/** a connect with stop=refused refused: by the rdma_connect call's return, or by the rdma_cm event named */
const refused = z.strictObject({
  ...base,
  ev: z.literal("refused"),
  qp: z.string(),
  by: z.string(),
  rc: int,
});
const bench = z.strictObject({
  ...base,
  ev: z.literal("bench"),
  qp: z.string(),
  op: z.enum(["send", "write"]),
  iters: uint,
  depth: uint,
  len: uint,
  signal: uint,
  posted: uint,
  completed: uint,
  ns: uint,
  wrs_per_s: uint,
  bytes: uint,
  errors: uint,
  first_status: int.optional(),
  samples: uint,
  lat_min_ns: uint.optional(),
  lat_p50_ns: uint.optional(),
  lat_p99_ns: uint.optional(),
  lat_max_ns: uint.optional(),
  lat_avg_ns: uint.optional(),
  rc: int,
});
const overflow = z.strictObject({ ...base, ev: z.literal("overflow") });

export const traceRecordSchema = z.discriminatedUnion("ev", [
  hello,
  ibdev,
  cmd,
  done,
  reject,
  device,
  create,
  destroy,
  cm,
  post,
  mr,
  postRet,
  cqe,
  asyncEvent,
  poll,
  modify,
  modifyRet,
  query,
  drain,
  drainRet,
  drainMarker,
  drainMarkerCqe,
  hang,
  disconnect,
  refused,
  bench,
  overflow,
]);

export type TraceRecord = z.infer<typeof traceRecordSchema>;
export type TraceEvent = TraceRecord["ev"];
export type TraceRecordOf<E extends TraceEvent> = Extract<TraceRecord, { ev: E }>;
export type CqeRecord = TraceRecordOf<"cqe">;
export type DoneRecord = TraceRecordOf<"done">;
export type BenchRecord = TraceRecordOf<"bench">;
export type MrRecord = TraceRecordOf<"mr">;
export type HangRecord = TraceRecordOf<"hang">;

/** The IB_WC_* status values the oracle names. */
export const WC_SUCCESS = 0;
export const WC_WR_FLUSH_ERR = 5;

/** Drops an incomplete last line (a run killed from outside may leave one). */
export function wholeLines(text: string): string {
  return text.slice(0, text.lastIndexOf("\n") + 1);
}

/**
 * Parses trace text: every complete line must be a record of the schema. An incomplete last
 * line (no newline) is an error too: the module writes whole lines.
 */
export function parseTrace(text: string, source = "hil_kverbs trace"): TraceRecord[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) !== "")
    throw new HilError("the trace ends in the middle of a line", { where: source, detail: lines.at(-1) });
  lines.pop();
  const out: TraceRecord[] = [];
  lines.forEach((line, i) => {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw new HilError(`trace line ${i + 1} is not JSON`, {
        where: source,
        detail: `${(err as Error).message}\n${line}`,
      });
    }
    const r = traceRecordSchema.safeParse(json);
    if (!r.success) {
      const issues = r.error.issues.map((x) => `${x.path.join(".") || "(record)"}: ${x.message}`);
      throw new HilError(`trace line ${i + 1} is not a valid record`, {
        where: source,
        detail: `${issues.join("\n")}\n${line}`,
      });
    }
    out.push(r.data);
  });
  for (let i = 1; i < out.length; i++) {
    const prev = out[i - 1] as TraceRecord;
    const cur = out[i] as TraceRecord;
    if (cur.seq <= prev.seq)
      throw new HilError(`trace line ${i + 1}: seq ${cur.seq} after ${prev.seq}`, { where: source });
  }
  return out;
}

export function recordsOf<E extends TraceEvent>(records: readonly TraceRecord[], ev: E): TraceRecordOf<E>[] {
  return records.filter((r): r is TraceRecordOf<E> => r.ev === ev);
}

/** One work request as the trace tells it: where it was posted and whether the call took it. */
export interface PostedWr {
  qp: string;
  queue: "sq" | "rq";
  op: PostOp;
  wrId: number;
  call: number;
  /** the record index of the post call in the trace */
  at: number;
  signaled: boolean;
  /** false: at or after *bad_wr of a failed call (or the call failed without bad_wr) */
  accepted: boolean;
  /** the call's return code */
  rc: number;
  /** the WR bad=<i> made invalid on purpose */
  invalid: boolean;
  /** reg_mr, local_inv, send_inv: the MR it registers or invalidates */
  mr?: number;
}

function isSignaled(signal: string | undefined, indexInCommand: number, last: boolean): boolean {
  if (signal === undefined || signal === "all") return true;
  if (signal === "none") return false;
  if (signal === "last") return last;
  const every = Number(signal);
  return Number.isInteger(every) && every > 0 && (indexInCommand + 1) % every === 0;
}

/**
 * Every WR of every post call, in posting order. A QP made with sig=all signals all its send WRs
 * whatever the post asked for.
 */
export function postedWrs(records: readonly TraceRecord[]): PostedWr[] {
  const sigAll = new Set(
    recordsOf(records, "create")
      .filter((c) => c.kind === "qp" && c.sig_all)
      .map((c) => c.name),
  );
  const rets = new Map(recordsOf(records, "post_ret").map((r) => [r.call, r]));
  const out: PostedWr[] = [];
  records.forEach((r, at) => {
    if (r.ev !== "post") return;
    const ret = rets.get(r.call);
    const rc = ret?.rc ?? 0;
    const firstRejected = ret === undefined || rc === 0 ? r.count : (ret.bad ?? 0);
    for (let i = 0; i < r.count; i++) {
      out.push({
        qp: r.qp,
        queue: r.queue,
        op: r.op,
        wrId: r.wr_id + i,
        call: r.call,
        at,
        signaled:
          r.queue === "rq" || sigAll.has(r.qp) || isSignaled(r.signal, r.index + i, i === r.count - 1),
        accepted: i < firstRejected,
        rc,
        invalid: r.invalid === i,
        ...(r.mr === undefined ? {} : { mr: r.mr + i }),
      });
    }
  });
  return out;
}

/** The completions of one QP's queue, in poll order. */
export function completionsOf(records: readonly TraceRecord[], qp: string, q: "sq" | "rq"): CqeRecord[] {
  return recordsOf(records, "cqe").filter((c) => c.qp === qp && c.queue === q);
}

/** The FNV-1a 32 the module reports for a received SEND of `len` bytes from WR `wrId`. */
export function payloadSum(wrId: number, len: number): number {
  let h = 0x811c9dc5;
  for (let j = 0; j < len; j++) {
    h ^= ((wrId & 0xff) + j * 7) & 0xff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
