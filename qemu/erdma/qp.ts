/**
 * Queue pairs: the QP context (queue buffers located through their MTTs, doorbell records, CQs,
 * connection tuple) and the state machine the device enforces on MODIFY_QP. Like siw_qp.c, the
 * state machine is a table; unlike the driver's (erdma_qp.c:120-187), it is the hardware's view:
 * a transition the device does not accept fails the command and leaves the state unchanged.
 */
import { IwarpState, Rocev2State } from "./hw.ts";
import type { QueueBuffer } from "./mtt.ts";

export type Protocol = "iwarp" | "rocev2";

const iwarpNames = ["IDLE", "RTR", "RTS", "CLOSING", "TERMINATE", "ERROR"];
const rocev2Names = ["RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERROR"];

export function stateName(proto: Protocol, state: number): string {
  return (proto === "iwarp" ? iwarpNames : rocev2Names)[state] ?? `STATE_${state}`;
}

export function isValidState(proto: Protocol, state: number): boolean {
  return (
    Number.isInteger(state) && state >= 0 && state < (proto === "iwarp" ? iwarpNames : rocev2Names).length
  );
}

const I = IwarpState;
/**
 * iWARP transitions the device accepts. From the driver: IDLE/RTR -> RTS (connect, with the TCP
 * tuple) or ERROR; RTS -> CLOSING/TERMINATE/ERROR; CLOSING -> ERROR (erdma_qp.c:132-175); the
 * driver also moves TERMINATE -> ERROR/CLOSING and CLOSING -> IDLE (erdma_qp.c:18-31) without a
 * command, so the device allows them too. ERROR -> ERROR and CLOSING -> CLOSING are no-ops.
 * ERROR -> CLOSING/TERMINATE is the profile's choice (profile.ts closeInError; MODIFY_QP).
 */
const iwarpAllowed: Record<number, readonly number[]> = {
  [I.IDLE]: [I.RTR, I.RTS, I.ERROR],
  [I.RTR]: [I.RTS, I.ERROR],
  [I.RTS]: [I.CLOSING, I.TERMINATE, I.ERROR],
  [I.CLOSING]: [I.CLOSING, I.IDLE, I.ERROR],
  [I.TERMINATE]: [I.CLOSING, I.ERROR],
  [I.ERROR]: [I.ERROR],
};

const R = Rocev2State;
/** RoCEv2 transitions (IBTA 10.3.1 as ib_modify_qp_is_ok enforces it): any state -> RESET/ERROR. */
const rocev2Allowed: Record<number, readonly number[]> = {
  [R.RESET]: [R.RESET, R.INIT],
  [R.INIT]: [R.INIT, R.RTR],
  [R.RTR]: [R.RTS],
  [R.RTS]: [R.RTS, R.SQD],
  [R.SQD]: [R.SQD, R.RTS],
  [R.SQE]: [R.RTS],
  [R.ERROR]: [],
};

export function transitionAllowed(proto: Protocol, from: number, to: number): boolean {
  if (proto === "rocev2") {
    if (to === R.RESET || to === R.ERROR) return true;
    return rocev2Allowed[from]?.includes(to) ?? false;
  }
  return iwarpAllowed[from]?.includes(to) ?? false;
}

/** The error state entered by a fatal event or a flush, per protocol. */
export function errorState(proto: Protocol): number {
  return proto === "iwarp" ? I.ERROR : R.ERROR;
}

export interface WorkQueue {
  /** entries: 32-byte WQEBBs for the SQ, RQEs for the RQ */
  depth: number;
  buffer: QueueBuffer;
  dbrec: bigint;
  cqn: number;
  /** the producer index from the last doorbell */
  pi: number;
  /** the device's consumer index: the next WQE it will process or flush */
  ci: number;
  doorbells: number;
}

/** MODIFY_QP to RTS for iWARP: the connection the driver's CM set up (hw.h:292-302). */
export interface IwarpConnection {
  sip: string;
  dip: string;
  sport: number;
  dport: number;
  /** the peer's MPA cookie */
  cookie: number;
  sendNxt: number;
  recvNxt: number;
  cc: number;
}

export interface Rocev2Attrs {
  dstQpn?: number;
  qkey?: number;
  sqPsn?: number;
  rqPsn?: number;
  av?: Record<string, unknown>;
}

export class QueuePair {
  state: number;
  connection: IwarpConnection | undefined;
  rocev2: Rocev2Attrs = {};
  /** producer indices when the QP entered ERROR (what "stop" hardware still flushes) */
  errorAt: { sqPi: number; rqPi: number } | undefined;
  /** the indices named by the last honoured REFLUSH */
  reflushTo: { sqPi: number; rqPi: number } | undefined;
  reflushCount = 0;

  constructor(
    readonly qpn: number,
    readonly proto: Protocol,
    readonly type: "rc" | "ud",
    readonly pd: number,
    /** returned by CREATE_QP; the driver sends it to the peer in the MPA exchange (erdma_cm.c:724) */
    readonly cookie: number,
    readonly sq: WorkQueue,
    readonly rq: WorkQueue,
    readonly extDb: { sdb: number; rdb: number } | undefined,
  ) {
    this.state = proto === "iwarp" ? I.IDLE : R.RESET;
  }

  /** Moves to the error state, recording the producer indices seen at that moment. */
  enterError(): void {
    const to = errorState(this.proto);
    if (this.state !== to) this.errorAt = { sqPi: this.sq.pi, rqPi: this.rq.pi };
    this.state = to;
  }

  get stateName(): string {
    return stateName(this.proto, this.state);
  }

  toJSON(): Record<string, unknown> {
    const wq = (q: WorkQueue) => ({
      depth: q.depth,
      cqn: q.cqn,
      pi: q.pi,
      ci: q.ci,
      doorbells: q.doorbells,
      dbrec: `0x${q.dbrec.toString(16)}`,
      buffer: q.buffer.toJSON(),
    });
    return {
      qpn: this.qpn,
      proto: this.proto,
      type: this.type,
      pd: this.pd,
      cookie: this.cookie,
      state: this.stateName,
      sq: wq(this.sq),
      rq: wq(this.rq),
      connection: this.connection,
      rocev2: this.rocev2,
      errorAt: this.errorAt,
      reflushTo: this.reflushTo,
      reflushCount: this.reflushCount,
      extDb: this.extDb,
    };
  }
}
