import {
  type AttachedErdma,
  type AttachedErdmaFabric,
  type ExternalErdma,
  externalErdma,
  type FabricErdma,
  startErdma,
  startErdmaFabric,
} from "../qemu/device-server/attach.ts";
import { ensureRtlEngine, type RtlBug } from "../qemu/erdma/rtl/build.ts";
import {
  createFabricNetwork,
  FABRIC_IPS,
  FABRIC_MACS,
  FABRIC_PREFIX,
  type FabricNetwork,
} from "../qemu/launch/fabric-net.ts";
import { type Guest, type StartGuestOptions, startGuest } from "../qemu/launch/guest.ts";
import type { ExecOptions } from "../qemu/launch/ssh.ts";
import type { QemuInstall } from "../qemu/launch/types.ts";
import { bindVfioPci, type HostPci, type PassthroughBinding, realHostPci } from "../qemu/launch/vfio-pci.ts";
import { ensureQemu } from "../qemu/provision/qemu.ts";
import { progress } from "../util/progress.ts";
import { buildGuestToolsLayer } from "./image/guest-tools.ts";
import { buildInitramfs } from "./image/initramfs.ts";
import { kernelBootLimits } from "./kernel/boot-args.ts";
import { buildKernel, checkKernelRequest } from "./kernel/build.ts";
import type { KernelArtifact, KernelRequest } from "./kernel/types.ts";

/** The guest NIC's MAC unless a caller picks another; the erdma device reports the same one. */
export const DEFAULT_GUEST_MAC = "52:54:00:12:34:56";

export interface PreparedGuest {
  qemu: QemuInstall;
  kernel: KernelArtifact;
  initrd: string;
  /** the initramfs's cache key (absent in guests a bench assembles by hand) */
  initrdKey?: string;
  /** the rdma-core version the initramfs carries (Debian's, e.g. "44.0-2") */
  rdmaCore?: string;
}

/** Builds (or finds cached) everything a guest boot needs: QEMU, the kernel, the initramfs with the guest tools. */
export async function prepareGuest(req: KernelRequest): Promise<PreparedGuest> {
  // a mistyped --kernel or --config is told before QEMU is built
  await checkKernelRequest(req);
  const qemu = await ensureQemu();
  const kernel = await buildKernel(req);
  const tools = await buildGuestToolsLayer();
  const image = await buildInitramfs(kernel, { extraLayers: [tools] });
  return {
    qemu,
    kernel,
    initrd: image.path,
    initrdKey: image.key,
    ...(image.rdmaCore ? { rdmaCore: image.rdmaCore } : {}),
  };
}

/** The emulated erdma device of a boot: which profile, where its hardware trace goes. */
export interface DeviceOptions {
  /** a profile name (fixtures/profiles) or file; default erdma-reflush */
  profile?: string;
  /** keep the hardware trace (JSON lines) in this file */
  traceFile?: string;
  /** the queue engine in RTL (qemu/erdma/rtl), verilated, with these planted bugs */
  rtl?: { bugs: readonly RtlBug[] };
}

/**
 * An external vfio-user device server to attach instead of the emulated device (an RTL
 * co-simulation, an FPGA bridge, another model): already listening, started and stopped by its
 * owner. It must present an erdma function reporting the guest NIC's MAC (BootOptions.mac).
 */
export interface ExternalDeviceOptions {
  /** the server's UNIX socket */
  external: string;
}

/**
 * A host PCI function to pass through with vfio-pci instead of the emulated device (a real erdma
 * function): bound to vfio-pci for the boot, given back to its driver when the guest is disposed
 * of (or fails to boot, or hil exits). It must report the guest NIC's MAC (BootOptions.mac).
 */
export interface PciDeviceOptions {
  /** its PCI address, normalised (qemu/launch/vfio-pci.ts parseBdf) */
  pci: string;
  /** where it is bound (default: this machine's sysfs; tests hand a fake one) */
  host?: HostPci;
}

