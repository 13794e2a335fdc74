/**
 * What a scenario's verbs trace says happened to each work request, in terms that two runs of the
 * same scenario can be compared by (`hil diff --traces`): per WR its post's fate and its
 * completions (status and CQ), per drain whether it returned, and per work queue the order its
 * WRs completed in on each CQ.
 *
 * Keys match across runs: a WR is `<qp> <queue> wr <wr_id>` (the scenario fixes the wr_ids); a
 * drain is `<qp> drain <k> (<which>)`, the k-th drain on that QP, and its marker `<qp> <queue> marker
 * of drain <k>` (a marker's wr_id is the executor's, not the scenario's). A WR posted twice with
 * one wr_id gets ` (post <n>)` from its second post on; a completion of no posted WR is `<qp>
 * <queue> wr <wr_id> (never posted)` (a marker's whose post the executor did not see, its marker's).
 *
 * What is left out, since it differs between runs without saying anything of the device's
 * behaviour: seq and ns (timing), qp_num (the device numbers QPs), vendor_err (vendor-defined),
 * opcode (not defined on an error completion, IB 10.7.3.1; the scenario fixes it on a success),
 * byte_len (not defined on an error completion; the posted length on a success), imm, inv and sum
 * (payload, which the data path moves the same on every profile).
 */
import { type Queue, TraceModel, type Wr } from "../../oracle/model.ts";
import type { TraceRecord } from "../../protocol/trace.ts";

export interface CompletionFact {
  status: string;
  cq: string;
}

export type ItemFact =
  | {
      kind: "wr";
      /** undefined: a completion came for a WR the trace never posted (or a marker whose post it did not see) */
      post?: { accepted: boolean; rc: number };
      marker?: true;
      completions: CompletionFact[];
    }
  | { kind: "drain"; returned: boolean };

export interface ScenarioFacts {
  /** by key, in the order the trace first shows them */
  items: Map<string, ItemFact>;
  /**
   * per work queue and the CQ its completions went to ("qp rq on rcq"), the keys of the WRs they
   * were for, in poll order. Only a work queue's own order is specified (rule 4); how two queues'
   * completions interleave on a shared CQ is timing, not behaviour.
   */
  order: Map<string, string[]>;
}

function drainOrdinals(model: TraceModel): Map<number, { qp: string; k: number; which: string }> {
  const perQp = new Map<string, number>();
  const byCall = new Map<number, { qp: string; k: number; which: string }>();
  for (const d of model.drains) {
    const k = (perQp.get(d.qp) ?? 0) + 1;
    perQp.set(d.qp, k);
    byCall.set(d.call, { qp: d.qp, k, which: d.which });
  }
  return byCall;
}

export function drainKey(qp: string, k: number, which: string): string {
  return `${qp} drain ${k} (${which})`;
}

export function wrKey(qp: string, queue: Queue, wrId: number): string {
  return `${qp} ${queue} wr ${wrId}`;
}

export function orderKey(qp: string, queue: Queue, cq: string): string {
  return `${qp} ${queue} on ${cq}`;
}

export function markerKey(qp: string, queue: Queue, k: number): string {
  return `${qp} ${queue} marker of drain ${k}`;
}

/** The facts of one scenario's trace. */
export function scenarioFacts(records: readonly TraceRecord[]): ScenarioFacts {
  const model = new TraceModel(records);
  const drains = drainOrdinals(model);
  const keyOf = new Map<Wr, string>();
  const events: Array<{ at: number; key: string; fact: ItemFact }> = [];
  const posts = new Map<string, number>();
  for (const w of model.wrs) {
    const d = w.marker ? drains.get(w.call) : undefined;
    const base = d ? markerKey(w.qp, w.queue, d.k) : wrKey(w.qp, w.queue, w.wrId);
    const n = (posts.get(base) ?? 0) + 1;
    posts.set(base, n);
    const key = n === 1 ? base : `${base} (post ${n})`;
    keyOf.set(w, key);
    events.push({
      at: w.at,
      key,
      fact: {
        kind: "wr",
        post: { accepted: w.accepted, rc: w.rc },
        ...(w.marker ? { marker: true as const } : {}),
        completions: w.completions.map((c) => ({ status: c.rec.status_name, cq: c.rec.cq })),
      },
    });
  }
  for (const d of model.drains) {
    const o = drains.get(d.call);
    if (o)
      events.push({
        at: d.at,
        key: drainKey(o.qp, o.k, o.which),
        fact: { kind: "drain", returned: d.retAt !== undefined },
      });
  }
  const unposted = new Map<string, ItemFact & { kind: "wr" }>();
  const order = new Map<string, string[]>();
  for (const c of model.completions) {
    let key = c.wr ? keyOf.get(c.wr) : undefined;
    if (key === undefined) {
      const d = c.rec.ev === "drain_marker_cqe" ? drains.get(c.rec.call) : undefined;
      key = d
        ? markerKey(c.rec.qp, c.rec.queue, d.k)
        : `${wrKey(c.rec.qp, c.rec.queue, c.rec.ev === "cqe" ? c.rec.wr_id : -1)} (never posted)`;
      let fact = unposted.get(key);
      if (!fact) {
        fact = { kind: "wr", completions: [], ...(d ? { marker: true as const } : {}) };
        unposted.set(key, fact);
        events.push({ at: c.at, key, fact });
      }
      fact.completions.push({ status: c.rec.status_name, cq: c.rec.cq });
    }
    const queue = orderKey(c.rec.qp, c.rec.queue, c.rec.cq);
    const list = order.get(queue) ?? [];
    list.push(key);
    order.set(queue, list);
  }
  const items = new Map(events.sort((a, b) => a.at - b.at).map((e) => [e.key, e.fact] as const));
  return { items, order };
}

/** An item's facts in words, the same words for the same facts (what the comparison compares). */
export function describeItem(f: ItemFact | undefined): string {
  if (f === undefined) return "not posted";
  if (f.kind === "drain") return f.returned ? "returned" : "no return";
  const parts: string[] = [];
  if (f.post === undefined && !f.marker) parts.push("never posted");
  else if (f.post && !f.post.accepted) parts.push(`post refused (rc ${f.post.rc})`);
  const cqes = f.completions.map((c) => `${c.status} on ${c.cq}`);
  if (cqes.length === 0) parts.push("no completion");
  else if (cqes.length === 1) parts.push(cqes[0] as string);
  else parts.push(`${cqes.length} completions: ${cqes.join(", ")}`);
  return parts.join(", ");
}
