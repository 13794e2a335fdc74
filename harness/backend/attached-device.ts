/** What a device attached instead of the emulated one (--device-socket, --device-pci) contradicts. */
import { HilError } from "../../util/errors.ts";
import type { DeviceOptionExtras, DeviceOptionValues } from "./backend.ts";
import { softwareDriverWithDevice } from "./no-device.ts";

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
