/**
 * The command queue (erdma_cmdq.c): an SQ of 32-byte WQEBBs the driver fills with requests, a CQ
 * of the same depth the device answers in, and an EQ (eqn 0) that carries an event per completion
 * the CQ was armed for, on MSI-X vector 0.
 *
 * - Each SQE starts with a u64 header: WQEBB_CNT-1 in 54:52, the driver's cookie in 47:32, sub
 *   module 25:24, opcode 23:16 and the producer index after this SQE in 15:0 (erdma_cmdq.c:260-282).
 *   6.1 drivers use 2 WQEBBs an SQE, later ones 4 (hw.h (6.1):137, hw.h:122).
 * - The doorbell (CMDQ_SQDB) carries the new producer index in 15:0 (erdma_cmdq.c:23-30).
 * - Completion: CQE header (BE) with owner, opcode, qtype CMDQ (2) and the status in the syndrome;
 *   then the SQE's WQEBB index (BE) that the driver uses to find its cookie; then 16 bytes of
 *   response as four BE words (erdma_cmdq.c:284-319).
 * - Polled mode is simply "CQ never armed": 6.1/6.12 drivers arm only after init (use_event,
 *   erdma_cmdq.c:224-229); 7.2 polls commands it sends from atomic context (sleepable=false).
 */
import { get64n, hex, put32 } from "./bits.ts";
import { commandKey, commandName } from "./commands/index.ts";
import type { Command } from "./commands/types.ts";
import { CompletionQueue } from "./cq.ts";
import type { JobContext } from "./engine.ts";
import { ceqe, EventQueue } from "./eq.ts";
import { CmdHdr, CQE_SIZE, CqeQtype, MAX_SQE_SIZE, MSIX_VECTOR_CMDQ, SQEBB_SIZE } from "./hw.ts";
import { QueueBuffer } from "./mtt.ts";
import { Req } from "./req.ts";
import { distance, slot } from "./ring.ts";
import type { DeviceState } from "./state.ts";
import { type CmdObject, CmdStatus, type CmdStatusCode, statusName, toCmdError } from "./status.ts";

export interface CmdqConfig {
  sqBase: bigint;
  /** SQ depth in WQEBBs; the CQ has as many entries (erdma_cmdq.c:128) */
  sqDepth: number;
  cqBase: bigint;
  eqBase: bigint;
  eqDepth: number;
  sqDbrec: bigint;
  cqDbrec: bigint;
  eqDbrec: bigint;
}

/** The SQ producer index is a u16 (erdma.h:48). */
const SQ_INDEX_BITS = 16;
/** one "page" covering a whole contiguous queue */
const FLAT_SHIFT = 40;

interface Outcome {
  status: CmdStatusCode;
  reason?: string;
  object?: CmdObject;
  resp0?: bigint;
  resp1?: bigint;
  detail?: Record<string, unknown>;
}

interface Fetched {
  hdr: bigint;
  bytes: Uint8Array | undefined;
  wqebbs: number;
  error?: Outcome;
}

export class CommandQueue {
  ci = 0;
  pi = 0;
  processed = 0;
  readonly cq: CompletionQueue;
  readonly eq: EventQueue;
  private queued = false;

  constructor(
    private readonly s: DeviceState,
    readonly cfg: CmdqConfig,
    private readonly commands: Map<number, Command>,
  ) {
    this.eq = new EventQueue("cmdq", 0, MSIX_VECTOR_CMDQ, cfg.eqBase, cfg.eqDepth, cfg.eqDbrec, s.eqEnv);
    const buffer = new QueueBuffer([cfg.cqBase], FLAT_SHIFT, 0, cfg.sqDepth * CQE_SIZE);
    this.cq = new CompletionQueue("cmdq", cfg.sqDepth, buffer, 0, cfg.cqDbrec, {
      dma: s.dma,
      tracer: s.tracer,
      engine: s.p.engine,
      event: async (cq) => {
        const [q0, q1] = ceqe(0, cq.pi);
        await this.eq.push(q0, q1, { cmdq: true });
      },
      broken: () => s.tracer.warn("CMDQ CQ unwritable: completions are lost"),
    });
  }

