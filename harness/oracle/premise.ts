/**
 * Whether a run created the situation its scenario exists for (the scenario's premise,
 * harness/scenario/premise-schema.ts), read off the executor's trace and, for the conditions about
 * the device, the device's hardware trace. Each scenario with fault steps also has the implicit
 * condition that every fault it armed fired: a fault that never fired made no situation.
 */
import type { HwTraceEvent } from "../protocol/hw-trace.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import { WC_SUCCESS, WC_WR_FLUSH_ERR } from "../protocol/trace.ts";
import type { DriverName } from "../scenario/axes.ts";
import { NAMES } from "../scenario/compile.ts";
import {
  DEVICE_CONDITIONS,
  describeCondition,
  minOn,
  type Premise,
  type PremiseCondition,
} from "../scenario/premise-schema.ts";
import type { RuleVerdict } from "./judge.ts";
import { TraceModel } from "./model.ts";
import { checkDeviceCondition, deviceErrorWithoutModify, faultsFired } from "./premise-device.ts";

/** One condition's outcome: held, not held, or not observable (no trace of the kind it reads). */
export type ConditionResult = {
  condition: string;
  held: boolean | null;
  /** what the trace showed */
  reason: string;
};

export type PremiseResult =
  | { none: string }
  | {
      held: boolean;
      conditions: ConditionResult[];
    };

export interface PremiseInput {
  records: readonly TraceRecord[];
  /** the device's hardware trace (absent: no device model here) */
  hw?: readonly HwTraceEvent[];
  driver?: DriverName;
  /** the scenario arms device faults */
  faults: boolean;
}

const ERR_EVENT_CODES = new Set([1, 2, 3]);
/** rdma_cm events of a connection that broke (an iWARP terminate ends it: siw_cm.c siw_cm_upcall) */
const BROKE = new Set(["DISCONNECTED", "CONNECT_ERROR", "UNREACHABLE", "REJECTED"]);

function qpName(on: "qp" | "peer"): string {
  return on === "peer" ? NAMES.peer : NAMES.qp;
}