export type BootOptions = Omit<StartGuestOptions, "qemu" | "kernel" | "initrd"> & {
  /** the erdma device to attach (default: one with the default profile); an external one; a host PCI function; false: none */
  device?: DeviceOptions | ExternalDeviceOptions | PciDeviceOptions | false;
};

/** A running guest and the device server attached to it (if any). */
export interface BootedGuest extends Guest {
  /** the emulated device's server, started for this guest */
  readonly device: AttachedErdma | undefined;
  /** the external device server attached instead (not ours: dispose() leaves it running) */
  readonly externalDevice?: ExternalErdma;
  /** the host PCI function passed through instead (dispose() gives it back to its driver) */
  readonly passthrough?: PassthroughBinding;
}

/**
 * Boots a guest with the emulated erdma device attached (unless `device: false`): the device
 * server starts first with the guest's MAC, QEMU connects to it, and dispose() stops both and
 * removes their temp dirs. A failed boot stops the server before the error propagates. With
 * `device: { external }` QEMU connects to that server instead, and nothing stops it. With
 * `device: { pci }` the host function is bound to vfio-pci first and given back after QEMU is gone.
 */
export async function bootPrepared(prepared: PreparedGuest, opts: BootOptions = {}): Promise<BootedGuest> {
  const { device: deviceOpts, ...guestOpts } = opts;
  const mac = guestOpts.mac ?? DEFAULT_GUEST_MAC;
  let device: AttachedErdma | undefined;
  let external: ExternalErdma | undefined;
  let passthrough: PassthroughBinding | undefined;
  if (deviceOpts && "pci" in deviceOpts) {
    const step = progress.step(`[device] host PCI function ${deviceOpts.pci} to vfio-pci`);
    try {
      // checked again and bound now: the function may have changed while the kernel was built
      passthrough = await bindVfioPci(deviceOpts.host ?? realHostPci(), deviceOpts.pci);
      step.succeed(
        `IOMMU group ${passthrough.group}${passthrough.originalDriver ? `, from ${passthrough.originalDriver}` : ""}`,
      );
    } catch (err) {
      step.fail();
      throw err;
    }
  } else if (deviceOpts && "external" in deviceOpts) {
    // checked again now: the server may have gone while the kernel and the image were built
    external = externalErdma(deviceOpts.external);
    progress.info(
      `[device] external vfio-user device at ${external.socketPath} (not started or stopped by hil)`,
    );
  } else if (deviceOpts !== false) {
    const queueEngine = deviceOpts?.rtl ? await ensureRtlEngine(deviceOpts.rtl.bugs) : undefined;
    const engine = queueEngine ? ", RTL queue engine" : "";
    const step = progress.step(`[device] erdma (${deviceOpts?.profile ?? "erdma-reflush"}${engine})`);
    try {
      device = await startErdma({
        mac,
        ...(queueEngine ? { queueEngine } : {}),
        profile: deviceOpts?.profile,
        traceFile: deviceOpts?.traceFile,
        onWarning: (line) => progress.info(`[device] ${line}`),
      });
      step.succeed(`server pid ${device.pid}`);
    } catch (err) {
      step.fail();
      throw err;
    }
  }
  let guest: Guest;
  try {
    guest = await startGuest({
      ...guestOpts,
      mac,
      qemu: prepared.qemu,
      kernel: prepared.kernel.bzImage,
      initrd: prepared.initrd,
      ...slowKernelLimits(prepared.kernel, guestOpts),
      ...withKernelArgs(prepared.kernel, guestOpts.kernelArgs),
      extraQemuArgs: [
        ...(device?.qemuArgs ?? external?.qemuArgs ?? passthrough?.qemuArgs ?? []),
        ...(guestOpts.extraQemuArgs ?? []),
      ],
      onQemuStarted: (info) => {
        // the exit hook giving the function back runs after the one killing this QEMU
        passthrough?.reorderExitHook();
        guestOpts.onQemuStarted?.(info);
      },
    });
  } catch (err) {
    await device?.stop();
    if (passthrough) reportRelease(passthrough);
    throw err;
  }
  return withDevice(guest, device, external, passthrough);
}

