/**
 * A scenario's timeline: what the verbs trace (posts, QP state changes, CQEs, drains) and the
 * device's hardware trace (WQEs, flushes, REFLUSH, faults, interrupts) say happened, on one time
 * axis, with the hang point of a stuck step. The model (lanes of marks) is built here; svg.ts draws it.
 *
 * The two traces have different clocks (the guest's module clock in ns, the device server's in
 * ms), so hardware times are moved onto the verbs clock by the median offset of events both sides
 * see: a QP's first post and its first doorbell, its creation and the device's QP leaving "none",
 * its first ERR transition (modify or drain) and the device's QP entering ERROR.
 */
import { WcStatus } from "../../qemu/erdma/hw.ts";
import { median } from "../../util/median.ts";
import { type ErdmaTraceEvent, type HwTraceEvent, isServerLine } from "../protocol/hw-trace.ts";
import { type TraceRecord, WC_SUCCESS, WC_WR_FLUSH_ERR } from "../protocol/trace.ts";

export const LANES = [
  { id: "state", label: "QP state" },
  { id: "sq", label: "SQ posts" },
  { id: "sq-cqe", label: "SQ CQEs" },
  { id: "rq", label: "RQ posts" },
  { id: "rq-cqe", label: "RQ CQEs" },
  { id: "drain", label: "drain" },
  { id: "hw-queue", label: "HW queues" },
  { id: "hw-event", label: "HW faults/IRQs" },
] as const;
export type LaneId = (typeof LANES)[number]["id"];

export interface Mark {
  lane: LaneId;
  /** ms on the verbs clock, from the scenario's first record */
  t: number;
  /** the end of a span (a drain, a hang) */
  t2?: number;
  /** what it is, for colour and tests: post, post-err, cqe-ok, cqe-flush, cqe-err, state, hw-state, ... */
  kind: string;
  label?: string;
  /** the event in a few words (the SVG's tooltip; the event tables have every field) */
  title: string;
  /** the verbs trace record it draws (its index in the trace) */
  ev?: number;
  /** the hardware event it draws (its index in the scenario's hardware trace) */
  hw?: number;
}

export interface Hang {
  /** the stuck step began (ms) */
  t: number;
  /** the watchdog noticed it (ms) */
  noticed: number;
  op: string;
  text: string;
  stack: string;
}

export interface Timeline {
  marks: Mark[];
  hangs: Hang[];
  /** how the hardware clock was put on the verbs clock */
  alignment: { offsetMs: number; anchors: number } | undefined;
  end: number;
}

interface Stuck {
  ev: "stuck";
  step: number;
  op: string;
  ms: number;
  stack?: string;
  state?: string;
}

function isStuck(o: { ev: string }): o is Stuck {
  return o.ev === "stuck";
}

function cqeKind(status: number): string {
  return status === WC_SUCCESS ? "cqe-ok" : status === WC_WR_FLUSH_ERR ? "cqe-flush" : "cqe-err";
}

/** A record's fields as `key=value` words (objects as JSON), leaving out `skip`. */
export function details(o: Record<string, unknown>, skip: readonly string[] = []): string {
  return Object.entries(o)
    .filter(([k]) => !skip.includes(k))
    .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" ");
}

/** The QP names of the trace and their numbers. */
function qpNumbers(records: readonly TraceRecord[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of records)
    if (r.ev === "create" && r.kind === "qp" && r.qp_num !== undefined) m.set(r.name, r.qp_num);
  return m;
}

/** Offset (hardware ms minus verbs ms) from events both traces record; undefined without any. */
export function alignClocks(
  records: readonly TraceRecord[],
  hw: readonly HwTraceEvent[],
): { offsetMs: number; anchors: number } | undefined {
  const qpns = qpNumbers(records);
  const pairs: number[] = [];
  const firstHw = (pred: (e: HwTraceEvent) => boolean) => hw.find(pred)?.t;
  const seenPost = new Set<string>();
  const seenErr = new Set<string>();
  for (const r of records) {
    const ms = r.ns / 1e6;
    if (r.ev === "create" && r.kind === "qp" && r.qp_num !== undefined) {
      const t = firstHw(
        (e) => e.kind === "state" && e.object === "qp" && e.id === r.qp_num && e.from === "none",
      );
      if (t !== undefined) pairs.push(t - ms);
    }
    if (r.ev === "post") {
      const qpn = qpns.get(r.qp);
      const key = `${r.qp}/${r.queue}`;
      if (qpn === undefined || seenPost.has(key)) continue;
      seenPost.add(key);
      const t = firstHw((e) => e.kind === "doorbell" && e.db === r.queue && e.id === qpn);
      if (t !== undefined) pairs.push(t - ms);
    }
    const toErr = (r.ev === "modify" && /^ERR/i.test(r.state)) || r.ev === "drain";
    if (toErr && "qp" in r) {
      const qpn = qpns.get(r.qp);
      if (qpn === undefined || seenErr.has(r.qp)) continue;
      seenErr.add(r.qp);
      const t = firstHw((e) => e.kind === "state" && e.object === "qp" && e.id === qpn && /^ERR/i.test(e.to));
      if (t !== undefined) pairs.push(t - ms);
    }
  }
  if (pairs.length === 0) return undefined;
  return { offsetMs: median(pairs), anchors: pairs.length };
}

