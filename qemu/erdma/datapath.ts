/**
 * The data path: what the device does after a doorbell. Like siw_qp_tx.c / siw_qp_rx.c, one job
 * per QP and queue walks the work queue from the device's consumer index to the producer index the
 * doorbell gave, executes each SQE against its peer (found on the fabric by the mirrored connection
 * tuple), consumes the peer's RQEs for SENDs, and writes CQEs (signaled SQEs, every RQE, every
 * error). In ERROR it flushes, as far as the behaviour profile says (flush.ts).
 *
 * A WQE that cannot run yet (no peer in RTS, no RQE posted at the peer) waits at the head of its
 * queue; a change on the fabric (a QP reaching RTS, an RQ doorbell) looks again.
 */

import { type AccessFailure, gather, resolveAccess, scatter } from "./access.ts";
import { pendingKey, releaseEarly, writeCompletion } from "./completion.ts";
import type { CqeFields } from "./cq.ts";
import type { WorkQueue as Jobs } from "./engine.ts";
import type { Fabric, FabricPort } from "./fabric.ts";
import type { FaultPlan } from "./faults.ts";
import { type FlushIo, flushQueue } from "./flushing.ts";
import {
  AeType,
  IwarpState,
  MrRight,
  Rocev2State,
  RQE_SIZE,
  SQEBB_SIZE,
  WcStatus,
  WQ_INDEX_BITS,
  WqeOp,
} from "./hw.ts";
import { errorState, type QueuePair, stateName } from "./qp.ts";
import { distance, slot } from "./ring.ts";
import {
  atomicOp,
  dmaRefused,
  localOp,
  localStatus,
  type Outcome,
  type Registration,
  type Responder,
  readOp,
  remoteStatus,
} from "./sqe-ops.ts";
import type { DeviceState } from "./state.ts";
import type { Tracer } from "./trace.ts";
import { countTransfer } from "./traffic-stats.ts";
import { decodeRqe, decodeSqe, type Rqe, type Sqe, sqeWqebbs } from "./wqe.ts";

const IDX_MASK = 0xffff;
const opNames: Record<number, string> = Object.fromEntries(
  Object.entries(WqeOp).map(([name, code]) => [code, name]),
);

export interface DataPathEnv {
  name: string;
  state(): DeviceState;
  jobs: Jobs;
  tracer: Tracer;
  fabric: Fabric;
  faults: FaultPlan;
}

interface Peer {
  dp: DataPath;
  qp: QueuePair;
}
export class DataPath implements FabricPort {
  private readonly scheduled = new Set<string>();
  /** CQEs held back by a reorder-cqe fault, per CQ */
  private readonly held = new Map<number, CqeFields>();
  /** completions on their way to a CQ (a delay-cqe fault), per queue (completion.ts) */
  private readonly pending = new Map<string, number[]>();
  /** delayed completions the flush may release early, per queue (completion.ts releaseEarly) */
  private readonly early = new Map<string, (() => void)[]>();
  private readonly leave: () => void;
  private readonly unlisten: () => void;

  constructor(private readonly env: DataPathEnv) {
    this.leave = env.fabric.join(this);
    // a cleared stall lets the queues run again
    this.unlisten = env.faults.onClear(() => {
      for (const qp of this.qps()) {
        this.schedule(qp, "sq");
        if (this.inError(qp)) this.schedule(qp, "rq");
      }
    });
  }

  get name(): string {
    return this.env.name;
  }

  state(): DeviceState {
    return this.env.state();
  }

  qp(qpn: number): QueuePair | undefined {
    return this.env.state().qps.get(qpn);
  }

  qps(): Iterable<QueuePair> {
    return this.env.state().qps.values();
  }

  detach(): void {
    this.leave();
    this.unlisten();
  }

  // ---- events from doorbells and commands ----------------------------------------------------

  sqDoorbell(qp: QueuePair): void {
    this.schedule(qp, "sq");
  }

  rqDoorbell(qp: QueuePair): void {
    if (this.inError(qp)) this.schedule(qp, "rq");
    // a SEND waiting for this RQE may run now
    else this.env.fabric.changed();
  }