/** Gives a passed-through function back, saying what could not be restored. */
function reportRelease(binding: PassthroughBinding): void {
  for (const problem of binding.release())
    progress.info(
      `[device] giving ${binding.bdf} back to ${binding.originalDriver ?? "no driver"}: ${problem}`,
    );
}

/** The boot limits a slow (KASAN) kernel needs, where the caller set none. */
function slowKernelLimits(
  kernel: KernelArtifact,
  opts: Pick<StartGuestOptions, "bootTimeoutMs" | "stallMs">,
): Pick<StartGuestOptions, "bootTimeoutMs" | "stallMs"> {
  const limits = kernelBootLimits(kernel);
  return {
    bootTimeoutMs: opts.bootTimeoutMs ?? limits.bootTimeoutMs,
    stallMs: opts.stallMs ?? limits.stallMs,
  };
}

/** The kernel's own boot arguments (a prebuilt kernel's, harness/kernel/prebuilt-config.ts) before the caller's. */
function withKernelArgs(
  kernel: KernelArtifact,
  args: readonly string[] | undefined,
): Pick<StartGuestOptions, "kernelArgs"> {
  const all = [...(kernel.bootArgs ?? []), ...(args ?? [])];
  return all.length > 0 ? { kernelArgs: all } : {};
}

function withDevice(
  guest: Guest,
  device: AttachedErdma | undefined,
  external: ExternalErdma | undefined,
  passthrough: PassthroughBinding | undefined,
): BootedGuest {
  return extendGuest(
    guest,
    { device, ...(external ? { externalDevice: external } : {}), ...(passthrough ? { passthrough } : {}) },
    async () => {
      // after the guest: QEMU has let go of /dev/vfio/<group>
      if (passthrough) reportRelease(passthrough);
      if (device) await device.stop();
    },
  );
}

/** `guest` with `extra` beside it; dispose() disposes of the guest, then runs `alsoDispose`. */
function extendGuest<E extends object>(guest: Guest, extra: E, alsoDispose: () => Promise<void>): Guest & E {
  return {
    ...extra,
    get pid() {
      return guest.pid;
    },
    get sshPort() {
      return guest.sshPort;
    },
    get workDir() {
      return guest.workDir;
    },
    get timings() {
      return guest.timings;
    },
    get keys() {
      return guest.keys;
    },
    get running() {
      return guest.running;
    },
    get qemuExit() {
      return guest.qemuExit;
    },
    exec: (command: string, o?: ExecOptions) => guest.exec(command, o),
    execStream: (command, o) => guest.execStream(command, o),
    shell: (io) => guest.shell(io),
    copyTo: (local, remote, o) => guest.copyTo(local, remote, o),
    copyFrom: (remote, local) => guest.copyFrom(remote, local),
    consoleLog: () => guest.consoleLog(),
    qmp: () => guest.qmp(),
    shutdown: (o) => guest.shutdown(o),
    async dispose(o) {
      try {
        await guest.dispose(o);
      } finally {
        await alsoDispose();
      }
    },
  };
}

/** Boots a guest, runs `fn` with it, and always shuts it down and removes its temp files. */
export async function withGuest<T>(
  prepared: PreparedGuest,
  opts: BootOptions,
  fn: (guest: BootedGuest) => Promise<T>,
): Promise<T> {
  const guest = await bootPrepared(prepared, opts);
  try {
    return await fn(guest);
  } finally {
    await guest.dispose();
  }
}

/** One guest of two joined by the fabric network: its fabric NIC's address and MAC. */
export interface WiredGuest extends Guest {
  /** 0 or 1 */
  readonly index: number;
  /** this guest's IPv4 address on the fabric network (prefix FABRIC_PREFIX) */
  readonly fabricIp: string;
  /** the fabric NIC's MAC */
  readonly fabricMac: string;
}

