/**
 * The device's own complaints, each given to the check that explains it (contract.ts): a command it
 * refused, a warning, a DMA fault, an internal error. Each becomes a finding: a problem of that
 * check, or an explanation of why the complaint is the driver's contract working as designed.
 * Whatever no check claims is check (f), status: never silently a PASS.
 */
import { CmdStatus } from "../../../qemu/erdma/status.ts";
import type { ErdmaTraceEventOf } from "../../protocol/hw-trace.ts";
import type { HwCheck } from "./contract.ts";
import { type DeviceView, fmt, type ObjectKind, objectName } from "./device-view.ts";

export interface Finding {
  check: HwCheck;
  reason: string;
  /** the QPs it concerns (an injected fault on one of them may explain it) */
  qpns: number[];
  /** it concerns a CQ or an EQ (an injected interrupt fault may explain it) */
  queueEvent?: boolean;
  /** the contract working as designed: why this complaint is not the driver's fault */
  explained?: string;
  /** a fault of the device model itself: no injected fault explains it */
  modelFault?: boolean;
}

function int(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) ? v : undefined;
}

function qpnsOf(view: DeviceView, kind: ObjectKind, id: number): number[] {
  if (kind === "qp") return [id];
  if (kind === "cq") return view.qpsOn(id);
  return [];
}

function refusal(e: ErdmaTraceEventOf<"cmd">): string {
  return `${e.statusName}${e.reason ? ` (${e.reason})` : ""}`;
}

/** A command the device answered with an error status. */
export function refusedCommand(e: ErdmaTraceEventOf<"cmd">, view: DeviceView): Finding {
  const obj = e.object;
  const qpns = obj ? qpnsOf(view, obj.kind, obj.id) : [];
  const name = obj ? objectName(obj.kind, obj.id) : "";
  if (obj && e.status === CmdStatus.NOT_FOUND) {
    const gone = view.gone(obj.kind, obj.id);
    if (gone?.reset && !gone.reset.driverOrdered)
      return {
        check: "lifetime",
        qpns,
        reason: `${e.name} for ${name}: ${refusal(e)}`,
        explained: `${e.name} for ${name} raced a reset the driver did not order (${gone.reset.reason}, t=${fmt(gone.t)}), which took ${name} with everything else (erdma_pci_driver has no shutdown or reset_prepare hook, erdma_main.c:632-637)`,
      };
    return {
      check: "lifetime",
      qpns,
      queueEvent: obj.kind === "cq" || obj.kind === "eq",
      reason: `${e.name} for ${name}${view.absence(obj.kind, obj.id)}: ${refusal(e)}`,
    };
  }
  if (obj && e.status === CmdStatus.EXISTS) {
    const since = view.created(obj.kind, obj.id);
    return {
      check: "lifetime",
      qpns,
      reason: `${e.name} for ${name}, which exists (${since === undefined ? "created before this trace" : `created t=${fmt(since)}`}, never destroyed): ${refusal(e)}`,
    };
  }
  if (obj?.kind === "qp" && e.status === CmdStatus.BAD_STATE) return refusedTransition(e, view, obj.id);
  if (obj?.kind === "mr" && e.name === "DEREG_MR" && e.status === CmdStatus.BAD_PARAM) {
    const mpt = obj.id >>> 8;
    const held = view.mptKey(mpt);
    const holds = held
      ? `the device's MPT 0x${mpt.toString(16)} holds key ${held.key} (set by ${held.by}, t=${fmt(held.t)})`
      : `the device's MPT 0x${mpt.toString(16)} holds another key`;
    return {
      check: "lifetime",
      qpns: [],
      reason: `DEREG_MR names an MR its MPT does not hold: ${holds}; the driver's ibmr->lkey names another: ${refusal(e)}`,
    };
  }
  if (e.status === CmdStatus.DMA_FAULT)
    return { check: "dma", qpns, reason: `${e.name}${name ? ` for ${name}` : ""}: ${refusal(e)}` };
  return {
    check: "status",
    qpns,
    reason: `${e.name}${name ? ` for ${name}` : ""} answered ${refusal(e)}${e.status === CmdStatus.BAD_OPCODE ? ": a command this device does not have" : ""}`,
  };
}

const STOPPING = new Set(["CLOSING", "TERMINATE"]);

/** MODIFY_QP refused BAD_STATE: explained only when the driver stops a QP the device failed itself. */
function refusedTransition(e: ErdmaTraceEventOf<"cmd">, view: DeviceView, qpn: number): Finding {
  const target = /-> (\w+)$/.exec(e.reason ?? "")?.[1];
  const entry = view.errorEntry(qpn);
  const finding: Finding = {
    check: "qp-state",
    qpns: [qpn],
    reason: `${e.name} of QP ${qpn} refused: ${refusal(e)}`,
  };
  if (target && STOPPING.has(target) && entry?.byDevice)
    finding.explained = `${e.name} of QP ${qpn} to ${target} refused in ERROR: the device moved QP ${qpn} to ERROR itself (${entry.why ?? "a failed WQE"}, t=${fmt(entry.t)}), which the driver learns only as IB_EVENT_QP_FATAL, so it still stops the QP as if in RTS`;
  return finding;
}

