import { type Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_PROFILE, listProfiles } from "../../qemu/erdma/profile-file.ts";
import type { DeviceOptionExtras, DeviceOptionValues } from "../backend/backend.ts";
import { BACKENDS, type ChosenDevice, chooseDevice } from "../backend/registry.ts";
import { DEFAULT_GUEST_MAC } from "../boot.ts";
import { addOldSpelling } from "./old-spellings.ts";

export type { DeviceOptionExtras, DeviceOptionValues };

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

/**
 * --device-profile, --no-device, each device backend's own option (--device-socket, --device-pci:
 * backend/registry.ts) and --mac, shared by the commands that boot a guest with an erdma device.
 */
export function addDeviceOptions(cmd: Command): Command {
  let withOptions = addDeviceProfileOption(cmd).option(
    "--no-device",
    "boot without the emulated erdma device",
  );
  for (const b of BACKENDS) if (b.option) withOptions = withOptions.option(b.option.flags, b.option.help);
  return withOptions.option(
    "--mac <mac>",
    `the guest NIC's MAC, which the erdma device reports so the driver binds to that NIC (default: ${DEFAULT_GUEST_MAC})`,
    parseMacOption,
  );
}

/**
 * The device a command asked for, checked now (a bad profile, a missing socket, a PCI function that
 * cannot be passed through, options that contradict each other are one clear error before anything
 * is built or started); undefined with --no-device or --driver siw. The registry picks the backend.
 */
export function deviceOptions(
  values: DeviceOptionValues,
  extra: DeviceOptionExtras = {},
): ChosenDevice | undefined {
  return chooseDevice(values, extra);
}
