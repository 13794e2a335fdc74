/**
 * The glue between the erdma core and the vfio-user server (like QEMU's e1000e.c around
 * e1000e_core.c): the PCI identity, BAR0 through the core's register handlers, BAR2 holding the
 * MSI-X table and PBA with the profile's vector count, guest memory and interrupts from the
 * server's DeviceContext, resets, and the core's hardware trace handed to a sink.
 *
 * The core never touches guest memory from a register handler; it defers that work (setImmediate
 * here), so the server has replied to the MMIO access before any DMA starts: QEMU holds its global
 * lock while the guest waits for that reply, and a DMA message sent meanwhile would never be
 * answered.
 */
import type { DeviceContext, DeviceDefinition, DeviceModel } from "../vfio-user/device.ts";
import type { TraceEvent } from "../vfio-user/trace.ts";
import { ERDMA_BARS, ERDMA_PCI_IDENTITY, ErdmaDevice } from "./device.ts";
import type { Fabric } from "./fabric.ts";
import { FaultPlan } from "./faults.ts";
import { DmaFault, type ErdmaHost, type GuestMemory } from "./host.ts";
import { ActivityClock, heldWork, type IdleReport, idleReport } from "./idle.ts";
import type { ErdmaProfile } from "./profile.ts";
import { profileReflush } from "./profile.ts";
import type { QueueEngine } from "./queue-engine.ts";
import type { ErdmaTraceEvent } from "./trace.ts";
import { Tracer } from "./trace.ts";

export interface ErdmaVfioOptions {
  /** the guest NIC's MAC: the driver binds the RDMA device to the netdev with this address */
  mac: string;
  profile?: ErdmaProfile;
  /** receives every hardware event of the core (register accesses, commands, state, interrupts) */
  trace?: (event: ErdmaTraceEvent) => void;
  /** the clock for the core's event timestamps (ms); default: performance.now() */
  now?: () => number;
  name?: string;
  /** the wire this device's QPs reach their peers over; default: a fabric of its own (loopback) */
  fabric?: Fabric;
  /** what decides CQEs and flushes; default: the TypeScript reference (queue-engine.ts) */
  engine?: QueueEngine;
}

/** An erdma PCI function served over vfio-user. */
export class ErdmaVfioDevice implements DeviceModel {
  readonly definition: DeviceDefinition;
  /** faults armed for this function; they outlive a reconnect of the client */
  readonly faults: FaultPlan;
  private core: ErdmaDevice | undefined;
  private ctx: DeviceContext | undefined;
  /** every hardware-trace event (the core's and the faults') is activity */
  private readonly activity = new ActivityClock();
  private readonly sink = (e: ErdmaTraceEvent): void => {
    this.activity.touch();
    this.opts.trace?.(e);
  };

  constructor(private readonly opts: ErdmaVfioOptions) {
    const profile = opts.profile ?? profileReflush;
    const name = opts.name ?? "erdma";
    this.faults = new FaultPlan(new Tracer(this.sink, opts.now ?? (() => performance.now()), name));
    this.definition = {
      name: opts.name ?? "erdma",
      identity: { ...ERDMA_PCI_IDENTITY },
      bars: [
        {
          index: ERDMA_BARS.bar0.index,
          size: ERDMA_BARS.bar0.size,
          type: ERDMA_BARS.bar0.type,
          read: (offset, size) => this.device.bar0Read(offset, size),
          write: (offset, size, value) => this.device.bar0Write(offset, size, value),
        },
        { index: ERDMA_BARS.msix.index, size: ERDMA_BARS.msix.size, type: ERDMA_BARS.msix.type },
      ],
      msix: {
        vectors: profile.msixVectors,
        bar: ERDMA_BARS.msix.index,
        tableOffset: ERDMA_BARS.msix.tableOffset,
        pbaOffset: ERDMA_BARS.msix.pbaOffset,
      },
      pcie: true,
    };
  }

  /** The core, once the server attached the device. */
  get device(): ErdmaDevice {
    if (!this.core) throw new Error("erdma: the device is not attached to a server yet");
    return this.core;
  }

  /** The device state (object tables, counters) as JSON; undefined before a client attached. */
  snapshot(): Record<string, unknown> | undefined {
    return this.core?.state.snapshot();
  }

  /** After a judged hang: flushes what the QPs in ERROR hold (release.ts); the QPs released. */
  release(): number[] {
    return this.core?.release() ?? [];
  }

  /** How long the device has been quiet and what it still owes by itself (idle.ts). */
  idle(): IdleReport {
    const held = this.core
      ? heldWork(this.core.state.qps.values(), (qpn, queue) => this.faults.stalled(qpn, queue) !== undefined)
      : [];
    return idleReport(this.activity, this.core?.pendingJobs ?? 0, this.faults.timers(), held);
  }

  attach(ctx: DeviceContext): void {
    this.ctx = ctx;
    const clock = this.opts.now ?? (() => performance.now());
    const host: ErdmaHost = {
      dma: guestMemoryOf(ctx),
      raiseMsix: (vector) => ctx.raiseIrq(vector),
      trace: this.sink,
      now: clock,
      defer: (job) => setImmediate(job),
    };
    this.core?.dataPathCore?.detach();
    this.core = new ErdmaDevice({
      host,
      faults: this.faults,
      mac: this.opts.mac,
      profile: this.opts.profile ?? profileReflush,
      name: this.definition.name,
      ...(this.opts.fabric ? { fabric: this.opts.fabric } : {}),
      ...(this.opts.engine ? { engine: this.opts.engine } : {}),
    });
  }

  reset(): void {
    this.core?.reset("vfio-user reset");
  }

  /** The client's memory and interrupts are gone: nothing in flight may reach them. */
  clientGone(): void {
    this.core?.reset("client disconnected");
    this.ctx?.log("info", "client gone: device reset");
  }
}

/** The server's DMA access as the core's GuestMemory: every refusal becomes a DmaFault. */
function guestMemoryOf(ctx: DeviceContext): GuestMemory {
  const fault = (address: bigint, length: number, access: "read" | "write", err: unknown) =>
    new DmaFault(address, length, access, err instanceof Error ? err.message : String(err));
  return {
    read: (address, length) =>
      ctx.dma.read(address, length).catch((err: unknown) => {
        throw fault(address, length, "read", err);
      }),
    write: (address, data) =>
      ctx.dma.write(address, data).catch((err: unknown) => {
        throw fault(address, data.length, "write", err);
      }),
    isMapped: (address, length, access) => ctx.dma.isMapped(address, length, access),
  };
}

/**
 * Which server events belong in an erdma hardware trace beside the core's own: sessions, refusals,
 * config-space changes, resets and notes. Register accesses, interrupts and DMA are already in the
 * core's events (decoded), so the protocol-level copies are left out.
 */
export function keepServerEvent(e: TraceEvent): boolean {
  switch (e.kind) {
    case "recv":
    case "send":
      return keepServerCommand(e.command);
    case "dma":
    case "irq":
      return false;
    default:
      return true;
  }
}

/** Whether the recv/send events of a command (by name) belong in the trace: see keepServerEvent. */
export function keepServerCommand(command: string): boolean {
  return !/^(REGION_READ|REGION_WRITE|DMA_READ|DMA_WRITE)$/.test(command);
}
