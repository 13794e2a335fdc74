/**
 * The erdma device a guest gets: the emulated one (a device server hil starts with a behaviour
 * profile, with its hardware trace) or an external vfio-user server the user started
 * (--device-socket); and what the boot, the probe stage and verdicts.json each take of it.
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

export type ChosenDevice = EmulatedDevice | ExternalDevice;

/** The device as bootPrepared takes it (BootOptions.device). */
export function bootDevice(
  device: ChosenDevice | undefined,
): { profile: string; traceFile?: string } | { external: string } | false {
  if (!device) return false;
  if (device.kind === "external") return { external: device.socketPath };
  return { profile: device.profileName, ...(device.traceFile ? { traceFile: device.traceFile } : {}) };
}

/** The device as verdicts.json records it. */
export function recordedDevice(
  device: ChosenDevice | undefined,
  traceName: string,
): { profile: string; trace: string } | { external: string; mac: string } | null {
  if (!device) return null;
  if (device.kind === "external") return { external: device.socketPath, mac: device.mac };
  return { profile: device.profileName, trace: traceName };
}

/** What the smoke checks know of the device (SmokeContext.device). */
export function smokeDevice(device: ChosenDevice | undefined, traceFile: string | undefined) {
  if (!device) return undefined;
  if (device.kind === "external") return { external: device.socketPath, mac: device.mac };
  return {
    profileName: device.profileName,
    profile: device.profile,
    mac: device.mac,
    ...(traceFile ? { traceFile } : {}),
  };
}