  /** CMDQ_SQDB: record the new producer index now, fetch and execute later. */
  sqDoorbell(value: bigint): void {
    const pi = get64n(value, CmdHdr.WQEBB_INDEX);
    const outstanding = distance(pi, this.ci, SQ_INDEX_BITS);
    if (outstanding > this.cfg.sqDepth) {
      this.s.tracer.warn("CMDQ doorbell beyond the SQ depth: ignored", {
        pi,
        ci: this.ci,
        depth: this.cfg.sqDepth,
      });
      return;
    }
    this.pi = pi;
    this.schedule();
  }

  /** CMDQ_CQDB: arm (and report the consumer index). */
  cqDoorbell(value: bigint): void {
    if (this.cq.doorbell(value)) this.s.p.jobs.post("cmdq-cq-arm", () => this.cq.fireIfPending());
  }

  /** CEQ doorbell 0: the CMDQ EQ's consumer index and re-arm. */
  eqDoorbell(value: bigint): void {
    if (this.eq.doorbell(value)) this.s.p.jobs.post("cmdq-eq-arm", async () => this.eq.fireIfPending());
  }

  /** Starts processing if the driver posted before INIT_DONE (the doorbell was recorded). */
  schedule(): void {
    if (this.queued) return;
    this.queued = true;
    this.s.p.jobs.post("cmdq", async (ctx) => {
      this.queued = false;
      await this.process(ctx);
    });
  }

  private async process(ctx: JobContext): Promise<void> {
    while (ctx.alive() && this.ci !== this.pi) {
      const sqeIdx = this.ci;
      const available = distance(this.pi, sqeIdx, SQ_INDEX_BITS);
      const f = await this.fetch(sqeIdx, available);
      this.ci = (sqeIdx + Math.min(f.wqebbs, available)) & 0xffff;
      const submod = get64n(f.hdr, CmdHdr.SUB_MOD);
      const opcode = get64n(f.hdr, CmdHdr.OPCODE);
      const cookie = get64n(f.hdr, CmdHdr.COOKIE);
      const out: Outcome = f.error ?? (await this.execute(submod, opcode, f.bytes ?? new Uint8Array(0)));
      if (!ctx.alive()) return;
      this.processed++;
      const resp0 = out.resp0 ?? 0n;
      const resp1 = out.resp1 ?? 0n;
      this.s.tracer.emit({
        kind: "cmd",
        opcode,
        submod,
        name: commandName(submod, opcode),
        cookie,
        sqeIdx,
        status: out.status,
        statusName: statusName(out.status),
        ...(out.reason === undefined ? {} : { reason: out.reason }),
        ...(out.object === undefined ? {} : { object: out.object }),
        ...(out.detail === undefined ? {} : { detail: out.detail }),
        ...(out.status === CmdStatus.OK && (out.resp0 !== undefined || out.resp1 !== undefined)
          ? { resp: [hex(resp0), hex(resp1)] as [string, string] }
          : {}),
      });
      await this.complete(sqeIdx, opcode, out.status, resp0, resp1);
    }
  }

