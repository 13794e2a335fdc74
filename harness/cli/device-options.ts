import { type Command, Option } from "commander";
import type { ErdmaProfile } from "../../qemu/erdma/profile.ts";
import { DEFAULT_PROFILE, listProfiles, loadProfile } from "../../qemu/erdma/profile-file.ts";
import { HilError } from "../util/errors.ts";

export interface DeviceOptionValues {
  profile?: string;
  /** false with --no-device */
  device: boolean;
}

/** --profile and --no-device, shared by the commands that boot a guest with the emulated device. */
export function addDeviceOptions(cmd: Command): Command {
  const known = listProfiles();
  return cmd
    .addOption(
      new Option(
        "--profile <name|file>",
        `the emulated erdma device's behaviour profile: a name from fixtures/profiles (${known.join(", ")}) or a JSON file (default: ${DEFAULT_PROFILE})`,
      ),
    )
    .option("--no-device", "boot without the emulated erdma device");
}

export interface ChosenDevice {
  profileName: string;
  profile: ErdmaProfile;
  traceFile?: string;
}

/**
 * The device a command asked for, its profile loaded and checked now (a bad profile is one clear
 * error before anything is built or started); undefined with --no-device.
 */
export function deviceOptions(
  values: DeviceOptionValues,
  extra: { traceFile?: string } = {},
): ChosenDevice | undefined {
  if (!values.device) {
    if (values.profile) throw new HilError("--profile and --no-device contradict each other");
    if (extra.traceFile) throw new HilError("--trace needs the emulated device (drop --no-device)");
    return undefined;
  }
  const profileName = values.profile ?? DEFAULT_PROFILE;
  return { profileName, profile: loadProfile(profileName), traceFile: extra.traceFile };
}
