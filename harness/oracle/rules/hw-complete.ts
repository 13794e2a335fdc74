/**
 * Rule 5 on the device's own trace: every WQE the device took owes one completion (an error, a
 * flush, or a signaled success; a receive always) and gets exactly one. It names a WR as the
 * device knows it (QP number, queue, WQE index, operation) where the driver-visible trace has none
 * to give: a ULP's WRs are its own. A completion the device held back is a WR lost; one written
 * twice, or for a WQE it did not take, is a duplicate.
 */
import { WcStatus } from "../../../qemu/erdma/hw.ts";
import { type ErdmaTraceEvent, isServerLine } from "../../protocol/hw-trace.ts";
import type { WrRef } from "../../protocol/observations.ts";
import { fail, notUnder, type Problem, pass, type Rule, skip } from "../rule.ts";

type Owed = { key: string; what: string; wr: WrRef; owed: number; written: number };

/**
 * A WQE as the device knows it, as a problem names its WR: the QP by its number (and its device's
 * name, where a trace has several devices), the WQE index as wr_id.
 */
export function deviceWr(qpn: number, queue: "sq" | "rq", index: number, dev?: string): WrRef {
  return { qp: dev ? `${dev} QP ${qpn}` : `QP ${qpn}`, queue, wrId: index };
}

/** The device names of a trace, when it has more than one (two guests on one fabric). */
export function devicesNamed(events: readonly { dev: string }[]): boolean {
  return new Set(events.map((e) => e.dev)).size > 1;
}

function wqeName(wr: WrRef): string {
  return `${wr.qp} ${wr.queue} WQE ${wr.wrId}`;
}

/**
 * What each WQE owes and got, keyed by QP, queue and WQE index. The counts are compared, not the
 * order: a flush event follows the flush completions it accounts for.
 */
export function completionAccounts(events: readonly ErdmaTraceEvent[]): Owed[] {
  const accounts = new Map<string, Owed>();
  const named = devicesNamed(events);
  const account = (dev: string, qpn: number, queue: "sq" | "rq", index: number, how?: string): Owed => {
    const key = `${dev}/${qpn}/${queue}/${index}`;
    let a = accounts.get(key);
    if (!a) {
      const wr = deviceWr(qpn, queue, index, named ? dev : undefined);
      a = { key, what: `${wqeName(wr)}${how ? ` (${how})` : ""}`, wr, owed: 0, written: 0 };
      accounts.set(key, a);
    }
    return a;
  };
  for (const e of events) {
    if (e.kind === "wqe" && (e.queue === "rq" || e.signaled === true || e.status !== WcStatus.SUCCESS))
      account(e.dev, e.qpn, e.queue, e.index, e.op).owed++;
    else if (e.kind === "flush")
      for (const index of e.wqes ?? []) account(e.dev, e.qpn, e.queue, index, "flushed").owed++;
    else if (e.kind === "cqe" && e.cq !== "cmdq" && e.queue !== undefined && e.wqe !== undefined)
      account(e.dev, e.qpn, e.queue, e.wqe).written++;
  }
  return [...accounts.values()];
}

export const hwCompleteRule: Rule = {
  id: "hw-complete",
  title: "every WQE the device took completes exactly once (the device's own trace)",
  citation:
    "IBTA Vol 1 11.4.1.1 and C10-42 (every outstanding WR is completed, flushed in ERROR); Linux verbs.c ib_drain_qp() relies on each WR's completion",
  judge({ hw }) {
    if (hw === undefined) return notUnder("no hardware trace here (siw, or a device of your own)");
    const events = hw.filter((e): e is ErdmaTraceEvent => !isServerLine(e));
    if (!events.some((e) => e.kind === "cqe" && e.wqe !== undefined))
      return skip("the hardware trace has no data completion of a WQE");
    const accounts = completionAccounts(events);
    const problems: Problem[] = [];
    for (const a of accounts) {
      if (a.written < a.owed)
        problems.push({
          reason: `${a.what}: ${a.owed - a.written} completion(s) owed and never written (a WR lost)`,
          evidence: [`owed ${a.owed}, written ${a.written}`],
          wrs: [a.wr],
        });
      else if (a.written > a.owed)
        problems.push({
          reason: `${a.what}: ${a.written - a.owed} completion(s) more than owed (a duplicate, or a WQE the device did not take)`,
          evidence: [`owed ${a.owed}, written ${a.written}`],
          wrs: [a.wr],
        });
    }
    const judged = accounts.reduce((n, a) => n + a.owed, 0);
    if (problems.length > 0) return fail(problems, judged);
    return pass(`${judged} completion(s) owed by the device's WQEs, each written once`, judged);
  },
};
