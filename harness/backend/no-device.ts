/**
 * No device: a software driver (siw) on the guest's NIC, or the guest alone (--no-device, the
 * smoke checks). Nothing to attach, no faults, no hardware trace; two guests are joined by their
 * fabric NICs.
 */
import { HilError } from "../../util/errors.ts";
import type { DeviceBackend } from "./backend.ts";

/** --device-profile with --driver siw (hil run, hil validate). */
export const DEVICE_PROFILE_WITHOUT_DEVICE =
  "--device-profile sets the emulated erdma device's behaviour; --driver siw attaches none";

export const noDevice: DeviceBackend<undefined> = {
  kind: "none",
  title: "none (`--driver siw`; `--no-device`)",
  drivers: ["siw"],
  impliedBy: ["siw"],
  boots: true,
  asks: (values, extra) => extra.driver === "siw" || !values.device,
  choose(values, extra) {
    if (extra.driver === "siw") {
      if (values.deviceProfile) throw new HilError(DEVICE_PROFILE_WITHOUT_DEVICE);
    } else {
      if (values.deviceProfile) throw new HilError("--device-profile and --no-device contradict each other");
      if (extra.traceFile) throw new HilError("--trace needs the emulated device (drop --no-device)");
    }
    return undefined;
  },
  profileOf: () => undefined,
  boot: () => false,
  smoke: () => undefined,
  // the scenario plan says why, step by step: siw has no device model (suite/plan.ts planSteps)
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
