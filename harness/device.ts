/**
 * The erdma device a guest gets: the emulated one (a device server hil starts with a behaviour
 * profile, with its hardware trace) or an external vfio-user server the user started
 * (--device-socket) or a host PCI function passed through with vfio-pci (--device-pci); and what
 * the boot, the probe stage and verdicts.json each take of it.
 */
import type { ErdmaProfile } from "../qemu/erdma/profile.ts";

/** The emulated erdma device: a device server hil starts with this profile. */
export interface EmulatedDevice {
  kind: "emulated";
  profileName: string;
  profile: ErdmaProfile;
  /** the guest NIC's MAC, which the device reports */
  mac: string;
  traceFile?: string;
}

/** An external vfio-user device server, already listening (see --device-socket). */
export interface ExternalDevice {
  kind: "external";
  /** its socket, absolute */
  socketPath: string;
  /** the guest NIC's MAC, which the device must report */
  mac: string;
}

/** A host PCI function passed through with QEMU's vfio-pci (see --device-pci): a real device. */
export interface PassthroughDevice {
  kind: "pci";
  /** its PCI address, normalised (0000:03:00.0) */
  bdf: string;
  /** the guest NIC's MAC, which the device must report */
  mac: string;
}

export type ChosenDevice = EmulatedDevice | ExternalDevice | PassthroughDevice;

/** How the probe stage and the reports name a passed-through function. */
export function passthroughName(bdf: string): string {
  return `host PCI function ${bdf} (vfio-pci)`;
}

/** The device as bootPrepared takes it (BootOptions.device). */
export function bootDevice(
  device: ChosenDevice | undefined,
): { profile: string; traceFile?: string } | { external: string } | { pci: string } | false {
  if (!device) return false;
  if (device.kind === "external") return { external: device.socketPath };
  if (device.kind === "pci") return { pci: device.bdf };
  return { profile: device.profileName, ...(device.traceFile ? { traceFile: device.traceFile } : {}) };
}

/** The device as verdicts.json records it. */
export function recordedDevice(
  device: ChosenDevice | undefined,
  traceName: string,
):
  | { profile: string; trace: string }
  | { external: string; mac: string }
  | { pci: string; mac: string }
  | null {
  if (!device) return null;
  if (device.kind === "external") return { external: device.socketPath, mac: device.mac };
  if (device.kind === "pci") return { pci: device.bdf, mac: device.mac };
  return { profile: device.profileName, trace: traceName };
}

/** What the smoke checks know of the device (SmokeContext.device). */
export function smokeDevice(device: ChosenDevice | undefined, traceFile: string | undefined) {
  if (!device) return undefined;
  if (device.kind === "external") return { external: device.socketPath, mac: device.mac };
  // a real device: no profile to compare with, no hardware trace, like an external one
  if (device.kind === "pci") return { external: passthroughName(device.bdf), mac: device.mac };
  return {
    profileName: device.profileName,
    profile: device.profile,
    mac: device.mac,
    ...(traceFile ? { traceFile } : {}),
  };
}