/** One guest of a pair: its erdma device (on the shared fabric) and its fabric NIC. */
export interface PairedGuest extends WiredGuest {
  /** the erdma device, which reports the fabric NIC's MAC (so the driver binds to that NIC) */
  readonly device: FabricErdma;
}

export interface WireOptions
  extends Omit<
    BootOptions,
    "device" | "mac" | "sshPort" | "keepConsole" | "onConsoleLine" | "onQemuStarted"
  > {
  /** copy guest i's console log to keepConsoles[i] when it is disposed of (or fails to boot) */
  keepConsoles?: readonly [string?, string?];
  /** boot the two guests at the same time (default) or one after the other */
  parallel?: boolean;
  onQemuStarted?: (guest: number, info: { pid: number; workDir: string; sshPort: number }) => void;
}

export interface PairOptions extends WireOptions {
  /** each guest's erdma device (profile, trace file); default: the default profile, no trace */
  devices?: readonly [DeviceOptions?, DeviceOptions?];
}

/** Two running guests whose fabric NICs are on one wire, and no RDMA device (siw goes on the NIC). */
export interface WiredPair {
  readonly guests: readonly [WiredGuest, WiredGuest];
  /** the guests' fabric addresses, in guest order */
  readonly fabricIps: readonly [string, string];
  /** the wire's run dir (its unix datagram sockets) */
  readonly network: FabricNetwork;
  /** disposes of both guests, removes every temp dir; safe to call twice */
  dispose(): Promise<void>;
}

/** Two running guests whose erdma devices share one fabric, their fabric NICs on one wire. */
export interface BootedPair extends WiredPair {
  readonly guests: readonly [PairedGuest, PairedGuest];
  /** the device server process serving both devices */
  readonly server: AttachedErdmaFabric;
  /** disposes of both guests, stops the server, removes every temp dir; safe to call twice */
  dispose(): Promise<void>;
}

/**
 * Boots two guests (same kernel and image), each with its own emulated erdma device, the devices
 * served by one process on one fabric. Each guest keeps its SSH NIC (user networking) and gets a
 * fabric NIC on a wire shared with the other guest, with the MAC its device reports and a static
 * IPv4. A failed boot disposes of whatever started before the error propagates.
 */
export async function bootPair(prepared: PreparedGuest, opts: PairOptions = {}): Promise<BootedPair> {
  const { devices: deviceOpts, ...wireOpts } = opts;
  // one process serves both devices, so one queue engine: the first device's
  const rtl = deviceOpts?.[0]?.rtl;
  const queueEngine = rtl ? await ensureRtlEngine(rtl.bugs) : undefined;
  const step = progress.step("[device] erdma fabric (2 devices, one server)");
  let server: AttachedErdmaFabric;
  try {
    server = await startErdmaFabric(
      FABRIC_MACS.map((mac, i) => ({
        mac,
        profile: deviceOpts?.[i]?.profile,
        traceFile: deviceOpts?.[i]?.traceFile,
      })),
      { onWarning: (line) => progress.info(`[device] ${line}`), ...(queueEngine ? { queueEngine } : {}) },
    );
    step.succeed(`server pid ${server.pid}`);
  } catch (err) {
    step.fail();
    throw err;
  }
  const devices = server.devices as readonly FabricErdma[];
  let wire: Wire<{ device: FabricErdma }>;
  try {
    wire = await bootWire(prepared, wireOpts, (i) => {
      const device = devices[i] as FabricErdma;
      return { mac: device.mac, qemuArgs: device.qemuArgs, extra: { device } };
    });
  } catch (err) {
    await server.stop().catch(() => {});
    throw err;
  }
  let disposed: Promise<void> | undefined;
  return {
    ...wire,
    server,
    dispose() {
      disposed ??= wire.dispose().finally(() => server.stop());
      return disposed;
    },
  };
}