  stateChanged(qp: QueuePair, from: number): void {
    if (qp.proto === "iwarp" && qp.state === IwarpState.CLOSING && from !== qp.state) {
      this.env.jobs.post(`llp-close ${qp.qpn}`, async () => this.llpClosed(qp));
    }
    if (this.inError(qp) && from !== qp.state) {
      this.env.faults.errorEntered(qp.qpn);
      this.schedule(qp, "sq");
      this.schedule(qp, "rq");
    }
    this.env.fabric.changed();
  }

  /**
   * The graceful close the driver asked for with CLOSING has completed on the wire: with work
   * still outstanding the QP goes to ERROR and flushes it, else to IDLE (RDMAC verbs 6.1.1, the
   * Closing state; the driver moves its own state to IDLE or ERROR, erdma_qp.c:18-31, :166-170).
   */
  private async llpClosed(qp: QueuePair): Promise<void> {
    const st = this.env.state();
    if (st.qps.get(qp.qpn) !== qp || qp.state !== IwarpState.CLOSING) return;
    const outstanding =
      distance(qp.sq.pi, qp.sq.ci, WQ_INDEX_BITS) > 0 || distance(qp.rq.pi, qp.rq.ci, WQ_INDEX_BITS) > 0;
    if (outstanding) {
      await this.fail(st, qp, "LLP closed with work requests outstanding", false);
      return;
    }
    qp.state = IwarpState.IDLE;
    this.env.tracer.emit({
      kind: "state",
      object: "qp",
      id: qp.qpn,
      from: "CLOSING",
      to: "IDLE (LLP closed)",
    });
  }

  reflushed(qp: QueuePair): void {
    this.schedule(qp, "sq");
    this.schedule(qp, "rq");
  }

  peerChanged(): void {
    for (const qp of this.qps()) {
      if (distance(qp.sq.pi, qp.sq.ci, WQ_INDEX_BITS) > 0) this.schedule(qp, "sq");
    }
  }

  // ---- scheduling --------------------------------------------------------------------------------

  private schedule(qp: QueuePair, queue: "sq" | "rq"): void {
    const key = `${qp.qpn}/${queue}`;
    if (this.scheduled.has(key)) return;
    this.scheduled.add(key);
    // The device meets the queue when it takes the doorbell, not when the queue's job runs: a
    // resume-queue sent right after the doorbells must find the stall fired, however long the
    // job waits behind others on a loaded host.
    this.env.faults.fire("stall-queue", { qpn: qp.qpn, queue });
    this.env.jobs.post(
      `${queue} ${qp.qpn}`,
      async (ctx) => {
        this.scheduled.delete(key);
        const st = this.env.state();
        if (st.qps.get(qp.qpn) !== qp || !ctx.alive()) return;
        if (this.inError(qp)) this.env.faults.errorEntered(qp.qpn);
        const until = this.env.faults.stalled(qp.qpn, queue);
        if (until !== undefined) {
          if (Number.isFinite(until))
            setTimeout(() => this.schedule(qp, queue), until - Date.now() + 1).unref();
          return;
        }
        if (queue === "sq") await this.runSq(st, qp, ctx.alive);
        else await this.flushRq(st, qp);
      },
      () => this.scheduled.delete(key),
    );
  }

  private inError(qp: QueuePair): boolean {
    return qp.state === errorState(qp.proto);
  }

  private isRts(qp: QueuePair): boolean {
    return qp.state === (qp.proto === "iwarp" ? IwarpState.RTS : Rocev2State.RTS);
  }

  // ---- the send queue ----------------------------------------------------------------------------

