/** The job spec validate and bisect run their kernels with, from the options they share. */

import { type Command, Option } from "commander";
import { HilError } from "../../util/errors.ts";
import { deviceProfileWithoutDevice } from "../backend/no-device.ts";
import { impliedProfile } from "../backend/registry.ts";
import { DRIVERS, EXECUTORS } from "../scenario/schema.ts";
import type { JobSpec } from "../workflows/job/job.ts";
import type { SuiteOptionValues } from "./suite-options.ts";

export interface SeriesJobOptionValues extends SuiteOptionValues {
  kernel: string;
  config: string[];
  deviceProfile?: string;
}

/** The spec without a series (each command adds it where it belongs); a driver without a device takes no device profile. */
export function seriesJobSpec(opts: SeriesJobOptionValues, scenarios: string): JobSpec {
  const driver = opts.driver ?? "erdma";
  const deviceProfile = impliedProfile(driver, opts.deviceProfile);
  if (deviceProfile === undefined && opts.deviceProfile)
    throw new HilError(deviceProfileWithoutDevice(driver));
  return {
    kernel: opts.kernel,
    configs: opts.config,
    driver,
    executor: opts.executor ?? "kernel",
    ...(deviceProfile !== undefined ? { deviceProfile } : {}),
    scenarios,
    ...(opts.rules ? { oracle: opts.rules } : {}),
  };
}

/** --executor and --driver, as validate and bisect take them for every kernel they run. */
export function addExecutorDriverOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--executor <kind>", "the in-guest executor (default: kernel)").choices(EXECUTORS))
    .addOption(
      new Option(
        "--driver <name>",
        "the RDMA driver under test (default: erdma; rxe adds --config rxe)",
      ).choices(DRIVERS),
    );
}