/** The QPN a DMA fault's context names ("QP 3 SQE"), if any. */
function contextQpn(context: string): number[] {
  const m = /\bQP (\d+)\b/.exec(context);
  return m ? [Number(m[1])] : [];
}

export function dmaFault(e: ErdmaTraceEventOf<"dma-fault">): Finding {
  return {
    check: "dma",
    qpns: contextQpn(e.context),
    reason: `DMA ${e.access} of ${e.address}+${e.length} (${e.context}) outside the memory the guest mapped: ${e.reason} (t=${fmt(e.t)})`,
  };
}

export function internalError(e: ErdmaTraceEventOf<"internal-error">): Finding {
  return {
    check: "status",
    qpns: [],
    modelFault: true,
    reason: `the device model failed (an internal error, not the driver's doing, but nothing here can vouch for the run): ${e.message} (t=${fmt(e.t)})`,
  };
}

/** A warning of the device (qemu/erdma: trace warn() calls), given to the check it belongs to. */
export function deviceWarning(e: ErdmaTraceEventOf<"warn">, view: DeviceView): Finding {
  const d = e.detail ?? {};
  const at = `(at t=${fmt(e.t)})`;
  const qpn = int(d.qpn);
  const cqn = int(d.cqn) ?? int(d.cq);
  const eqn = int(d.eqn);
  switch (e.message) {
    case "CQ overrun: more CQEs written than the ring holds since the last reported CI":
      return {
        check: "cq-doorbell",
        qpns: cqn === undefined ? [] : view.qpsOn(cqn),
        queueEvent: true,
        reason: `${e.message} ${JSON.stringify(d)} ${at}`,
        explained: `CQ ${cqn ?? "?"} turned over past the consumer index of its last arm doorbell (${int(d.ci) ?? "?"}): erdma reports its CQ consumer index only when it arms (erdma_cq.c:19-30 notify_cq), so a CQ polled without arming turns over with the device none the wiser; an overrun shows at the CQ's next arm doorbell, judged there`,
      };
    case "SQ doorbell for a QP that does not exist":
    case "RQ doorbell for a QP that does not exist":
      return {
        check: "doorbell",
        qpns: qpn === undefined ? [] : [qpn],
        reason: `${e.message.slice(0, 2)} doorbell for QP ${qpn ?? "?"}${qpn === undefined ? "" : view.absence("qp", qpn)} ${at}`,
      };
    case "doorbell for a CQ that does not exist":
      return {
        check: "cq-doorbell",
        qpns: [],
        queueEvent: true,
        reason: `CQ doorbell for CQ ${cqn ?? "?"}${cqn === undefined ? "" : view.absence("cq", cqn)} ${at}`,
      };
    case "doorbell for an EQ that does not exist":
      return {
        check: "doorbell",
        qpns: [],
        queueEvent: true,
        reason: `EQ doorbell for EQ ${eqn ?? "?"}${eqn === undefined ? "" : view.absence("eq", eqn)} ${at}`,
      };
    case "CMDQ doorbell beyond the SQ depth: ignored":
      return {
        check: "doorbell",
        qpns: [],
        reason: `CMDQ doorbell moves the producer index to ${int(d.pi) ?? "?"}, more than the CMDQ's ${int(d.depth) ?? "?"} WQEBBs past its consumer index ${int(d.ci) ?? "?"} ${at}`,
      };
    case "doorbell before INIT_DONE ignored":
      return {
        check: "doorbell",
        qpns: [],
        reason: `a ${String(d.db)} doorbell before the device reported INIT_DONE ${at}`,
      };
    case "CQ destroyed while QPs still use it":
      return {
        check: "lifetime",
        qpns: Array.isArray(d.qps) ? d.qps.filter((x): x is number => int(x) !== undefined) : [],
        queueEvent: true,
        reason: `DESTROY_CQ of CQ ${cqn ?? "?"} while QP ${Array.isArray(d.qps) ? d.qps.join(", ") : "?"} still complete(s) on it ${at}`,
      };
    case "EQ destroyed while CQs still use it":
      return {
        check: "lifetime",
        qpns: [],
        queueEvent: true,
        reason: `DESTROY_EQ of EQ ${eqn ?? "?"} while CQ ${Array.isArray(d.cqs) ? d.cqs.join(", ") : "?"} still report(s) to it ${at}`,
      };
    case "completion for a CQ that does not exist: dropped":
      return {
        check: "lifetime",
        qpns: qpn === undefined ? [] : [qpn],
        queueEvent: true,
        reason: `QP ${qpn ?? "?"} completes on CQ ${cqn ?? "?"}${cqn === undefined ? "" : view.absence("cq", cqn)}: the device dropped a completion ${at}`,
      };
    case "CQ event for an EQ that does not exist: dropped":
      return {
        check: "lifetime",
        qpns: cqn === undefined ? [] : view.qpsOn(cqn),
        queueEvent: true,
        reason: `CQ ${cqn ?? "?"} reports to EQ ${eqn ?? "?"}${eqn === undefined ? "" : view.absence("eq", eqn)}: the device dropped a completion event ${at}`,
      };
    default:
      return {
        check: "status",
        qpns: qpn === undefined ? [] : [qpn],
        queueEvent: e.message.includes("queue"),
        reason: `the device warned: ${e.message}${Object.keys(d).length > 0 ? ` ${JSON.stringify(d)}` : ""} ${at}`,
      };
  }
}
