import { type Command, InvalidArgumentError, Option } from "commander";
import { externalErdma } from "../../qemu/device-server/attach.ts";
import { DEFAULT_PROFILE, listProfiles, loadProfile } from "../../qemu/erdma/profile-file.ts";
import { checkPassthrough, type HostPci, parseBdf, realHostPci } from "../../qemu/launch/vfio-pci.ts";
import { HilError } from "../../util/errors.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import type { ChosenDevice } from "../device.ts";
import { addOldSpelling } from "./old-spellings.ts";

export interface DeviceOptionValues {
  /** --device-profile (or its old spelling --profile) */
  deviceProfile?: string;
  /** false with --no-device */
  device: boolean;
  /** --device-socket: an external vfio-user device server's socket */
  deviceSocket?: string;
  /** --device-pci: a host PCI function to pass through with vfio-pci */
  devicePci?: string;
  /** --mac, already checked and lower-cased */
  mac?: string;
}

/** A guest NIC's MAC as --mac takes it: six hex octets with colons, unicast, not all zero. */
export function parseMacOption(value: string): string {
  const mac = value.trim().toLowerCase();
  if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac))
    throw new InvalidArgumentError(
      `expected a MAC like ${DEFAULT_GUEST_MAC} (six hex octets, colons), got "${value}"`,
    );
  if (Number.parseInt(mac.slice(0, 2), 16) & 1)
    throw new InvalidArgumentError(`${mac} is a multicast MAC; a NIC needs a unicast one (first octet even)`);
  if (mac === "00:00:00:00:00:00") throw new InvalidArgumentError("00:00:00:00:00:00 is not a NIC's MAC");
  return mac;
}

/** The help of --device-profile, on every command that takes one. */
export function deviceProfileHelp(): string {
  return `the emulated erdma device's behaviour profile: a name from fixtures/profiles (${listProfiles().join(", ")}) or a JSON file (default: ${DEFAULT_PROFILE})`;
}

/** --device-profile and its old spelling --profile. */
export function addDeviceProfileOption(cmd: Command): Command {
  return addOldSpelling(
    cmd.addOption(new Option("--device-profile <name|file>", deviceProfileHelp())),
    "--profile <name|file>",
  );
}

/** --device-profile, --no-device, --device-socket, --device-pci and --mac, shared by the commands that boot a guest with an erdma device. */
export function addDeviceOptions(cmd: Command): Command {
  return addDeviceProfileOption(cmd)
    .option("--no-device", "boot without the emulated erdma device")
    .option(
      "--device-socket <path>",
      "attach the external vfio-user device server listening on this UNIX socket (an RTL co-simulation, an FPGA bridge, another model) instead of starting the emulated device; it must present an erdma function (0x1ded:0x107f) that reports the guest NIC's MAC (--mac). hil neither starts nor stops it, arms no faults on it and keeps no hardware trace of it",
    )
    .option(
      "--device-pci <BDF>",
      "pass the host's PCI function at this address (0000:03:00.0 or 03:00.0) through to the guest with QEMU's vfio-pci instead of starting the emulated device: a real erdma function. Its IOMMU group must be viable and nobody may hold it; hil binds it to vfio-pci (driver_override) for the boot and gives it back to its driver afterwards (needs root and an IOMMU). It must report the guest NIC's MAC (--mac); no faults, no hardware trace",
    )
    .option(
      "--mac <mac>",
      `the guest NIC's MAC, which the erdma device reports so the driver binds to that NIC (default: ${DEFAULT_GUEST_MAC})`,
      parseMacOption,
    );
}

/** --device-profile with --driver siw (hil run, hil validate). */
export const DEVICE_PROFILE_WITHOUT_DEVICE =
  "--device-profile sets the emulated erdma device's behaviour; --driver siw attaches none";

export interface DeviceOptionExtras {
  /** --trace: where the user asked for the emulated device's hardware trace */
  traceFile?: string;
  /** --driver (hil run): siw attaches no device */
  driver?: string;
  /** where --device-pci's function is looked at (default: this machine's /sys and /proc) */
  host?: HostPci;
}

/**
 * The device a command asked for, checked now (a bad profile, a missing socket, a PCI function that
 * cannot be passed through, options that contradict each other are one clear error before anything
 * is built or started); undefined with
 * --no-device or --driver siw.
 */
export function deviceOptions(
  values: DeviceOptionValues,
  extra: DeviceOptionExtras = {},
): ChosenDevice | undefined {
  const mac = values.mac ?? DEFAULT_GUEST_MAC;
  if (values.devicePci !== undefined) {
    const bdf = parseBdf(values.devicePci);
    if (values.deviceSocket !== undefined)
      throw new HilError(
        "--device-pci and --device-socket each attach a device instead of the emulated one: pick one",
      );
    if (!values.device) throw new HilError("--device-pci and --no-device contradict each other");
    if (values.deviceProfile)
      throw new HilError(
        "--device-profile sets the emulated erdma device's behaviour; the real device of --device-pci has its own",
      );
    if (extra.traceFile)
      throw new HilError(
        "--trace keeps the emulated device's hardware trace; a real device passed through has none (drop --trace or --device-pci)",
      );
    if (extra.driver === "siw")
      throw new HilError("--driver siw runs soft-iWARP without a device; --device-pci attaches one");
    // the IOMMU group, its viability and the function's users, now: before anything is built
    checkPassthrough(extra.host ?? realHostPci(), bdf);
    return { kind: "pci", bdf, mac };
  }
  if (values.deviceSocket !== undefined) {
    if (!values.device) throw new HilError("--device-socket and --no-device contradict each other");
    if (values.deviceProfile)
      throw new HilError(
        "--device-profile sets the emulated erdma device's behaviour; the external device of --device-socket has its own",
      );
    if (extra.traceFile)
      throw new HilError(
        "--trace keeps the emulated device's hardware trace; hil cannot record an external device's (drop --trace or --device-socket)",
      );
    if (extra.driver === "siw")
      throw new HilError("--driver siw runs soft-iWARP without a device; --device-socket attaches one");
    return { kind: "external", socketPath: externalErdma(values.deviceSocket).socketPath, mac };
  }
  if (extra.driver === "siw") {
    if (values.deviceProfile) throw new HilError(DEVICE_PROFILE_WITHOUT_DEVICE);
    return undefined;
  }
  if (!values.device) {
    if (values.deviceProfile) throw new HilError("--device-profile and --no-device contradict each other");
    if (extra.traceFile) throw new HilError("--trace needs the emulated device (drop --no-device)");
    return undefined;
  }
  const profileName = values.deviceProfile ?? DEFAULT_PROFILE;
  return {
    kind: "emulated",
    profileName,
    profile: loadProfile(profileName),
    mac,
    ...(extra.traceFile ? { traceFile: extra.traceFile } : {}),
  };
}