/** A verbs-trace condition: [held, what the trace showed]. */
function checkVerbs(c: PremiseCondition, m: TraceModel, driver: DriverName | undefined): [boolean, string] {
  switch (c.kind) {
    case "flushed": {
      const flushed = m
        .queueWrs(qpName(c.on), c.queue)
        .filter(
          (w) =>
            !w.marker &&
            w.accepted &&
            (c.op === undefined || w.op === c.op) &&
            w.postedIn !== "ERR" &&
            w.completions.some((x) => x.rec.status === WC_WR_FLUSH_ERR),
        ).length;
      return [flushed >= minOn(c.min, driver), `${flushed} flushed`];
    }
    case "posted_in_error": {
      const posted = m.calls
        .filter(
          (call) =>
            !call.marker &&
            call.qp === qpName(c.on) &&
            call.queue === c.queue &&
            call.postedIn === "ERR" &&
            (c.op === undefined || call.wrs[0]?.op === c.op),
        )
        .reduce((n, call) => n + call.wrs.length, 0);
      return [posted >= minOn(c.min, driver), `${posted} posted in ERR`];
    }
    case "outstanding_at_drain": {
      let most = 0;
      for (const w of m.wrs.filter((x) => x.marker && x.qp === qpName(c.on) && x.queue === c.queue)) {
        const open = m
          .queueWrs(w.qp, w.queue)
          .filter(
            (o) => !o.marker && o.accepted && o.at < w.at && !o.completions.some((x) => x.at < w.at),
          ).length;
        most = Math.max(most, open);
      }
      return [most >= minOn(c.min, driver), `at most ${most} outstanding at a drain's marker`];
    }
    case "again_in_error": {
      const name = qpName(c.on);
      const calls = m.records.flatMap((r, at) =>
        r.ev === (c.call === "drain" ? "drain" : "modify") &&
        "qp" in r &&
        r.qp === name &&
        (r.ev !== "modify" || (r.state === "ERR" && r.by === undefined))
          ? [at]
          : [],
      );
      const again = calls.filter((at) => m.stateAt(name, at) === "ERR").length;
      return [again > 0, `${again} of ${calls.length} ${c.call} call(s) found the QP in ERR`];
    }
    case "error_without_modify": {
      const name = qpName(c.on);
      const first = m.records.findIndex(
        (r) =>
          (r.ev === "cqe" && r.qp === name && r.status !== WC_SUCCESS && r.status !== WC_WR_FLUSH_ERR) ||
          (r.ev === "async" && r.qp === name && ERR_EVENT_CODES.has(r.code)) ||
          (r.ev === "cm" && r.id === name && BROKE.has(r.event)),
      );
      const modified = m.records.findIndex(
        (r) =>
          (r.ev === "modify" && r.qp === name && r.state === "ERR") || (r.ev === "drain" && r.qp === name),
      );
      const held = first >= 0 && (modified < 0 || first < modified);
      return [
        held,
        first < 0
          ? "no error completion, fatal event or broken connection"
          : held
            ? `${JSON.stringify(m.records[first])}`
            : "the first error came after a modify to ERR",
      ];
    }
    case "chain_exceeds_queue": {
      const name = qpName(c.on);
      const cap = queueCapacity(m, name, c.queue);
      if (cap === undefined) return [false, "the trace has no capacity of the queue"];
      const longest = Math.max(
        0,
        ...m.records.map((r) => (r.ev === "post" && r.qp === name && r.queue === c.queue ? r.count : 0)),
      );
      return [longest > cap, `the longest chain ${longest} WR(s), the queue holds ${cap}`];
    }
    case "outstanding_across_wrap": {
      const name = qpName(c.on);
      const cap = queueCapacity(m, name, c.queue);
      if (cap === undefined) return [false, "the trace has no capacity of the queue"];
      const errAt = m.intervalsIn(name, "ERR")[0]?.[0];
      if (errAt === undefined) return [false, "the QP never went to ERR"];
      const accepted = m.queueWrs(name, c.queue).filter((w) => w.accepted);
      const outstanding = accepted.flatMap((w, position) =>
        !w.marker && w.at < errAt && !w.completions.some((x) => x.at < errAt) ? [position] : [],
      );
      if (outstanding.length === 0) return [false, `no WR of the queue outstanding at ERR; it holds ${cap}`];
      const oldest = Math.min(...outstanding) + 1;
      const newest = Math.max(...outstanding) + 1;
      return [
        oldest <= cap && newest > cap + 1,
        `the WRs outstanding at ERR were numbers ${oldest} to ${newest} of those posted to the queue, which holds ${cap}`,
      ];
    }
    case "cq_wrapped": {
      const cq = m.cqOf(NAMES.qp, c.cq === "send" ? "sq" : "rq");
      const create = m.records.find((r) => r.ev === "create" && r.kind === "cq" && r.name === cq);
      const size = create?.ev === "create" ? (create.cqe ?? create.depth) : undefined;
      if (cq === undefined || size === undefined) return [false, "the trace has no size of the CQ"];
      const polled = m.completions.filter((x) => x.rec.cq === cq).length;
      return [polled > c.times * size, `${polled} completion(s) polled from ${cq}, which holds ${size}`];
    }
    case "cq_shared_by_qps": {
      const cq = m.cqOf(NAMES.qp, c.cq === "send" ? "sq" : "rq");
      const qps = new Set(m.completions.filter((x) => x.rec.cq === cq).map((x) => x.rec.qp));
      return [
        qps.has(NAMES.qp) && qps.has(NAMES.peer),
        `completions of ${[...qps].join(", ") || "no QP"} on ${cq}`,
      ];
    }
    case "drained_unconnected": {
      const events = m.records.flatMap((r) => (r.ev === "cm" && r.id === NAMES.qp ? [r.event] : []));
      const errored = m.records.some(
        (r) =>
          (r.ev === "drain" && r.qp === NAMES.qp) ||
          (r.ev === "modify" && r.qp === NAMES.qp && r.state === "ERR"),
      );
      const seen = `rdma_cm events of the QP: ${events.join(", ") || "none"}`;
      if (!errored) return [false, `no drain or modify to ERR of the QP; ${seen}`];
      const refusal = m.records.find((r) => r.ev === "refused" && r.qp === NAMES.qp);
      const held =
        c.how === "never"
          ? events.every((e) => e.endsWith("_RESOLVED")) && !refusal
          : refusal !== undefined && !events.includes("ESTABLISHED");
      return [
        held,
        refusal && refusal.ev === "refused" ? `${seen}; refused by ${refusal.by} (${refusal.rc})` : seen,
      ];
    }
    default:
      return [false, `${c.kind} is read on the device's trace`];
  }
}

