/** What a device attached instead of the emulated one (--device-socket, --device-pci) contradicts. */
import { HilError } from "../../util/errors.ts";
import type { DeviceOptionExtras, DeviceOptionValues } from "./backend.ts";
import { softwareDriverWithDevice } from "./no-device.ts";

/** Why a two-guest scenario is a SKIP on a device one guest at a time can have. */
export const ONE_DEVICE_NO_PAIR = "two guests need the emulated erdma fabric";

/** What hil cannot do with a device it does not run: no profile to plan with, no faults to arm, one guest, no pair. */
export const ATTACHED_DEVICE_LIMITS = {
  profileOf: () => undefined,
  canArmFaults: false,
  maxGuests: 1,
  twoGuests: { skip: ONE_DEVICE_NO_PAIR },
} as const;

/** How the errors name the attached device: it has its own behaviour, and no trace hil can keep. */
export interface AttachedDeviceWords {
  /** after "--device-profile sets the emulated erdma device's behaviour; " */
  ownProfile: string;
  /** after "--trace keeps the emulated device's hardware trace; " */
  noTrace: string;
}

/** Refuses, with `flag` (the attaching option), --no-device, --device-profile, --trace and a software --driver. */
export function refuseEmulatedDeviceOptions(
  flag: string,
  values: DeviceOptionValues,
  extra: DeviceOptionExtras,
  words: AttachedDeviceWords,
): void {
  if (!values.device) throw new HilError(`${flag} and --no-device contradict each other`);
  if (values.deviceProfile)
    throw new HilError(`--device-profile sets the emulated erdma device's behaviour; ${words.ownProfile}`);
  if (extra.traceFile)
    throw new HilError(
      `--trace keeps the emulated device's hardware trace; ${words.noTrace} (drop --trace or ${flag})`,
    );
  const withSoftware = softwareDriverWithDevice(extra.driver, flag);
  if (withSoftware) throw withSoftware;
}