  private async fetch(sqeIdx: number, available: number): Promise<Fetched> {
    const depth = this.cfg.sqDepth;
    const at = (i: number) => this.cfg.sqBase + BigInt(slot(i, depth) * SQEBB_SIZE);
    const fault = (hdr: bigint, wqebbs: number, err: unknown): Fetched => ({
      hdr,
      bytes: undefined,
      wqebbs,
      error: { status: CmdStatus.DMA_FAULT, reason: err instanceof Error ? err.message : String(err) },
    });
    // One read for the header and (usually) the whole SQE: as far as the largest SQE, the
    // doorbell or the end of the ring. Over socket DMA every access is a round trip.
    const first = Math.min(MAX_SQE_SIZE / SQEBB_SIZE, available, depth - slot(sqeIdx, depth));
    let head: Uint8Array;
    try {
      head = await this.s.dma.read(at(sqeIdx), first * SQEBB_SIZE, "CMDQ SQE");
    } catch (err) {
      // Without the header the SQE's length is unknown: fail this command and drop the rest of
      // what the doorbell covered, so the queue is back in step with the driver's producer index.
      return fault(0n, available, err);
    }
    const hdr = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
    const wqebbs = get64n(hdr, CmdHdr.WQEBB_CNT) + 1;
    const tooLong = (reason: string): Fetched => ({
      hdr,
      bytes: undefined,
      wqebbs,
      error: { status: CmdStatus.BAD_LENGTH, reason },
    });
    if (wqebbs * SQEBB_SIZE > MAX_SQE_SIZE) return tooLong(`${wqebbs} WQEBBs`);
    if (wqebbs > available) return tooLong(`SQE of ${wqebbs} WQEBBs, doorbell covers ${available}`);
    const expected = (sqeIdx + wqebbs) & 0xffff;
    const index = get64n(hdr, CmdHdr.WQEBB_INDEX);
    if (index !== expected) {
      this.s.tracer.warn("CMDQ SQE header index does not match its position", { sqeIdx, index, expected });
    }
    if (wqebbs <= first) return { hdr, bytes: head.subarray(0, wqebbs * SQEBB_SIZE), wqebbs };
    // the SQE wraps around the end of the ring
    const bytes = new Uint8Array(wqebbs * SQEBB_SIZE);
    bytes.set(head, 0);
    try {
      bytes.set(
        await this.s.dma.read(at(sqeIdx + first), (wqebbs - first) * SQEBB_SIZE, "CMDQ SQE"),
        head.length,
      );
    } catch (err) {
      return fault(hdr, wqebbs, err);
    }
    return { hdr, bytes, wqebbs };
  }

  private async execute(submod: number, opcode: number, bytes: Uint8Array): Promise<Outcome> {
    const cmd = this.commands.get(commandKey(submod, opcode));
    if (!cmd)
      return { status: CmdStatus.BAD_OPCODE, reason: `no command ${submod}/${opcode} on this device` };
    try {
      const r = await cmd.run(this.s, new Req(bytes));
      return { status: CmdStatus.OK, ...r };
    } catch (err) {
      const e = toCmdError(err);
      if (e) return { status: e.status, reason: e.reason, ...(e.object ? { object: e.object } : {}) };
      this.s.tracer.emit({
        kind: "internal-error",
        message: `${cmd.name}: ${err instanceof Error ? err.message : String(err)}`,
        ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
      });
      return { status: CmdStatus.BAD_PARAM, reason: "internal error" };
    }
  }

  private async complete(
    sqeIdx: number,
    opcode: number,
    status: number,
    resp0: bigint,
    resp1: bigint,
  ): Promise<void> {
    const body = new Uint8Array(CQE_SIZE - 4);
    const dv = new DataView(body.buffer);
    dv.setUint32(0, sqeIdx, false);
    dv.setUint32(4, Number(resp0 & 0xffff_ffffn), false);
    dv.setUint32(8, Number((resp0 >> 32n) & 0xffff_ffffn), false);
    dv.setUint32(12, Number(resp1 & 0xffff_ffffn), false);
    dv.setUint32(16, Number((resp1 >> 32n) & 0xffff_ffffn), false);
    const hdr = put32(opcode, [23, 16]) | put32(CqeQtype.CMDQ, [15, 8]) | put32(status, [7, 0]);
    await this.cq.write(hdr, body, true, { qpn: 0 });
  }

  toJSON(): Record<string, unknown> {
    return {
      sqBase: hex(this.cfg.sqBase),
      sqDepth: this.cfg.sqDepth,
      ci: this.ci,
      pi: this.pi,
      processed: this.processed,
      cq: this.cq.toJSON(),
      eq: this.eq.toJSON(),
    };
  }
}