  private async runSq(st: DeviceState, qp: QueuePair, alive: () => boolean): Promise<void> {
    // in ERROR the flush goes as far as its limit says: a REFLUSH may name WQEs whose doorbell the
    // device never took (flush.ts), past its own producer index
    if (this.inError(qp)) {
      await this.flushSq(st, qp);
      return;
    }
    while (alive() && distance(qp.sq.pi, qp.sq.ci, WQ_INDEX_BITS) > 0) {
      if (this.inError(qp)) {
        await this.flushSq(st, qp);
        return;
      }
      if (!this.isRts(qp)) return; // not connected yet: the WQEs wait
      const index = qp.sq.ci;
      this.env.faults.fire("stall-queue", { qpn: qp.qpn, queue: "sq", wqe: true }, { index });
      if (this.env.faults.stalled(qp.qpn, "sq") !== undefined) return;
      // the SQ itself unmapped under the device: one WQEBB fails as dmaRefused says
      let status: number = WcStatus.SEND_WQE_FORMAT_ERR;
      const sqe = await this.readSqe(st, qp, index).catch((err: unknown) => {
        const refused = dmaRefused(err, false);
        status = refused.status;
        return {
          ok: false as const,
          reason: `the SQE is unreadable: ${refused.reason}`,
          opcode: 0,
          wqebbs: 1,
        };
      });
      // a header claiming WQEBBs past the producer index takes the consumer index to it, not over
      // it: past it, the 16-bit distance wraps and the loop would run stale entries for up to 2^16
      // WQEBBs without yielding
      const posted = distance(qp.sq.pi, index, WQ_INDEX_BITS);
      if (!sqe.ok) {
        qp.sq.ci = (index + Math.min(sqe.wqebbs, posted)) & IDX_MASK;
        this.traceWqe(qp, "sq", index, sqe.opcode, status, { reason: sqe.reason });
        await this.complete(st, qp, "sq", index, sqe.opcode, status, 0);
        await this.fail(st, qp, `SQE ${index}: ${sqe.reason}`);
        continue;
      }
      const injected = this.env.faults.fire("error-wqe", { qpn: qp.qpn, queue: "sq" }, { index });
      const outcome: Outcome = injected
        ? { done: true, status: injected.status, length: 0, reason: "injected" }
        : await this.execute(st, qp, sqe.sqe);
      if (!outcome.done) {
        this.env.tracer.emit({ kind: "wait", qpn: qp.qpn, queue: "sq", index, reason: outcome.reason });
        return;
      }
      qp.sq.ci = (index + Math.min(sqe.sqe.wqebbs, posted)) & IDX_MASK;
      this.traceWqe(qp, "sq", index, sqe.sqe.opcode, outcome.status, {
        length: outcome.length,
        signaled: sqe.sqe.signaled,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        ...(outcome.registered ? { mr: outcome.registered } : {}),
      });
      if (sqe.sqe.signaled || outcome.status !== WcStatus.SUCCESS) {
        await this.complete(st, qp, "sq", index, sqe.sqe.opcode, outcome.status, outcome.length);
      }
      if (outcome.status !== WcStatus.SUCCESS) await this.fail(st, qp, outcome.reason ?? "WQE error");
    }
  }

