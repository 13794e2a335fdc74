/**
 * The hardware trace: one structured, JSON-serialisable event per register access, doorbell,
 * command, queue element written, interrupt, state change and fault. 64-bit values are hex strings.
 */
export type Doorbell = "cmdq-sq" | "cmdq-cq" | "aeq" | "ceq" | "sq" | "rq" | "cq";

export type ErdmaTraceEvent = { t: number; dev: string } & (
  | { kind: "reg-read"; offset: number; size: number; name: string; value: string }
  | { kind: "reg-write"; offset: number; size: number; name: string; value: string }
  | { kind: "doorbell"; db: Doorbell; value: string; id?: number; detail?: Record<string, unknown> }
  | {
      kind: "cmd";
      opcode: number;
      submod: number;
      name: string;
      cookie: number;
      sqeIdx: number;
      status: number;
      statusName: string;
      reason?: string;
      detail?: Record<string, unknown>;
      resp?: [string, string];
    }
  | {
      kind: "state";
      object: "device" | "qp" | "cq" | "eq" | "mr" | "cmdq";
      id: number;
      from: string;
      to: string;
    }
  | {
      kind: "cqe";
      cq: number | "cmdq";
      index: number;
      owner: number;
      qpn: number;
      syndrome: number;
      opcode: number;
    }
  | { kind: "eqe"; eq: number | "aeq"; index: number; owner: number; detail: Record<string, unknown> }
  | { kind: "irq"; vector: number; delivered: boolean; source: string }
  | {
      kind: "dma-fault";
      address: string;
      length: number;
      access: "read" | "write";
      context: string;
      reason: string;
    }
  | { kind: "reflush"; qpn: number; sqPi: number; rqPi: number; mode: string }
  | {
      kind: "wqe";
      qpn: number;
      queue: "sq" | "rq";
      index: number;
      opcode: number;
      op: string;
      /** the completion status (erdma_wc_status), or "wait" when the WQE cannot run yet */
      status: number;
      length?: number;
      signaled?: boolean;
      peer?: string;
      reason?: string;
    }
  | {
      kind: "flush";
      qpn: number;
      queue: "sq" | "rq";
      from: number;
      to: number;
      count: number;
      /** what bounded the flush: the producer index, the index at the error, or REFLUSH's */
      limit: "pi" | "error" | "reflush";
    }
  | { kind: "wait"; qpn: number; queue: "sq" | "rq"; index: number; reason: string }
  | {
      kind: "fault";
      action: "armed" | "fired" | "cleared";
      id?: number;
      fault?: Record<string, unknown>;
      context?: Record<string, unknown>;
    }
  | { kind: "warn"; message: string; detail?: Record<string, unknown> }
  | { kind: "internal-error"; message: string; stack?: string }
);

/** Distributes an event type over the union members so `Omit` keeps each member's fields. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type TraceInput = DistributiveOmit<ErdmaTraceEvent, "t" | "dev">;

export class Tracer {
  constructor(
    private readonly sink: (e: ErdmaTraceEvent) => void,
    private readonly clock: () => number,
    readonly dev: string,
  ) {}

  emit(e: TraceInput): void {
    try {
      this.sink({ t: this.clock(), dev: this.dev, ...e } as ErdmaTraceEvent);
    } catch {
      // a failing trace sink must not take the device down
    }
  }

  warn(message: string, detail?: Record<string, unknown>): void {
    this.emit(detail ? { kind: "warn", message, detail } : { kind: "warn", message });
  }
}
