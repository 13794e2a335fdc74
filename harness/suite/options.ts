/** What a suite run is given, and what follows from it alone (the device, the kernel known-bug records name). */
import type { CommandResult } from "../../qemu/launch/types.ts";
import { type ChosenDevice, impliedDevice } from "../backend/registry.ts";
import { type bootPrepared, DEFAULT_GUEST_MAC, type PreparedGuest } from "../boot.ts";
import type { ExecutorFactory } from "../executor/executor.ts";
import type { BugTarget } from "../oracle/known-bugs.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { profilesOnDriver } from "../scenario/drivers.ts";
import type { DriverName, OracleProfile, Scenario } from "../scenario/schema.ts";
import type { CheckResult } from "../verdict.ts";
import type { SuiteTarget } from "./plan.ts";
import type { Repetition } from "./repeat.ts";

/** What the probe stage is given of the first guest: its commands run one after another. */
export interface ProbedGuest {
  exec(command: string, opts?: { timeoutMs?: number }): Promise<CommandResult>;
  consoleLog(): string;
}

export interface SuiteOptions extends SuiteTarget {
  prepared: PreparedGuest;
  scenarios: readonly Scenario[];
  runDir: string;
  /** judge only under these oracle profiles (default: each scenario's own) */
  profiles?: readonly OracleProfile[];
  /** the executor to use instead of the one registered for `executor` (tests, new executors) */
  executorFactory?: ExecutorFactory;
  /**
   * the device under test (backend/registry.ts), its hardware trace file the first boot's (later
   * boots write beside it); default: the one the driver implies (erdma: the emulated device with
   * deviceProfile; siw: none)
   */
  device?: ChosenDevice;
  /** the guest NIC's MAC, which the device reports (default DEFAULT_GUEST_MAC) */
  mac?: string;
  /**
   * A first stage on the first guest, before the executor loads ("the device probes"): when one
   * of its checks is not PASS/SKIP, no scenario runs and each is a MISS naming that check.
   */
  probe?: (guest: ProbedGuest, hwTraceFile: string | undefined) => Promise<CheckResult[]>;
  /** told each time a guest's QEMU starts (logs; tests that check nothing is left) */
  onQemuStarted?: (info: { pid: number; workDir: string; sshPort: number }) => void;
  /** run each scenario this many times in a row (1-100, default 1), each repetition judged on its own */
  repeat?: number;
  /** guests booted side by side, each taking the next scenario when free (default 1; at most the device's backend's maxGuests) */
  guests?: number;
  /** boots a guest (default bootPrepared; tests boot none) */
  boot?: typeof bootPrepared;
}

/** One run of the queue: a scenario (or repetition) compiled, with the oracle profiles that judge it. */
export type QueuedRun = { r: Repetition; profiles: OracleProfile[]; compiled: CompiledScenario };

/** The rule sets that judge `s` on `driver` (its own, of those the driver's transport takes), of `only` if given. */
export function profilesFor(
  s: Scenario,
  only: readonly OracleProfile[] | undefined,
  driver: DriverName,
): OracleProfile[] {
  const own = profilesOnDriver(s.profiles, driver);
  return only ? own.filter((p) => only.includes(p)) : own;
}

/** The kernel under test as known-bug records name it: its base and version. */
export function bugTarget(opts: SuiteOptions): BugTarget {
  const k = opts.prepared.kernel;
  return {
    driver: opts.driver,
    executor: opts.executor,
    ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
    kernel: { base: k.describe.split(" + ")[0] ?? k.describe, ...(k.version ? { version: k.version } : {}) },
  };
}

/** The options with the device resolved: the one given, else the one the driver implies. */
export function withDevice(opts: SuiteOptions): SuiteOptions {
  const device =
    opts.device ??
    impliedDevice(opts.driver, {
      ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
      mac: opts.mac ?? DEFAULT_GUEST_MAC,
    });
  return device ? { ...opts, device } : opts;
}