  private async readSqe(st: DeviceState, qp: QueuePair, index: number) {
    const at = (i: number) => qp.sq.buffer.address(slot(i, qp.sq.depth) * SQEBB_SIZE);
    const first = await st.dma.read(at(index), SQEBB_SIZE, `QP ${qp.qpn} SQE`);
    const hdr = new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true);
    const count = sqeWqebbs(hdr);
    const bytes = new Uint8Array(count * SQEBB_SIZE);
    bytes.set(first, 0);
    for (let i = 1; i < count; i++) {
      bytes.set(await st.dma.read(at(index + i), SQEBB_SIZE, `QP ${qp.qpn} SQE`), i * SQEBB_SIZE);
    }
    return decodeSqe(bytes);
  }

  private peerOf(qp: QueuePair): Peer | undefined {
    const ep = this.env.fabric.peerOf(qp);
    if (!ep || !(ep.port instanceof DataPath)) return undefined;
    return { dp: ep.port, qp: ep.qp };
  }

  /** The responder of a READ or an atomic, when its QP is in RTS. */
  private responder(qp: QueuePair): Responder | undefined {
    const peer = this.peerOf(qp);
    if (!peer?.dp.isRts(peer.qp)) return undefined;
    return {
      qp: peer.qp,
      st: peer.dp.state(),
      failure: (failure, why) => this.remoteFailure(peer, failure, why),
      dmaFailure: (err) => this.remoteDmaFailure(peer, err),
      count: countTransfer,
    };
  }

  private async execute(st: DeviceState, qp: QueuePair, sqe: Sqe): Promise<Outcome> {
    const notRts: Outcome = { done: false, reason: "peer not in RTS" };
    switch (sqe.kind) {
      case "reg-mr":
      case "local-inv":
        return localOp(st, qp, sqe);
      case "atomic": {
        if (!st.profile.caps.atomic) {
          return {
            done: true,
            status: WcStatus.SEND_WQE_FORMAT_ERR,
            length: 0,
            reason: "atomics not advertised",
          };
        }
        const peer = this.responder(qp);
        return peer ? atomicOp(st, qp, sqe, peer) : notRts;
      }
      case "read": {
        const peer = this.responder(qp);
        return peer ? readOp(st, qp, sqe, peer) : notRts;
      }
      case "send":
      case "write":
        return this.sendOrWrite(st, qp, sqe);
    }
  }

  /** The local payload of a SEND/WRITE: inline bytes or the gathered SGL. */
  private async payload(
    st: DeviceState,
    qp: QueuePair,
    sqe: Extract<Sqe, { kind: "send" | "write" }>,
  ): Promise<Uint8Array | Outcome> {
    if (sqe.inline) return sqe.inline;
    const parts: Uint8Array[] = [];
    for (const sge of sqe.sgl) {
      const r = await resolveAccess(st, qp.pd, sge.key, sge.addr, sge.length, 0);
      if (!r.ok) return { done: true, status: localStatus[r.failure], length: 0, reason: r.why };
      try {
        parts.push(await gather(st, r.segments, `QP ${qp.qpn} SGE`));
      } catch (err) {
        return dmaRefused(err, false);
      }
    }
    if (parts.length === 1 && parts[0]) return parts[0];
    return Buffer.concat(parts);
  }

  private async sendOrWrite(
    st: DeviceState,
    qp: QueuePair,
    sqe: Extract<Sqe, { kind: "send" | "write" }>,
  ): Promise<Outcome> {
    const peer = this.peerOf(qp);
    if (!peer?.dp.isRts(peer.qp)) return { done: false, reason: "peer not in RTS" };
    const consumesRqe = sqe.kind === "send" || sqe.imm !== undefined;
    if (consumesRqe && distance(peer.qp.rq.pi, peer.qp.rq.ci, WQ_INDEX_BITS) === 0) {
      const why = `no RQE posted at ${peer.dp.name} QP ${peer.qp.qpn}`;
      if (st.profile.recvNotPosted === "wait") return { done: false, reason: why };
      await peer.dp.fail(peer.dp.state(), peer.qp, `DDP: no untagged buffer (${why})`);
      // the responder found no RQE (erdma_hw.h ERDMA_WC_RECV_WQE_FORMAT_ERR); erdma_cq.c map_cqe_status
      // reports it as IB_WC_GENERAL_ERR with vendor_err ERDMA_WC_VENDOR_INVALID_RQE
      return { done: true, status: WcStatus.RECV_WQE_FORMAT_ERR, length: 0, reason: why, remoteError: true };
    }
    const data = await this.payload(st, qp, sqe);
    if (!(data instanceof Uint8Array)) return data;
    const pst = peer.dp.state();
    if (sqe.kind === "write") {
      const sink = sqe.sink;
      if (!sink)
        return { done: true, status: WcStatus.SEND_WQE_FORMAT_ERR, length: 0, reason: "WRITE without sink" };
      const r = await resolveAccess(pst, peer.qp.pd, sink.stag, sink.to, data.length, MrRight.REMOTE_WRITE);
      if (!r.ok) return this.remoteFailure(peer, r.failure, r.why);
      try {
        await scatter(pst, r.segments, data, `QP ${peer.qp.qpn} WRITE sink`);
      } catch (err) {
        return this.remoteDmaFailure(peer, err);
      }
      countTransfer(st, pst, data.length);
      if (sqe.imm === undefined) return { done: true, status: WcStatus.SUCCESS, length: data.length };
    }
    // SEND (with imm / inv) or WRITE_WITH_IMM: the peer's next RQE
    const rqIndex = peer.qp.rq.ci;
    peer.qp.rq.ci = (rqIndex + 1) & IDX_MASK;
    let rqe: Rqe;
    try {
      rqe = await peer.dp.readRqe(pst, peer.qp, rqIndex);
    } catch (err) {
      return this.receiveDmaFailure(peer, rqIndex, err);
    }
    let recvOp: number = WqeOp.RECEIVE;
    let word3: CqeFields["word3"];
    if (sqe.imm !== undefined) {
      recvOp = sqe.kind === "write" ? WqeOp.RECV_IMM : WqeOp.RSP_SEND_IMM;
      word3 = { value: sqe.imm, endian: "le" };
    }
    const injected = peer.dp.env.faults.fire(
      "error-wqe",
      { qpn: peer.qp.qpn, queue: "rq" },
      { index: rqIndex },
    );
    if (injected) {
      await peer.dp.receiveError(pst, peer.qp, rqIndex, injected.status, "injected");
      return {
        done: true,
        status: WcStatus.GENERAL_ERR,
        length: 0,
        reason: "the responder's RQE failed (injected)",
      };
    }
    if (sqe.kind === "send") {
      if (data.length > rqe.length) {
        await peer.dp.receiveError(
          pst,
          peer.qp,
          rqIndex,
          WcStatus.RECV_WQE_FORMAT_ERR,
          `${data.length} bytes > RQE ${rqe.length}`,
        );
        return {
          done: true,
          status: WcStatus.GENERAL_ERR,
          length: 0,
          reason: "receive buffer too small",
          remoteError: true,
        };
      }
      const r = await resolveAccess(pst, peer.qp.pd, rqe.stag, rqe.to, data.length, MrRight.LOCAL_WRITE);
      if (!r.ok) {
        await peer.dp.receiveError(pst, peer.qp, rqIndex, remoteStatus[r.failure], r.why);
        return { done: true, status: remoteStatus[r.failure], length: 0, reason: r.why, remoteError: true };
      }
      try {
        await scatter(pst, r.segments, data, `QP ${peer.qp.qpn} RQE`);
      } catch (err) {
        return this.receiveDmaFailure(peer, rqIndex, err);
      }
      countTransfer(st, pst, data.length);
      if (sqe.invalidate !== undefined) {
        const mr = pst.mrs.get(sqe.invalidate >>> 8);
        if (!mr || mr.key !== (sqe.invalidate & 0xff) || mr.pd !== peer.qp.pd || mr.kind === "dma") {
          const why = `SEND_WITH_INV of stag 0x${sqe.invalidate.toString(16)}: no MR of the responder's PD`;
          await peer.dp.receiveError(pst, peer.qp, rqIndex, WcStatus.RECV_STAG_INVALID_ERR, why);
          return {
            done: true,
            status: WcStatus.RECV_STAG_INVALID_ERR,
            length: 0,
            reason: why,
            remoteError: true,
          };
        }
        mr.valid = false;
        recvOp = WqeOp.RECV_INV;
        word3 = { value: sqe.invalidate, endian: "be" };
      }
    }
    peer.dp.traceWqe(peer.qp, "rq", rqIndex, recvOp, WcStatus.SUCCESS, {
      length: data.length,
      peer: this.name,
    });
    await peer.dp.complete(pst, peer.qp, "rq", rqIndex, recvOp, WcStatus.SUCCESS, data.length, {
      ...(word3 ? { word3 } : {}),
      solicited: sqe.solicited,
    });
    return { done: true, status: WcStatus.SUCCESS, length: data.length };
  }

  /** A remote access error: the requester's WQE fails (REM_ACCESS_ERR) and the responder's QP errs. */
  private async remoteFailure(peer: Peer, failure: AccessFailure, why: string): Promise<Outcome> {
    const pst = peer.dp.state();
    await peer.dp.fail(pst, peer.qp, `remote access: ${why}`);
    return { done: true, status: remoteStatus[failure], length: 0, reason: why, remoteError: true };
  }

  /** The responder's memory refused a DMA: its QP goes to ERROR, the requester's WQE fails. */
  private async remoteDmaFailure(peer: Peer, err: unknown): Promise<Outcome> {
    const outcome = dmaRefused(err, true);
    await peer.dp.fail(peer.dp.state(), peer.qp, `remote access: ${outcome.reason}`);
    return outcome;
  }

  /** The responder's RQE (or its buffer) could not be reached: the RQE fails too, in its CQE. */
  private async receiveDmaFailure(peer: Peer, rqIndex: number, err: unknown): Promise<Outcome> {
    const outcome = dmaRefused(err, true);
    await peer.dp.receiveError(peer.dp.state(), peer.qp, rqIndex, WcStatus.GENERAL_ERR, outcome.reason);
    return outcome;
  }

  // ---- the receive queue -------------------------------------------------------------------------

  async readRqe(st: DeviceState, qp: QueuePair, index: number): Promise<Rqe> {
    const addr = qp.rq.buffer.address(slot(index, qp.rq.depth) * RQE_SIZE);
    return decodeRqe(await st.dma.read(addr, RQE_SIZE, `QP ${qp.qpn} RQE`));
  }

  /** An RQE that a SEND could not land in: its error CQE, and the QP to ERROR. */
  async receiveError(
    st: DeviceState,
    qp: QueuePair,
    index: number,
    status: number,
    why: string,
  ): Promise<void> {
    this.traceWqe(qp, "rq", index, WqeOp.RECEIVE, status, { reason: why });
    await this.complete(st, qp, "rq", index, WqeOp.RECEIVE, status, 0);
    await this.fail(st, qp, why);
  }

  // ---- errors and flushing -----------------------------------------------------------------------

  /** A WQE failed: the QP enters ERROR (a QP_FATAL async event) and flushes. */
  async fail(st: DeviceState, qp: QueuePair, why: string, fatal = true): Promise<void> {
    if (this.inError(qp)) return;
    const from = qp.state;
    qp.enterError();
    this.env.tracer.emit({
      kind: "state",
      object: "qp",
      id: qp.qpn,
      from: stateName(qp.proto, from),
      to: `${qp.stateName} (${why})`,
    });
    if (fatal) await st.postAsyncEvent(AeType.QP_FATAL, 0, qp.qpn, 0);
    this.stateChanged(qp, from);
  }

  private flushIo(): FlushIo {
    return {
      tracer: this.env.tracer,
      complete: (st, qp, queue, index, opcode) =>
        this.complete(st, qp, queue, index, opcode, WcStatus.FLUSH_ERR, 0),
      pending: (qp, queue) => this.pending.get(pendingKey(qp.qpn, queue)) ?? [],
      reached: (qp, queue) => {
        releaseEarly({ early: this.early }, qp, queue);
      },
    };
  }

  private flushSq(st: DeviceState, qp: QueuePair): Promise<void> {
    return flushQueue(this.flushIo(), st, qp, "sq");
  }

  private async flushRq(st: DeviceState, qp: QueuePair): Promise<void> {
    if (!this.inError(qp)) return;
    await flushQueue(this.flushIo(), st, qp, "rq");
  }

  // ---- completions -------------------------------------------------------------------------------

  traceWqe(
    qp: QueuePair,
    queue: "sq" | "rq",
    index: number,
    opcode: number,
    status: number,
    extra: { length?: number; signaled?: boolean; peer?: string; reason?: string; mr?: Registration },
  ): void {
    this.env.tracer.emit({
      kind: "wqe",
      qpn: qp.qpn,
      queue,
      index,
      opcode,
      op: opNames[opcode] ?? `OP_${opcode}`,
      status,
      ...extra,
    });
  }

  /** Writes the CQE of a WQE on its queue's CQ, through the CQE faults (completion.ts). */
  complete(
    st: DeviceState,
    qp: QueuePair,
    queue: "sq" | "rq",
    index: number,
    opcode: number,
    status: number,
    size: number,
    extra: Pick<CqeFields, "word3" | "solicited"> = {},
  ): Promise<void> {
    const cqe = { queue, index, opcode, status, size, extra };
    return writeCompletion(
      {
        ...this.env,
        held: this.held,
        pending: this.pending,
        early: this.early,
        // a flush held behind this completion goes on once it is written
        settled: (q, queue) => {
          if (this.inError(q)) this.schedule(q, queue);
        },
      },
      st,
      qp,
      cqe,
    );
  }
}
