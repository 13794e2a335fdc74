/** The job spec validate and bisect run their kernels with, from the options they share. */
import { DEFAULT_PROFILE } from "../../qemu/erdma/profile-file.ts";
import { HilError } from "../../util/errors.ts";
import type { DriverName, ExecutorKind, OracleProfile } from "../scenario/schema.ts";
import type { JobSpec } from "../workflows/job.ts";
import { DEVICE_PROFILE_WITHOUT_DEVICE } from "./device-options.ts";

export interface SeriesJobOptionValues {
  kernel: string;
  config: string[];
  deviceProfile?: string;
  executor?: ExecutorKind;
  driver?: DriverName;
  rules?: OracleProfile[];
}

/** The spec without a series (each command adds it where it belongs); siw takes no device profile. */
export function seriesJobSpec(opts: SeriesJobOptionValues, scenarios: string): JobSpec {
  const driver = opts.driver ?? "erdma";
  if (driver === "siw" && opts.deviceProfile) throw new HilError(DEVICE_PROFILE_WITHOUT_DEVICE);
  return {
    kernel: opts.kernel,
    configs: opts.config,
    driver,
    executor: opts.executor ?? "kernel",
    ...(driver === "erdma" ? { deviceProfile: opts.deviceProfile ?? DEFAULT_PROFILE } : {}),
    scenarios,
    ...(opts.rules ? { oracle: opts.rules } : {}),
  };
}