/** The capacity of the QP's queue as the driver reported it at create. */
function queueCapacity(m: TraceModel, qp: string, queue: "sq" | "rq"): number | undefined {
  const create = m.records.find((r) => r.ev === "create" && r.kind === "qp" && r.name === qp);
  if (create?.ev !== "create") return undefined;
  return queue === "sq" ? create.max_send_wr : create.max_recv_wr;
}

function qpNumbers(records: readonly TraceRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records)
    if (r.ev === "create" && r.kind === "qp" && r.qp_num !== undefined) out.set(r.name, r.qp_num);
  return out;
}

/** The premise of a scenario checked on one run's traces. */
export function checkPremise(premise: Premise | undefined, input: PremiseInput): PremiseResult | undefined {
  if (premise && "none" in premise) return { none: premise.none };
  const conditions: ConditionResult[] = [];
  const model = new TraceModel(input.records);
  const qpns = qpNumbers(input.records);
  for (const c of premise ?? []) {
    const condition = describeCondition(c, input.driver);
    if (DEVICE_CONDITIONS.includes(c.kind)) {
      if (!input.hw) {
        conditions.push({ condition, held: null, reason: "no hardware trace here" });
        continue;
      }
      const [held, reason] = checkDeviceCondition(c, input.hw, qpns, model);
      conditions.push({ condition, held, reason });
    } else {
      let [held, reason] = checkVerbs(c, model, input.driver);
      // an executor that polls only when it drains shows the error after the drain's modify; the
      // device saw when the QP entered ERROR
      if (!held && c.kind === "error_without_modify" && input.hw) {
        const [onDevice, why] = deviceErrorWithoutModify(input.hw, qpns, c.on);
        if (onDevice) [held, reason] = [true, why];
        else reason = `${reason}; ${why}`;
      }
      conditions.push({ condition, held, reason });
    }
  }
  if (input.faults && input.hw) {
    const [held, reason] = faultsFired(input.hw);
    conditions.push({ condition: "every device fault the scenario arms fires", held, reason });
  }
  if (conditions.length === 0) return undefined;
  return { held: conditions.every((c) => c.held !== false), conditions };
}

/** The first condition that did not hold, as a MISS says it. */
export function premiseMissReason(result: PremiseResult): string | undefined {
  if ("none" in result || result.held) return undefined;
  const first = result.conditions.find((c) => c.held === false);
  return first ? `premise not met: ${first.condition} (${first.reason})` : undefined;
}

export const PREMISE_TITLE = "the situation the scenario exists for happened (its premise)";

/** The premise as a row of each profile's rules: PASS when it held, MISS naming what did not. */
export function premiseRow(result: PremiseResult): RuleVerdict | undefined {
  if ("none" in result) return undefined;
  const head = {
    rule: "premise" as const,
    title: PREMISE_TITLE,
    citation: "DESIGN.md, What is judged: a PASS is a claim made in the situation the scenario exists for",
    applies: true,
  };
  const checked = result.conditions.filter((c) => c.held !== null);
  const missed = premiseMissReason(result);
  if (missed) return { ...head, verdict: "MISS", reason: missed, judged: checked.length };
  if (checked.length === 0)
    return {
      ...head,
      verdict: "SKIP",
      reason: `not observable here: ${result.conditions.map((c) => `${c.condition} (${c.reason})`).join("; ")}`,
      judged: 0,
    };
  return {
    ...head,
    verdict: "PASS",
    reason: `held: ${checked.map((c) => `${c.condition} (${c.reason})`).join("; ")}`,
    judged: checked.length,
  };
}
