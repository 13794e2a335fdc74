/**
 * No device: a software driver (siw, rxe: scenario/drivers.ts) on the guest's NIC, or the guest alone (--no-device, the
 * smoke checks). Nothing to attach, no faults, no hardware trace; two guests are joined by their
 * fabric NICs.
 */
import { HilError } from "../../util/errors.ts";
import { DRIVER_FACTS, isSoftwareDriver, SOFTWARE_DRIVERS } from "../scenario/drivers.ts";
import type { DeviceBackend } from "./backend.ts";

/** --device-profile with a software driver (hil run, hil validate). */
export function deviceProfileWithoutDevice(driver: string): string {
  return `--device-profile sets the emulated erdma device's behaviour; --driver ${driver} attaches none`;
}

/** The error of a device option (`option`) given with a software driver, which runs without one. */
export function softwareDriverWithDevice(driver: string | undefined, option: string): HilError | undefined {
  if (driver === undefined || !isSoftwareDriver(driver)) return undefined;
  const title = DRIVER_FACTS[driver as keyof typeof DRIVER_FACTS].title;
  return new HilError(`--driver ${driver} runs ${title} without a device; ${option} attaches one`);
}

export const noDevice: DeviceBackend<undefined> = {
  kind: "none",
  title: "none (`--driver siw`, `--driver rxe`; `--no-device`)",
  drivers: SOFTWARE_DRIVERS,
  impliedBy: SOFTWARE_DRIVERS,
  boots: true,
  asks: (values, extra) => isSoftwareDriver(extra.driver) || !values.device,
  choose(values, extra) {
    if (extra.driver !== undefined && isSoftwareDriver(extra.driver)) {
      if (values.deviceProfile) throw new HilError(deviceProfileWithoutDevice(extra.driver));
    } else {
      if (values.deviceProfile) throw new HilError("--device-profile and --no-device contradict each other");
      if (extra.traceFile) throw new HilError("--trace needs the emulated device (drop --no-device)");
    }
    return undefined;
  },
  profileOf: () => undefined,
  boot: () => false,
  smoke: () => undefined,
  // the scenario plan says why, step by step: a software driver has no device model (suite/plan.ts planSteps)
  canArmFaults: false,
  maxGuests: Number.POSITIVE_INFINITY,
  twoGuests: { joinedBy: (driver) => `${driver} on their fabric NICs` },
  record: () => null,
  about: {
    probe: "the guest's checks; the device's two are SKIP",
    judges:
      "every scenario meant for the driver: rules 1-9, the commands and console rules; fault steps SKIP (no device model); no hardware-trace rules",
  },
  example: undefined,
};