/** Whether a hardware event belongs on the picture (and in which lane). */
function hwLane(e: ErdmaTraceEvent, qpns: ReadonlySet<number>): LaneId | undefined {
  const onQp = (n: number | undefined) => n !== undefined && qpns.has(n);
  switch (e.kind) {
    case "wqe":
    case "flush":
    case "reflush":
    case "wait":
      return onQp(e.qpn) ? "hw-queue" : undefined;
    case "cqe":
      return e.cq !== "cmdq" && onQp(e.qpn) ? "hw-queue" : undefined;
    case "state":
      return e.object === "qp" && onQp(e.id) ? "state" : undefined;
    case "doorbell":
      return (e.db === "sq" || e.db === "rq") && onQp(e.id) ? "hw-queue" : undefined;
    case "irq":
      return e.source !== "cmdq" ? "hw-event" : undefined;
    case "fault":
    case "warn":
    case "dma-fault":
    case "internal-error":
      return "hw-event";
    default:
      return undefined;
  }
}

/** A WQE's or CQE's kind by its completion status: its own on success, else a flush or an error. */
function byStatus(status: number, success: string): string {
  return status === WcStatus.SUCCESS ? success : status === WcStatus.FLUSH_ERR ? "hw-flush" : "hw-error";
}

function hwKind(e: ErdmaTraceEvent): string {
  switch (e.kind) {
    case "wqe":
      return byStatus(e.status, "hw-wqe");
    case "cqe":
      return byStatus(e.syndrome, "hw-cqe");
    case "flush":
      return "hw-flush";
    case "reflush":
      return "hw-reflush";
    case "state":
      return "hw-state";
    case "doorbell":
      return "hw-db";
    case "irq":
      return e.delivered ? "hw-irq" : "hw-error";
    case "fault":
      return e.action === "fired" ? "hw-fault" : "hw-fault-armed";
    default:
      return "hw-error";
  }
}

function hwLabel(e: ErdmaTraceEvent): string | undefined {
  switch (e.kind) {
    case "flush":
      return `flush ${e.queue} ×${e.count}`;
    case "reflush":
      return "REFLUSH";
    case "state":
      return `hw ${e.to}`;
    case "fault":
      return e.action === "fired" ? "fault!" : undefined;
    case "warn":
    case "dma-fault":
    case "internal-error":
      return e.kind;
    default:
      return undefined;
  }
}