/**
 * Boots two guests (same kernel and image) with no RDMA device, their fabric NICs on one wire with
 * static IPv4s: the pair a software RDMA driver (siw) runs on. A failed boot disposes of whatever
 * started before the error propagates.
 */
export function bootWiredPair(prepared: PreparedGuest, opts: WireOptions = {}): Promise<WiredPair> {
  return bootWire(prepared, opts, (i) => ({ mac: FABRIC_MACS[i], qemuArgs: [], extra: {} }));
}

type Wire<E> = Omit<WiredPair, "guests"> & { readonly guests: readonly [WiredGuest & E, WiredGuest & E] };

/** Guest i's fabric NIC: its MAC, the QEMU arguments of the device beside it, what the guest carries. */
type NicOf<E> = (i: 0 | 1) => { mac: string; qemuArgs: readonly string[]; extra: E };

/** The two guests on one wire, each with the fabric NIC (and device) `nicOf` says. */
async function bootWire<E extends object>(
  prepared: PreparedGuest,
  opts: WireOptions,
  nicOf: NicOf<E>,
): Promise<Wire<E>> {
  const { keepConsoles, parallel = true, onQemuStarted, ...guestOpts } = opts;
  let network: FabricNetwork | undefined;
  const booted: ((WiredGuest & E) | undefined)[] = [undefined, undefined];
  const cleanUp = async () => {
    await Promise.allSettled(booted.map((g) => g?.dispose()));
    await network?.dispose();
  };
  try {
    const net = await createFabricNetwork();
    network = net;
    const bootOne = async (i: 0 | 1): Promise<WiredGuest & E> => {
      const nic = nicOf(i);
      const fabricIp = FABRIC_IPS[i];
      const guest = await startGuest({
        ...guestOpts,
        name: `guest${i}`,
        qemu: prepared.qemu,
        kernel: prepared.kernel.bzImage,
        initrd: prepared.initrd,
        fabric: { mac: nic.mac, ipCidr: `${fabricIp}/${FABRIC_PREFIX}`, link: net.links[i] },
        ...slowKernelLimits(prepared.kernel, guestOpts),
        ...withKernelArgs(prepared.kernel, [`hil.hostname=hil-guest${i}`, ...(guestOpts.kernelArgs ?? [])]),
        keepConsole: keepConsoles?.[i],
        onQemuStarted: onQemuStarted ? (info) => onQemuStarted(i, info) : undefined,
        extraQemuArgs: [...nic.qemuArgs, ...(guestOpts.extraQemuArgs ?? [])],
      });
      const wired = extendGuest(
        guest,
        { ...nic.extra, index: i, fabricIp, fabricMac: nic.mac },
        async () => {},
      );
      booted[i] = wired;
      return wired;
    };
    let guests: [WiredGuest & E, WiredGuest & E];
    if (parallel) {
      const results = await Promise.allSettled([bootOne(0), bootOne(1)]);
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw failed.reason;
      guests = [booted[0] as WiredGuest & E, booted[1] as WiredGuest & E];
    } else {
      guests = [await bootOne(0), await bootOne(1)];
    }
    let disposed: Promise<void> | undefined;
    return {
      guests,
      fabricIps: [guests[0].fabricIp, guests[1].fabricIp],
      network: net,
      dispose() {
        disposed ??= cleanUp();
        return disposed;
      },
    };
  } catch (err) {
    // the boot's error is the one to report; cleaning up is best effort (exit hooks back it up)
    await cleanUp().catch(() => {});
    throw err;
  }
}

/** Boots a pair, runs `fn` with it, and always disposes of both guests, the server and the wire. */
export async function withGuestPair<T>(
  prepared: PreparedGuest,
  opts: PairOptions,
  fn: (pair: BootedPair) => Promise<T>,
): Promise<T> {
  const pair = await bootPair(prepared, opts);
  try {
    return await fn(pair);
  } finally {
    await pair.dispose();
  }
}
