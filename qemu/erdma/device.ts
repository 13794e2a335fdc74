/**
 * The erdma device core: PCI identity, BAR0 register and doorbell handlers, reset, and the deferred
 * engine behind them. The vfio-user glue maps bar0Read/bar0Write/reset onto its region and reset
 * callbacks, gives the core guest memory and MSI-X through ErdmaHost, and hosts the MSI-X table in
 * BAR2 with `msixVectors` vectors.
 *
 * Register handlers change state at once (a doorbell's producer index, an arm bit, INIT_DONE) and
 * queue the slow work (fetching SQEs, writing CQEs/EQEs, interrupts); they never touch guest memory.
 */
import { hex, U64_MASK } from "./bits.ts";
import { type CmdqConfig, CommandQueue } from "./cmdq.ts";
import { commandTable } from "./commands/index.ts";
import type { Command } from "./commands/types.ts";
import { DataPath } from "./datapath.ts";
import { Dma } from "./dma.ts";
import { type DataPathHooks, doorbellSpace, ringDoorbell } from "./doorbells.ts";
import { WorkQueue } from "./engine.ts";
import { EventQueue } from "./eq.ts";
import { Fabric } from "./fabric.ts";
import { FaultPlan } from "./faults.ts";
import type { ErdmaHost } from "./host.ts";
import {
  BAR0_SIZE,
  CQE_SIZE,
  DB_SPACE_BASE,
  DEV_CTRL_INIT,
  DEV_CTRL_RESET,
  DEV_ST_INIT_DONE,
  DEV_ST_RESET_DONE,
  EQE_SIZE,
  MSIX_BAR,
  MSIX_VECTOR_CMDQ,
  PCI_DEVICE_ERDMA,
  PCI_VENDOR_ALIBABA,
  Proto,
  Reg,
  SQEBB_SIZE,
} from "./hw.ts";
import { parseMac } from "./mac.ts";
import { checkProfile, type ErdmaProfile, profileReflush } from "./profile.ts";
import { type QueueEngine, tsQueueEngine } from "./queue-engine.ts";
import {
  CONFIG_REGS,
  type DoorbellSlot,
  doorbellAt,
  RegisterFile,
  registerName,
  STATS_REGS,
} from "./registers.ts";
import { releaseErrorQps } from "./release.ts";
import { DeviceState, type Plumbing } from "./state.ts";
import { Tracer } from "./trace.ts";

/** PCI identity as the vfio-user library declares devices. Class 0x0200: Ethernet controller. */
export const ERDMA_PCI_IDENTITY = {
  vendorId: PCI_VENDOR_ALIBABA,
  deviceId: PCI_DEVICE_ERDMA,
  subsystemVendorId: PCI_VENDOR_ALIBABA,
  subsystemId: PCI_DEVICE_ERDMA,
  classCode: 0x02_00_00,
  revision: 0x01,
} as const;

/** BARs: BAR0 registers and doorbells (64-bit memory), BAR2 the MSI-X table and PBA. */
export const ERDMA_BARS = {
  bar0: { index: 0, size: BAR0_SIZE, type: "mem64" },
  msix: { index: MSIX_BAR, size: 0x1000, type: "mem64", tableOffset: 0, pbaOffset: 0x800 },
} as const;

export interface ErdmaDeviceOptions {
  /** what decides CQEs and flushes (default: the TypeScript reference engine) */
  engine?: QueueEngine;
  host: ErdmaHost;
  /** the MAC of the guest NIC erdma pairs with ("52:54:00:12:34:56", 6 bytes, or a 48-bit number) */
  mac: string | Uint8Array | bigint;
  profile?: ErdmaProfile;
  /** names the device in trace events */
  name?: string;
  /** seeds the per-QP MPA cookies */
  seed?: number;
  dataPath?: DataPathHooks;
  /** the wire to other devices; default: a fabric of its own (loopback only) */
  fabric?: Fabric;
  /** the fault plan to consult (one that outlives this core); default: a fresh one */
  faults?: FaultPlan;
}

export type AccessSize = 1 | 2 | 4 | 8;

