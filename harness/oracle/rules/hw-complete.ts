/**
 * Rule 5 on the device's own trace: every WQE the device took owes one completion (an error, a
 * flush, or a signaled success; a receive always) and gets exactly one. It names a WR as the
 * device knows it (QP number, queue, WQE index, operation) where the driver-visible trace has none
 * to give: a ULP's WRs are its own. A completion the device held back is a WR lost; one written
 * twice, or for a WQE it did not take, is a duplicate.
 */
import { WcStatus } from "../../../qemu/erdma/hw.ts";
import { type ErdmaTraceEvent, isServerLine } from "../../protocol/hw-trace.ts";
import { fail, notUnder, type Problem, pass, type Rule, skip, type WrRef } from "../rule.ts";

type Owed = { key: string; what: string; wr: WrRef; owed: number; written: number };

/** A WQE as the device knows it, as a problem names its WR: the QP by its number, the WQE index as wr_id. */
export function deviceWr(qpn: number, queue: "sq" | "rq", index: number): WrRef {
  return { qp: `QP ${qpn}`, queue, wrId: index };
}

function wqeName(qpn: number, queue: string, index: number): string {
  return `QP ${qpn} ${queue} WQE ${index}`;
}

/**
 * What each WQE owes and got, keyed by QP, queue and WQE index. The counts are compared, not the
 * order: a flush event follows the flush completions it accounts for.
 */
export function completionAccounts(events: readonly ErdmaTraceEvent[]): Owed[] {
  const accounts = new Map<string, Owed>();
  const account = (qpn: number, queue: "sq" | "rq", index: number, what: string): Owed => {
    const key = `${qpn}/${queue}/${index}`;
    let a = accounts.get(key);
    if (!a) {
      a = { key, what, wr: deviceWr(qpn, queue, index), owed: 0, written: 0 };
      accounts.set(key, a);
    }
    return a;
  };
  for (const e of events) {
    if (e.kind === "wqe" && (e.queue === "rq" || e.signaled === true || e.status !== WcStatus.SUCCESS)) {
      const a = account(e.qpn, e.queue, e.index, `${wqeName(e.qpn, e.queue, e.index)} (${e.op})`);
      a.owed++;
    } else if (e.kind === "flush")
      for (const index of e.wqes ?? [])
        account(e.qpn, e.queue, index, `${wqeName(e.qpn, e.queue, index)} (flushed)`).owed++;
    else if (e.kind === "cqe" && e.cq !== "cmdq" && e.queue !== undefined && e.wqe !== undefined)
      account(e.qpn, e.queue, e.wqe, wqeName(e.qpn, e.queue, e.wqe)).written++;
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
