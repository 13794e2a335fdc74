import { buildGuestToolsLayer } from "../guest/tools/build.ts";
import { type AttachedErdma, startErdma } from "../qemu/erdma/attach.ts";
import { type Guest, type StartGuestOptions, startGuest } from "../qemu/launch/guest.ts";
import type { ExecOptions } from "../qemu/launch/ssh.ts";
import type { QemuInstall } from "../qemu/launch/types.ts";
import { ensureQemu } from "../qemu/provision/qemu.ts";
import { buildInitramfs } from "./image/initramfs.ts";
import { buildKernel } from "./kernel/build.ts";
import type { KernelArtifact, KernelRequest } from "./kernel/types.ts";
import { progress } from "./util/progress.ts";

/** The guest NIC's MAC unless a caller picks another; the erdma device reports the same one. */
export const DEFAULT_GUEST_MAC = "52:54:00:12:34:56";

export interface PreparedGuest {
  qemu: QemuInstall;
  kernel: KernelArtifact;
  initrd: string;
}

/** Builds (or finds cached) everything a guest boot needs: QEMU, the kernel, the initramfs with the guest tools. */
export async function prepareGuest(req: KernelRequest): Promise<PreparedGuest> {
  const qemu = await ensureQemu();
  const kernel = await buildKernel(req);
  const tools = await buildGuestToolsLayer();
  const image = await buildInitramfs(kernel, { extraLayers: [tools] });
  return { qemu, kernel, initrd: image.path };
}

/** The emulated erdma device of a boot: which profile, where its hardware trace goes. */
export interface DeviceOptions {
  /** a profile name (fixtures/profiles) or file; default erdma-reflush */
  profile?: string;
  /** keep the hardware trace (JSON lines) in this file */
  traceFile?: string;
}

export type BootOptions = Omit<StartGuestOptions, "qemu" | "kernel" | "initrd"> & {
  /** the erdma device to attach (default: one with the default profile); false: none */
  device?: DeviceOptions | false;
};

/** A running guest and the device server attached to it (if any). */
export interface BootedGuest extends Guest {
  readonly device: AttachedErdma | undefined;
}

/**
 * Boots a guest with the emulated erdma device attached (unless `device: false`): the device
 * server starts first with the guest's MAC, QEMU connects to it, and dispose() stops both and
 * removes their temp dirs. A failed boot stops the server before the error propagates.
 */
export async function bootPrepared(prepared: PreparedGuest, opts: BootOptions = {}): Promise<BootedGuest> {
  const { device: deviceOpts, ...guestOpts } = opts;
  const mac = guestOpts.mac ?? DEFAULT_GUEST_MAC;
  let device: AttachedErdma | undefined;
  if (deviceOpts !== false) {
    const step = progress.step(`[device] erdma (${deviceOpts?.profile ?? "erdma-reflush"})`);
    try {
      device = await startErdma({
        mac,
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
      extraQemuArgs: [...(device?.qemuArgs ?? []), ...(guestOpts.extraQemuArgs ?? [])],
    });
  } catch (err) {
    await device?.stop();
    throw err;
  }
  return withDevice(guest, device);
}

function withDevice(guest: Guest, device: AttachedErdma | undefined): BootedGuest {
  return {
    device,
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
    exec: (command: string, o?: ExecOptions) => guest.exec(command, o),
    shell: (io) => guest.shell(io),
    copyTo: (local, remote, o) => guest.copyTo(local, remote, o),
    copyFrom: (remote, local) => guest.copyFrom(remote, local),
    consoleLog: () => guest.consoleLog(),
    qmp: () => guest.qmp(),
    shutdown: () => guest.shutdown(),
    async dispose() {
      try {
        await guest.dispose();
      } finally {
        await device?.stop();
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
