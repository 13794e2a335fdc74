/**
 * Rule hw-protocol (README, What is judged, rule 10): how the driver used the hardware interface,
 * read from the device's own trace. Each command, doorbell and complaint of the device is checked
 * against the driver/device contract (harness/oracle/hw-protocol/contract.ts): (a) no command or
 * completion for an object that does not exist or was destroyed, (b) no SQ/RQ doorbell beyond
 * what can have been written, (c) REFLUSH producer indexes that agree with the doorbells, (d) CQ
 * doorbells within the CQ, (e) no DMA outside mapped memory, (g) no send WQE the device cannot
 * parse, (f) every refused command, device
 * warning and internal error explained by a check or by the scenario's injected fault, else a
 * FAIL naming it. An explained complaint is listed in the verdict's evidence, never dropped.
 */
import { WcStatus } from "../../../qemu/erdma/hw.ts";
import { type ErdmaTraceEvent, isServerLine } from "../../protocol/hw-trace.ts";
import { contractLine, type HwCheck } from "../hw-protocol/contract.ts";
import { DeviceView, fmt } from "../hw-protocol/device-view.ts";
import { cqDoorbell, workQueueDoorbell } from "../hw-protocol/doorbells.ts";
import { ReflushLedger } from "../hw-protocol/reflush.ts";
import {
  deviceWarning,
  dmaFault,
  type Finding,
  internalError,
  refusedCommand,
} from "../hw-protocol/refusals.ts";
import { fail, notUnder, type Problem, pass, type Rule, type RuleResult, skip } from "../rule.ts";
import { devicesNamed } from "./hw-complete.ts";

/** A fault the scenario injected, as it fired. */
interface Fired {
  at: number;
  qpn?: number;
  what: string;
}

interface Device {
  view: DeviceView;
  reflush: ReflushLedger;
  fired: Fired[];
}

/** A finding where it happened: the index of the event that shows it. */
interface Located extends Finding {
  at: number;
  dev: string;
}

function int(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) ? v : undefined;
}

function firedFault(at: number, e: Extract<ErdmaTraceEvent, { kind: "fault" }>): Fired {
  const qpn = int(e.context?.qpn);
  const kind = typeof e.fault?.kind === "string" ? e.fault.kind : "fault";
  const on =
    qpn !== undefined
      ? ` on QP ${qpn}`
      : int(e.context?.vector) !== undefined
        ? ` on vector ${e.context?.vector}`
        : "";
  return { at, ...(qpn !== undefined ? { qpn } : {}), what: `${kind}${on}, t=${fmt(e.t)}` };
}

/** The injected fault that explains a finding: one fired before it, on a QP it concerns (or on an interrupt). */
function faultExplaining(f: Located, fired: readonly Fired[]): Fired | undefined {
  if (f.modelFault) return undefined;
  return fired.find(
    (x) =>
      x.at < f.at &&
      (x.qpn !== undefined ? f.qpns.includes(x.qpn) : f.queueEvent === true || f.qpns.length === 0),
  );
}