export function buildTimeline(
  records: readonly TraceRecord[],
  hw: readonly HwTraceEvent[] | undefined,
  observations: ReadonlyArray<{ ev: string }> = [],
): Timeline {
  const marks: Mark[] = [];
  const t0 = records.length > 0 ? (records[0] as TraceRecord).ns / 1e6 : 0;
  const at = (ns: number) => ns / 1e6 - t0;
  const rets = new Map<number, { rc: number; bad: number | null }>();
  const modifyRets = new Map<number, number>();
  const drainRets = new Map<number, TraceRecord & { ev: "drain_ret" }>();
  for (const r of records) {
    if (r.ev === "post_ret") rets.set(r.call, { rc: r.rc, bad: r.bad });
    if (r.ev === "modify_ret") modifyRets.set(r.call, r.rc);
    if (r.ev === "drain_ret") drainRets.set(r.call, r);
  }
  const drains: Array<{ t: number; qp: string; which: string; done?: number; ev: number }> = [];
  records.forEach((r, ev) => {
    switch (r.ev) {
      case "post": {
        const ret = rets.get(r.call);
        const failed = ret !== undefined && ret.rc !== 0;
        const last = r.wr_id + r.count - 1;
        marks.push({
          ev,
          lane: r.queue,
          t: at(r.ns),
          kind: failed ? "post-err" : "post",
          label: `${r.op}${r.count > 1 ? ` ×${r.count}` : ""}`,
          title: `post ${r.queue} ${r.op} on ${r.qp}: wr_id ${r.wr_id}${r.count > 1 ? `..${last}` : ""} (${r.count} WR) call ${r.call}; rc ${ret?.rc ?? "?"}${ret?.bad != null ? `, bad_wr index ${ret.bad}` : ""}${r.signal ? `, signal=${r.signal}` : ""}`,
        });
        break;
      }
      case "drain_marker":
        marks.push({
          ev,
          lane: r.queue,
          t: at(r.ns),
          kind: r.rc !== 0 ? "post-err" : "marker",
          label: "marker",
          title: `drain marker posted to ${r.qp} ${r.queue} by ib_drain (call ${r.call})${r.wr_id !== undefined ? ` wr_id ${r.wr_id}` : ""}; rc ${r.rc}`,
        });
        break;
      case "drain_marker_cqe":
        marks.push({
          ev,
          lane: r.queue === "sq" ? "sq-cqe" : "rq-cqe",
          t: at(r.ns),
          kind: cqeKind(r.status),
          title: `CQE of the drain marker on ${r.cq}: ${r.qp} ${r.queue} ${r.status_name} (status ${r.status}) opcode ${r.opcode_name} qp_num ${r.qp_num} vendor_err ${r.vendor_err}`,
        });
        break;
      case "cqe": {
        const kind = cqeKind(r.status);
        marks.push({
          ev,
          lane: r.queue === "sq" ? "sq-cqe" : "rq-cqe",
          t: at(r.ns),
          kind,
          title: `CQE on ${r.cq}: ${r.qp} ${r.queue} wr_id ${r.wr_id} ${r.status_name} (status ${r.status}) opcode ${r.opcode_name} qp_num ${r.qp_num} vendor_err ${r.vendor_err} byte_len ${r.byte_len}${r.n ? ` (completion #${r.n} of this WR)` : ""}`,
        });
        break;
      }
      case "modify": {
        const rc = modifyRets.get(r.call);
        marks.push({
          ev,
          lane: "state",
          t: at(r.ns),
          kind: rc !== undefined && rc !== 0 ? "state-err" : "state",
          label: r.state,
          title: `modify ${r.qp} -> ${r.state}; rc ${rc ?? "?"}`,
        });
        break;
      }
      case "async":
        marks.push({
          ev,
          lane: "state",
          t: at(r.ns),
          kind: "state-err",
          label: r.event,
          title: `async event on ${r.qp}: ${r.event} (${r.code})`,
        });
        break;
      case "cm":
        if (r.event === "ESTABLISHED" || r.event === "DISCONNECTED" || r.status !== 0)
          marks.push({
            ev,
            lane: "state",
            t: at(r.ns),
            kind: "cm",
            title: `cm ${r.id}: ${r.event} status ${r.status}`,
          });
        break;
      case "drain": {
        const ret = drainRets.get(r.call);
        drains.push({ t: at(r.ns), qp: r.qp, which: r.which, ev, ...(ret ? { done: at(ret.ns) } : {}) });
        break;
      }
      default:
        break;
    }
  });
  const hangs: Hang[] = [];
  const stuck = observations.filter(isStuck);
  for (const d of drains) {
    if (d.done !== undefined) {
      marks.push({
        ev: d.ev,
        lane: "drain",
        t: d.t,
        t2: d.done,
        kind: "drain",
        label: `drain ${d.which}`,
        title: `ib_drain_${d.which}(${d.qp}) returned after ${(d.done - d.t).toFixed(1)} ms`,
      });
    }
  }
  const lastT = Math.max(0, ...marks.map((m) => m.t2 ?? m.t));
  for (const s of stuck) {
    // the stuck command is the last one started before the trace stops: its drain, or its last record
    const open = drains.filter((d) => d.done === undefined);
    const start = s.op === "drain" && open.length > 0 ? (open.at(-1)?.t ?? lastT) : lastT;
    const noticed = start + s.ms;
    const text = `${s.op} (step ${s.step + 1}) did not return within ${s.ms} ms${s.state ? `; the worker is ${s.state}` : ""}`;
    hangs.push({ t: start, noticed, op: s.op, text, stack: s.stack ?? "" });
    marks.push({
      lane: "drain",
      t: start,
      t2: noticed,
      kind: "hang",
      label: `HANG: ${s.op}`,
      title: `${text}\n${s.stack ?? ""}`.trim(),
    });
  }
  for (const d of drains)
    if (d.done === undefined && stuck.length === 0)
      marks.push({
        ev: d.ev,
        lane: "drain",
        t: d.t,
        t2: lastT,
        kind: "hang",
        label: `drain ${d.which}: no return`,
        title: `ib_drain_${d.which}(${d.qp}) has no return in the trace`,
      });

  let alignment: Timeline["alignment"];
  if (hw && hw.length > 0) {
    alignment = alignClocks(records, hw);
    const qpns = new Set(qpNumbers(records).values());
    const offset = alignment?.offsetMs ?? (hw[0] as HwTraceEvent).t;
    hw.forEach((e, k) => {
      // the vfio-user server's own lines (sessions, messages) have no place on the picture
      if (isServerLine(e)) return;
      const lane = hwLane(e, qpns);
      if (!lane) return;
      const label = hwLabel(e);
      marks.push({
        hw: k,
        lane,
        t: e.t - offset - t0,
        kind: hwKind(e),
        ...(label ? { label } : {}),
        title: `hw ${e.kind} @${e.t.toFixed(3)} ms (device clock): ${details(e, ["t", "dev", "kind"])}`,
      });
    });
  }
  const end = Math.max(0, ...marks.map((m) => m.t2 ?? m.t), ...hangs.map((h) => h.noticed));
  return { marks, hangs, alignment, end };
}