export class ErdmaDevice {
  readonly profile: ErdmaProfile;
  readonly name: string;
  readonly mac: bigint;
  private readonly host: ErdmaHost;
  private readonly tracer: Tracer;
  private readonly jobs: WorkQueue;
  private readonly commands: Map<number, Command>;
  private readonly regs = new RegisterFile();
  /** the low halves of doorbells written as two 32-bit accesses */
  private readonly latch = new Map<number, number>();
  /** register-visible traffic counters (hw.h:47-57), for the data path to bump */
  readonly counters = new Map<number, bigint>(STATS_REGS.map((r) => [r, 0n]));
  private readonly seed: number;
  private readonly engine: QueueEngine;
  private readonly dataPath: DataPathHooks;
  /** the built-in data path (absent when a test supplied its own hooks) */
  readonly dataPathCore: DataPath | undefined;
  /** faults armed for this device (fault injection API) */
  readonly faults: FaultPlan;
  private dma: Dma;
  private st: DeviceState;
  private cmdq: CommandQueue | undefined;
  private devSt = DEV_ST_RESET_DONE;
  private devCtrl = 0;
  /** > 0 while a register access (or reset) is being handled */
  private accessDepth = 0;

  constructor(opts: ErdmaDeviceOptions) {
    this.host = opts.host;
    this.profile = checkProfile(opts.profile ?? profileReflush);
    this.name = opts.name ?? "erdma";
    this.mac = parseMac(opts.mac);
    this.seed = opts.seed ?? 0x5eed;
    this.engine = opts.engine ?? tsQueueEngine;
    this.tracer = new Tracer(
      (e) => this.host.trace(e),
      () => this.host.now(),
      this.name,
    );
    this.faults = opts.faults ?? new FaultPlan(this.tracer);
    const defer = this.host.defer
      ? (fn: () => void) => this.host.defer?.(fn)
      : (fn: () => void) => setImmediate(fn);
    this.jobs = new WorkQueue(
      defer,
      (job, err) => this.internalError(`job ${job}`, err),
      () => this.accessDepth > 0,
    );
    this.commands = commandTable(this.profile);
    this.dma = new Dma(this.host.dma, this.tracer);
    if (opts.dataPath) {
      this.dataPath = opts.dataPath;
    } else {
      this.dataPathCore = new DataPath({
        name: this.name,
        state: () => this.st,
        jobs: this.jobs,
        tracer: this.tracer,
        fabric: opts.fabric ?? new Fabric(),
        faults: this.faults,
      });
      this.dataPath = this.dataPathCore;
    }
    this.st = new DeviceState(this.plumbing(), this.seed);
  }

  get msixVectors(): number {
    return this.profile.msixVectors;
  }

  /** The state behind the registers (object tables, counters), for the data path and tests. */
  get state(): DeviceState {
    return this.st;
  }

  get initialized(): boolean {
    return this.cmdq !== undefined;
  }

  /** Flushes what the QPs in ERROR hold unflushed, after a hang the harness judged (release.ts). */
  release(): number[] {
    return releaseErrorQps(this.st.qps.values(), this.dataPathCore, this.tracer);
  }

  /** deferred jobs queued or running */
  get pendingJobs(): number {
    return this.jobs.pending;
  }

  /** Resolves when no deferred work is queued or running. */
  idle(): Promise<void> {
    return this.jobs.idle();
  }