/** Walks one trace: every finding, and how many device interactions were checked. */
export function hwProtocolFindings(events: readonly ErdmaTraceEvent[]): {
  findings: Located[];
  judged: number;
  commands: number;
  doorbells: number;
} {
  const devices = new Map<string, Device>();
  const findings: Located[] = [];
  let judged = 0;
  let commands = 0;
  let doorbells = 0;
  const device = (dev: string): Device => {
    let d = devices.get(dev);
    if (!d) {
      d = { view: new DeviceView(), reflush: new ReflushLedger(), fired: [] };
      devices.set(dev, d);
    }
    return d;
  };
  const add = (at: number, dev: string, f: Finding) => findings.push({ ...f, at, dev });
  const reflushed = (dev: string, check: HwCheck, list: { at: number; qpn: number; reason: string }[]) => {
    for (const r of list) add(r.at, dev, { check, qpns: [r.qpn], reason: r.reason });
  };
  events.forEach((e, at) => {
    const d = device(e.dev);
    switch (e.kind) {
      case "state":
        d.view.state(e);
        if (e.object === "qp" && e.from === "none") d.reflush.created(e.id);
        if (e.object === "qp" && e.to === "destroyed") reflushed(e.dev, "reflush", d.reflush.destroyed(e.id));
        if (e.object === "device" && e.to.startsWith("reset")) d.reflush = new ReflushLedger();
        return;
      case "cmd": {
        judged++;
        commands++;
        d.view.command(e);
        if (e.status !== 0) {
          add(at, e.dev, refusedCommand(e, d.view));
          return;
        }
        const qpn = int(e.detail?.qpn);
        const sq = int(e.detail?.sqPi);
        const rq = int(e.detail?.rqPi);
        if (e.name === "REFLUSH" && qpn !== undefined && sq !== undefined && rq !== undefined)
          reflushed(e.dev, "reflush", d.reflush.reflush(at, e.t, qpn, { sq, rq }));
        return;
      }
      case "doorbell": {
        judged++;
        doorbells++;
        // a doorbell for a QP the device has (its ring, or its creation in this trace)
        if ((e.db === "sq" || e.db === "rq") && e.id !== undefined && (e.ring || d.view.exists("qp", e.id))) {
          const problem = workQueueDoorbell(e);
          if (problem) add(at, e.dev, { check: "doorbell", qpns: [e.id], reason: problem });
          const pi = int(e.detail?.pi);
          if (pi !== undefined) d.reflush.doorbell(e.id, e.db, pi);
        }
        if (e.db === "cq" && e.ring && e.id !== undefined) {
          const problem = cqDoorbell(events, at);
          if (problem)
            add(at, e.dev, {
              check: "cq-doorbell",
              qpns: d.view.qpsOn(e.id),
              queueEvent: true,
              reason: problem,
            });
        }
        return;
      }
      case "wqe":
        d.view.wqe(e);
        if (e.queue === "sq" && e.status === WcStatus.SEND_WQE_FORMAT_ERR && e.reason !== "injected") {
          judged++;
          add(at, e.dev, {
            check: "wqe-format",
            qpns: [e.qpn],
            reason: `QP ${e.qpn} sq WQE ${e.index} (${e.op}) is one the device cannot parse: ${e.reason ?? "format error"} (t=${fmt(e.t)})`,
          });
        }
        return;
      case "warn":
        judged++;
        add(at, e.dev, deviceWarning(e, d.view));
        return;
      case "internal-error":
        judged++;
        add(at, e.dev, internalError(e));
        return;
      case "dma-fault":
        judged++;
        add(at, e.dev, dmaFault(e));
        return;
      case "fault":
        // a resume-queue or raise-irq ends a stall or hold: it makes the device do nothing wrong
        if (e.action === "fired" && e.fault?.kind !== "resume-queue" && e.fault?.kind !== "raise-irq")
          d.fired.push(firedFault(at, e));
        return;
    }
  });
  for (const [dev, d] of devices) reflushed(dev, "reflush", d.reflush.end());
  for (const f of findings) {
    if (f.explained) continue;
    const fault = faultExplaining(f, devices.get(f.dev)?.fired ?? []);
    if (fault) f.explained = `injected fault (${fault.what}): ${f.reason}`;
  }
  findings.sort((a, b) => a.at - b.at);
  return { findings, judged, commands, doorbells };
}

function quote(e: ErdmaTraceEvent | undefined): string {
  if (!e) return "(end of the trace)";
  const { stack: _stack, ...rest } = e as ErdmaTraceEvent & { stack?: string };
  const json = JSON.stringify(rest);
  return json.length > 400 ? `${json.slice(0, 400)}...` : json;
}

export function judgeHwProtocol(events: readonly ErdmaTraceEvent[]): RuleResult {
  const { findings, judged, commands, doorbells } = hwProtocolFindings(events);
  if (judged === 0) return skip("the hardware trace holds no command, doorbell or device complaint");
  const named = devicesNamed(events);
  const where = (f: Located) => (named ? `${f.dev}: ` : "");
  const problems: Problem[] = findings
    .filter((f) => !f.explained)
    .map((f) => ({
      reason: `${where(f)}${f.reason}`,
      evidence: [contractLine(f.check), quote(events[f.at])],
    }));
  if (problems.length > 0) return fail(problems, judged);
  const explained = findings.map((f) => `${where(f)}explained (${f.check}): ${f.explained}`);
  const result = pass(
    `${commands} command(s) and ${doorbells} doorbell(s) used the device as its contract says${
      explained.length > 0
        ? `; ${explained.length} complaint(s) of the device explained (see the evidence)`
        : ""
    }`,
    judged,
  );
  return explained.length > 0 ? { ...result, evidence: explained } : result;
}

export const hwProtocolRule: Rule = {
  id: "hw-protocol",
  title: "the driver uses the hardware interface as its contract says (the device's own trace)",
  citation:
    "README, What is judged, rule 10; erdma in Linux 6.12.95: erdma_verbs.c erdma_flush_worker and erdma_destroy_qp, erdma_qp.c erdma_post_send and erdma_post_recv_one, erdma_cq.c notify_cq, erdma_hw.h (the REFLUSH request), erdma_cmdq.c; one citation per check in harness/oracle/hw-protocol/contract.ts",
  judge({ hw }) {
    if (hw === undefined) return notUnder("no hardware trace here (siw, or a device of your own)");
    return judgeHwProtocol(hw.filter((e): e is ErdmaTraceEvent => !isServerLine(e)));
  },
};
