/**
 * The premise conditions read on the device's hardware trace (the emulated erdma): what the
 * device held, flushed and was told, which the driver's own trace cannot show.
 */

import type { HwTraceEvent } from "../protocol/hw-trace.ts";
import { type ErdmaTraceEvent, isServerLine } from "../protocol/hw-trace.ts";
import type { PremiseCondition } from "../scenario/premise-schema.ts";
import type { TraceModel } from "./model.ts";

function deviceEvents(hw: readonly HwTraceEvent[]): ErdmaTraceEvent[] {
  return hw.filter((e): e is ErdmaTraceEvent => !isServerLine(e));
}

function qpnOf(qpns: ReadonlyMap<string, number>, on: "qp" | "peer"): number | undefined {
  return qpns.get(on === "peer" ? "peer" : "qp");
}

const ERROR_STATE = /^ERROR\b/;

/** The moment (trace time) the QP entered ERROR, if it did. */
function errorAt(events: readonly ErdmaTraceEvent[], qpn: number): number | undefined {
  return events.find((e) => e.kind === "state" && e.object === "qp" && e.id === qpn && ERROR_STATE.test(e.to))
    ?.t;
}

/** The device's own move of a QP to ERROR ("ERROR (<why>)", datapath.ts fail), before any MODIFY_QP to ERROR of it. */
export function deviceErrorWithoutModify(
  hw: readonly HwTraceEvent[],
  qpns: ReadonlyMap<string, number>,
  on: "qp" | "peer",
): [boolean, string] {
  const qpn = qpnOf(qpns, on);
  if (qpn === undefined) return [false, `the executor's trace names no QP number of the ${on}`];
  const events = deviceEvents(hw);
  const own = events.find(
    (e) => e.kind === "state" && e.object === "qp" && e.id === qpn && /^ERROR \(/.test(e.to),
  );
  const modify = events.find(
    (e) =>
      e.kind === "cmd" &&
      e.name === "MODIFY_QP" &&
      (e.detail as { qpn?: unknown; to?: unknown } | undefined)?.qpn === qpn &&
      ERROR_STATE.test(String((e.detail as { to?: unknown }).to)),
  );
  if (own?.kind !== "state") return [false, `the device never moved QP ${qpn} to ERROR on its own`];
  if (modify && modify.t < own.t)
    return [false, `the device's own ERROR of QP ${qpn} came after a MODIFY_QP to ERROR`];
  return [true, `the device moved QP ${qpn} to ${own.to} (t=${own.t.toFixed(3)})`];
}

/**
 * CQEs the device wrote for QP `qpn` before its DESTROY_QP that the executor had not polled when
 * it destroyed the QP, and whether a CQ of the QP was polled after: the driver then met CQEs of a
 * QP that is gone (erdma: erdma_cq.c erdma_poll_one_cqe, ERDMA_POLLCQ_NO_QP).
 */
function destroyedWithUnpolledCqes(
  events: readonly ErdmaTraceEvent[],
  model: TraceModel,
  name: string,
  qpn: number,
): [boolean, string] {
  const destroy = events.find(
    (e) =>
      e.kind === "cmd" && e.name === "DESTROY_QP" && (e.detail as { qpn?: unknown } | undefined)?.qpn === qpn,
  );
  if (!destroy) return [false, `QP ${qpn} was not destroyed`];
  const written = events.filter(
    (e) => e.kind === "cqe" && e.cq !== "cmdq" && e.qpn === qpn && e.t < destroy.t,
  ).length;
  const destroyedAt = model.records.findIndex(
    (r) => r.ev === "destroy" && r.kind === "qp" && r.name === name && r.why === "command",
  );
  if (destroyedAt < 0) return [false, `no destroy step of ${name} in the executor's trace`];
  const polledBefore = model.completions.filter((x) => x.rec.qp === name && x.at < destroyedAt).length;
  const cqs = new Set([model.cqOf(name, "sq"), model.cqOf(name, "rq")]);
  const polledAfter = model.records.some(
    (r, at) => at > destroyedAt && (r.ev === "poll" || r.ev === "cqe") && cqs.has(r.cq),
  );
  const unpolled = written - polledBefore;
  return [
    unpolled > 0 && polledAfter,
    `${written} CQE(s) of QP ${qpn} written before its DESTROY_QP, ${polledBefore} of its completions polled before the destroy step; ${[...cqs].filter((q) => q !== undefined).join(", ") || "no CQ"} ${polledAfter ? "polled" : "not polled"} after it`,
  ];
}

/** A device condition: [held, what the trace showed]. */
export function checkDeviceCondition(
  c: PremiseCondition,
  hw: readonly HwTraceEvent[],
  qpns: ReadonlyMap<string, number>,
  /** the executor's trace, for the conditions read on both */
  model?: TraceModel,
): [boolean, string] {
  const events = deviceEvents(hw);
  const needQp = (on: "qp" | "peer"): number | [boolean, string] =>
    qpnOf(qpns, on) ?? [false, `the executor's trace names no QP number of the ${on}`];
  switch (c.kind) {
    case "device_flushed": {
      const qpn = c.on === undefined ? undefined : needQp(c.on);
      if (qpn !== undefined && typeof qpn !== "number") return qpn;
      const n = events.reduce(
        (sum, e) =>
          sum +
          (e.kind === "flush" && e.queue === c.queue && (qpn === undefined || e.qpn === qpn) ? e.count : 0),
        0,
      );
      return [n >= c.min, `${n} ${c.queue} WQE(s) flushed`];
    }
    case "device_flushed_blocks": {
      const qpn = needQp(c.on);
      if (typeof qpn !== "number") return qpn;
      const sizes = events.flatMap((e) =>
        e.kind === "flush" && e.qpn === qpn && e.queue === c.queue
          ? (e.blocks ?? e.wqes?.map(() => 1) ?? [])
          : [],
      );
      const big = sizes.filter((b) => b >= c.blocks).length;
      return [
        big >= c.min,
        `${sizes.length} WQE(s) flushed, ${big} of ${c.blocks}+ blocks (largest ${Math.max(0, ...sizes)})`,
      ];
    }
    case "device_destroyed_unflushed": {
      const qpn = needQp(c.on);
      if (typeof qpn !== "number") return qpn;
      const destroy = events.find(
        (e) =>
          e.kind === "cmd" &&
          e.name === "DESTROY_QP" &&
          (e.detail as { qpn?: unknown } | undefined)?.qpn === qpn,
      );
      if (destroy?.kind !== "cmd") return [false, `QP ${qpn} was not destroyed`];
      const pending = (destroy.detail as { pending?: { sq?: number; rq?: number } }).pending;
      if (!pending) return [false, "the DESTROY_QP event does not say what was pending"];
      const n = (pending.sq ?? 0) + (pending.rq ?? 0);
      return [
        n > 0,
        `at DESTROY_QP of QP ${qpn}: ${pending.sq ?? 0} sq and ${pending.rq ?? 0} rq entries pending`,
      ];
    }
    case "device_destroyed_with_unpolled_cqes": {
      const qpn = needQp(c.on);
      if (typeof qpn !== "number") return qpn;
      if (!model) return [false, "no executor's trace to tell what was polled"];
      return destroyedWithUnpolledCqes(events, model, c.on === "peer" ? "peer" : "qp", qpn);
    }
    case "device_posted_while_flushing": {
      const qpn = needQp(c.on);
      if (typeof qpn !== "number") return qpn;
      const from = errorAt(events, qpn);
      if (from === undefined) return [false, `QP ${qpn} never entered ERROR`];
      const flush = events.find(
        (e): e is Extract<ErdmaTraceEvent, { kind: "flush" }> =>
          e.kind === "flush" && e.qpn === qpn && e.queue === c.queue && e.t > from && e.count > 0,
      );
      if (!flush) return [false, `nothing of QP ${qpn}'s ${c.queue} was flushed after it entered ERROR`];
      const during = events.filter(
        (e) => e.kind === "doorbell" && e.db === c.queue && e.id === qpn && e.t > from && e.t < flush.t,
      ).length;
      return [
        during > 0,
        `${during} ${c.queue} doorbell(s) between the ERROR transition and the end of the first flush (${flush.count} WQEs)`,
      ];
    }
    case "device_flush_behind_pending": {
      const qpn = needQp(c.on);
      if (typeof qpn !== "number") return qpn;
      const held = events.find(
        (e): e is Extract<ErdmaTraceEvent, { kind: "wait" }> =>
          e.kind === "wait" && e.qpn === qpn && e.queue === c.queue,
      );
      if (held) return [true, `the flush waited at WQE ${held.index}: ${held.reason}`];
      const overtaken = events.find(
        (e): e is Extract<ErdmaTraceEvent, { kind: "flush" }> =>
          e.kind === "flush" && e.qpn === qpn && e.queue === c.queue && e.overtook !== undefined,
      );
      if (overtaken?.kind === "flush" && overtaken.overtook)
        return [
          true,
          `flush completions of WQE(s) ${overtaken.overtook.wqes.join(", ")} written while WQE(s) ${overtaken.overtook.pending.join(", ")} were pending (${overtaken.overtook.origin})`,
        ];
      return [false, `no flush of QP ${qpn}'s ${c.queue} met a pending completion`];
    }
    case "device_ceq_batch": {
      const since = new Map<number, number>();
      let most = 0;
      for (const e of events) {
        if (e.kind === "eqe" && typeof e.eq === "number" && e.eq > 0)
          since.set(e.eq, (since.get(e.eq) ?? 0) + 1);
        const ceq = e.kind === "irq" && e.delivered ? /^ceq(\d+)/.exec(e.source) : null;
        if (ceq) {
          const eq = Number(ceq[1]);
          most = Math.max(most, since.get(eq) ?? 0);
          since.set(eq, 0);
        }
      }
      return [most >= c.min, `at most ${most} event(s) behind one completion interrupt`];
    }
    default:
      return [false, `${c.kind} is read on the executor's trace`];
  }
}

/** Every fault armed in the trace fired at least once before it was cleared. */
export function faultsFired(hw: readonly HwTraceEvent[]): [boolean, string] {
  const events = deviceEvents(hw);
  const armed = events.flatMap((e) =>
    e.kind === "fault" && e.action === "armed" && e.id !== undefined ? [e] : [],
  );
  const fired = new Set(events.flatMap((e) => (e.kind === "fault" && e.action === "fired" ? [e.id] : [])));
  const never = armed.filter((e) => !fired.has(e.id));
  if (armed.length === 0) return [false, "no fault was armed"];
  if (never.length === 0) return [true, `${armed.length} armed, each fired`];
  const first = never[0];
  return [
    false,
    `${never.length} of ${armed.length} never fired, first ${JSON.stringify(first?.kind === "fault" ? first.fault : {})}`,
  ];
}