  /** Runs `fn` as deferred device work (in order with command processing); rejects if a reset drops it. */
  submit<T>(name: string, fn: (state: DeviceState) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const state = this.st;
      this.jobs.post(
        name,
        async () => {
          try {
            resolve(await fn(state));
          } catch (err) {
            reject(err);
          }
        },
        () => reject(new Error(`${name}: dropped by a device reset`)),
      );
    });
  }

  bar0Read(offset: number, size: AccessSize): number | bigint {
    this.accessDepth++;
    try {
      if (!validAccess(offset, size)) {
        this.tracer.warn("bad BAR0 read access", { offset, size });
        return size === 8 ? 0n : 0;
      }
      const value = this.read(offset, size);
      this.tracer.emit({
        kind: "reg-read",
        offset,
        size,
        name: offset >= DB_SPACE_BASE ? "DB_SPACE" : registerName(offset),
        value: hex(value),
      });
      return value;
    } catch (err) {
      this.internalError("bar0Read", err);
      return size === 8 ? 0n : 0;
    } finally {
      this.accessDepth--;
    }
  }

  bar0Write(offset: number, size: AccessSize, value: number | bigint): void {
    this.accessDepth++;
    try {
      if (!validAccess(offset, size)) {
        this.tracer.warn("bad BAR0 write access", { offset, size });
        return;
      }
      const v = BigInt.asUintN(size * 8, BigInt(value));
      this.tracer.emit({
        kind: "reg-write",
        offset,
        size,
        name: offset >= DB_SPACE_BASE ? "DB_SPACE" : registerName(offset),
        value: hex(v),
      });
      this.write(offset, size, v);
    } catch (err) {
      this.internalError("bar0Write", err);
    } finally {
      this.accessDepth--;
    }
  }

  /** Function-level reset (vfio-user DEVICE_RESET, PCI FLR): everything back to power-on state. */
  reset(reason = "reset"): void {
    this.accessDepth++;
    try {
      this.resetInternal(reason);
    } catch (err) {
      this.internalError("reset", err);
    } finally {
      this.accessDepth--;
    }
  }

  snapshot(): Record<string, unknown> {
    return {
      name: this.name,
      profile: this.profile.name,
      devSt: this.devSt,
      mac: hex(this.mac),
      cmdq: this.cmdq?.toJSON(),
      dma: { reads: this.dma.reads, writes: this.dma.writes, faults: this.dma.faults },
      pendingJobs: this.jobs.pending,
      ...this.st.snapshot(),
    };
  }

  // ---- registers ---------------------------------------------------------------------------

  private read(offset: number, size: AccessSize): number | bigint {
    if (offset >= DB_SPACE_BASE) return size === 8 ? 0n : 0; // doorbells are write-only
    if (size === 8) {
      const stat = this.counters.get(offset);
      if (stat !== undefined) return stat & U64_MASK;
      return BigInt(this.read32(offset)) | (BigInt(this.read32(offset + 4)) << 32n);
    }
    const word = this.read32(offset & ~3);
    if (size === 4) return word;
    const shift = (offset & 3) * 8;
    return (word >>> shift) & (size === 1 ? 0xff : 0xffff);
  }

  private read32(offset: number): number {
    switch (offset) {
      case Reg.VERSION:
        return this.profile.version >>> 0;
      case Reg.DEV_PROTO:
        return this.profile.protocol === "rocev2" ? Proto.ROCEV2 : Proto.IWARP;
      case Reg.DEV_CTRL:
        return this.devCtrl;
      case Reg.DEV_ST:
        return this.devSt;
      // u64_to_ether_addr(L | H << 32) (erdma_main.c:567-570): H holds the first two octets
      case Reg.NETDEV_MAC_L:
        return Number(this.mac & 0xffff_ffffn);
      case Reg.NETDEV_MAC_H:
        return Number(this.mac >> 32n);
      case Reg.GRP_NUM:
        return this.profile.grpNum >>> 0;
    }
    const stat = this.counters.get(offset & ~7);
    if (stat !== undefined) return Number((offset & 4 ? stat >> 32n : stat) & 0xffff_ffffn);
    if (CONFIG_REGS.has(offset)) return this.regs.get(offset);
    return 0;
  }

  private write(offset: number, size: AccessSize, v: bigint): void {
    const base8 = offset & ~7;
    const slot = doorbellAt(base8, doorbellSpace);
    if (slot) {
      if (size === 8) this.ring(slot, v);
      else if (size === 4 && offset === base8) this.latch.set(base8, Number(v));
      else if (size === 4) this.ring(slot, BigInt(this.latch.get(base8) ?? 0) | (v << 32n));
      else this.tracer.warn("sub-dword doorbell write ignored", { offset, size });
      return;
    }
    if (offset >= DB_SPACE_BASE) return; // unreachable: every doorbell-space slot is a doorbell
    if (size === 8) {
      this.write32(offset, Number(v & 0xffff_ffffn));
      this.write32(offset + 4, Number(v >> 32n));
    } else if (size === 4) {
      this.write32(offset, Number(v));
    } else {
      this.tracer.warn("sub-dword register write ignored", { offset, size, name: registerName(offset) });
    }
  }

  private ring(slot: DoorbellSlot, value: bigint): void {
    const { cmdq, st, tracer, jobs, faults, dataPath } = this;
    ringDoorbell({ cmdq, st, tracer, jobs, faults, dataPath }, slot, value);
  }

  private write32(offset: number, v: number): void {
    if (offset === Reg.DEV_CTRL) {
      this.devCtrlWrite(v);
      return;
    }
    if (CONFIG_REGS.has(offset)) {
      if (this.cmdq)
        this.tracer.warn("queue register written after INIT: takes effect after a reset", {
          name: registerName(offset),
        });
      this.regs.set(offset, v);
      return;
    }
    this.tracer.warn("write to a read-only or unknown register ignored", {
      offset,
      name: registerName(offset),
    });
  }

  private devCtrlWrite(v: number): void {
    this.devCtrl = v >>> 0;
    if (v & DEV_CTRL_RESET) this.resetInternal("DEV_CTRL.RESET");
    if (v & DEV_CTRL_INIT) this.init();
  }

  /** DEV_CTRL.INIT: latch and check the CMDQ and AEQ registers, then report INIT_DONE. */
  private init(): void {
    if (this.cmdq) {
      this.tracer.warn("INIT while initialized: ignored");
      return;
    }
    const r = this.regs;
    const cfg: CmdqConfig = {
      sqBase: r.get64(Reg.CMDQ_SQ_ADDR_L),
      sqDepth: r.get(Reg.CMDQ_DEPTH),
      cqBase: r.get64(Reg.CMDQ_CQ_ADDR_L),
      eqBase: r.get64(Reg.CMDQ_EQ_ADDR_L),
      eqDepth: r.get(Reg.CMDQ_EQ_DEPTH),
      sqDbrec: r.get64(Reg.CMDQ_SQ_DB_HOST_ADDR),
      cqDbrec: r.get64(Reg.CMDQ_CQ_DB_HOST_ADDR),
      eqDbrec: r.get64(Reg.CMDQ_EQ_DB_HOST_ADDR),
    };
    const aeqBase = r.get64(Reg.AEQ_ADDR_L);
    const aeqDepth = r.get(Reg.AEQ_DEPTH);
    const aeqDbrec = r.get64(Reg.AEQ_DB_HOST_ADDR);
    const problem = this.checkInit(cfg, aeqBase, aeqDepth, aeqDbrec);
    if (problem) {
      this.tracer.warn("INIT refused: INIT_DONE stays clear", { reason: problem });
      this.tracer.emit({ kind: "state", object: "device", id: 0, from: "reset", to: "init-failed" });
      return;
    }
    this.st.aeq = new EventQueue("aeq", 0, MSIX_VECTOR_CMDQ, aeqBase, aeqDepth, aeqDbrec, this.st.eqEnv);
    this.cmdq = new CommandQueue(this.st, cfg, this.commands);
    this.devSt |= DEV_ST_INIT_DONE;
    this.tracer.emit({ kind: "state", object: "device", id: 0, from: "reset", to: "initialized" });
  }

  private checkInit(
    cfg: CmdqConfig,
    aeqBase: bigint,
    aeqDepth: number,
    aeqDbrec: bigint,
  ): string | undefined {
    const maxEq = 2 ** this.profile.maxEqDepthLog2;
    const pow2 = (n: number) => n > 0 && (n & (n - 1)) === 0;
    if (!pow2(cfg.sqDepth) || cfg.sqDepth < 4 || cfg.sqDepth > this.profile.maxCmdqDepth) {
      return `CMDQ depth ${cfg.sqDepth}`;
    }
    if (!pow2(cfg.eqDepth) || cfg.eqDepth > maxEq) return `CMDQ EQ depth ${cfg.eqDepth}`;
    if (!pow2(aeqDepth) || aeqDepth > maxEq) return `AEQ depth ${aeqDepth}`;
    const d = this.dma;
    if (!d.mapped(cfg.sqBase, cfg.sqDepth * SQEBB_SIZE, "read")) return `CMDQ SQ ${hex(cfg.sqBase)} unmapped`;
    if (!d.mapped(cfg.cqBase, cfg.sqDepth * CQE_SIZE, "write")) return `CMDQ CQ ${hex(cfg.cqBase)} unmapped`;
    if (!d.mapped(cfg.eqBase, cfg.eqDepth * EQE_SIZE, "write")) return `CMDQ EQ ${hex(cfg.eqBase)} unmapped`;
    if (!d.mapped(aeqBase, aeqDepth * EQE_SIZE, "write")) return `AEQ ${hex(aeqBase)} unmapped`;
    for (const [name, a] of [
      ["CMDQ SQ", cfg.sqDbrec],
      ["CMDQ CQ", cfg.cqDbrec],
      ["CMDQ EQ", cfg.eqDbrec],
      ["AEQ", aeqDbrec],
    ] as const) {
      if (!d.mapped(a, 8, "read")) return `${name} doorbell record ${hex(a)} unmapped`;
    }
    return undefined;
  }

  private resetInternal(reason: string): void {
    this.jobs.newEpoch();
    this.dma.revoke();
    this.dma = new Dma(this.host.dma, this.tracer);
    this.st = new DeviceState(this.plumbing(), this.seed);
    this.cmdq = undefined;
    this.regs.clear();
    this.latch.clear();
    this.devSt = DEV_ST_RESET_DONE;
    this.tracer.emit({ kind: "state", object: "device", id: 0, from: "any", to: `reset (${reason})` });
  }

  // ---- plumbing ----------------------------------------------------------------------------

  private plumbing(): Plumbing {
    return {
      profile: this.profile,
      tracer: this.tracer,
      dma: this.dma,
      jobs: this.jobs,
      engine: this.engine,
      raise: (vector, source) => this.raise(vector, source),
      ...(this.dataPathCore ? { qpEvents: this.dataPathCore } : {}),
    };
  }

  private raise(vector: number, source: string): void {
    if (vector >= this.profile.msixVectors) {
      this.tracer.warn("interrupt on a vector the function does not have", { vector, source });
      return;
    }
    if (this.faults.fire("lose-irq", { vector }, { source })) {
      this.tracer.emit({ kind: "irq", vector, delivered: false, source: `${source} (lost: injected)` });
      return;
    }
    const held = source.startsWith("ceq")
      ? this.faults.fire("coalesce-irq", { vector }, { source })
      : undefined;
    if (held) {
      const later = (how: string) => () =>
        this.jobs.post(`held irq ${vector}`, async () =>
          this.deliver(vector, `${source} (${how}: injected)`),
        );
      if (held.ms === undefined) this.faults.holdUntilRaised(vector, later("held until raised"));
      else setTimeout(later(`held ${held.ms} ms`), held.ms).unref();
      return;
    }
    this.deliver(vector, source);
  }

  private deliver(vector: number, source: string): void {
    let delivered = false;
    try {
      delivered = this.host.raiseMsix(vector) !== false;
    } catch (err) {
      this.internalError("raiseMsix", err);
    }
    this.tracer.emit({ kind: "irq", vector, delivered, source });
  }

  private internalError(where: string, err: unknown): void {
    this.tracer.emit({
      kind: "internal-error",
      message: `${where}: ${err instanceof Error ? err.message : String(err)}`,
      ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
    });
  }
}

function validAccess(offset: number, size: number): boolean {
  return (
    (size === 1 || size === 2 || size === 4 || size === 8) &&
    Number.isInteger(offset) &&
    offset >= 0 &&
    offset + size <= BAR0_SIZE &&
    offset % size === 0
  );
}

export { parseMac };
