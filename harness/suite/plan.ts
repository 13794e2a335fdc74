/** Whether a scenario runs in this suite, and if not, the verdict that says why. */
import type { CompiledScenario } from "../scenario/compile.ts";
import { isSoftwareDriver } from "../scenario/drivers.ts";
import type { DriverName, ExecutorKind, Scenario } from "../scenario/schema.ts";
import { erdmaFaultGap } from "./faults.ts";

export interface SuiteTarget {
  driver: DriverName;
  executor: ExecutorKind;
  /** the erdma device profile (driver erdma only) */
  deviceProfile?: string;
}

export type Plan = { run: true } | { run: false; verdict: "SKIP" | "MISS"; reason: string };

/** Scenario-level applicability: the drivers, executors and device profiles it names. */
export function planScenario(s: Scenario, target: SuiteTarget): Plan {
  if (!s.drivers.includes(target.driver))
    return { run: false, verdict: "SKIP", reason: `meant for ${s.drivers.join(", ")}, not ${target.driver}` };
  if (!s.executors.includes(target.executor))
    return { run: false, verdict: "SKIP", reason: `meant for the ${s.executors.join(", ")} executor(s)` };
  const kernelPoll =
    s.qp.poll !== "direct" ? s.qp.poll : s.fanout && s.fanout.poll !== "direct" ? s.fanout.poll : undefined;
  if (target.executor === "user" && kernelPoll)
    return {
      run: false,
      verdict: "SKIP",
      reason: `written for the kernel's ${kernelPoll} CQ poll context; a user CQ is polled directly`,
    };
  if (
    target.driver === "erdma" &&
    s.device_profiles &&
    target.deviceProfile &&
    !s.device_profiles.includes(target.deviceProfile)
  )
    return {
      run: false,
      verdict: "SKIP",
      reason: `meant for device profile(s) ${s.device_profiles.join(", ")}, not ${target.deviceProfile}`,
    };
  const off = s.skip_on?.find(
    (o) =>
      (!o.driver || o.driver === target.driver) &&
      (!o.executors || o.executors.includes(target.executor)) &&
      (!o.device_profiles ||
        (target.deviceProfile !== undefined && o.device_profiles.includes(target.deviceProfile))),
  );
  if (off) return { run: false, verdict: "SKIP", reason: `not here: ${off.why}` };
  return { run: true };
}

/**
 * Step-level: a step the executor cannot carry out makes the scenario a MISS; a device fault on
 * a software driver (siw, rxe: no device model to inject it into) makes it a SKIP, one the erdma model has no equivalent
 * for a MISS. Both executors stop for fault steps (the user executor streams its input).
 */
export function planSteps(c: CompiledScenario, target: SuiteTarget): Plan {
  const software = isSoftwareDriver(target.driver);
  for (const step of c.steps) {
    const where = `step ${step.index + 1} (line ${step.line})`;
    const userless = step.commands.find((line) => /\bop=(reg_mr|local_inv)\b/.test(line));
    if (target.executor === "user" && userless) {
      return {
        run: false,
        verdict: "MISS",
        reason: `${where}: hil-uverbs cannot post ${/op=(\w+)/.exec(userless)?.[1]}: libibverbs has no IBV_WR_REG_MR, and neither libsiw nor rdma-core's erdma provider implements IBV_WR_LOCAL_INV`,
      };
    }
    if (step.unsupported) {
      if (step.unsupported.needs === "device-model" && software)
        return {
          run: false,
          verdict: "SKIP",
          reason: `${where}: ${step.unsupported.reason}; ${target.driver} has no device model`,
        };
      return { run: false, verdict: "MISS", reason: `${where}: ${step.unsupported.reason}` };
    }
    if (!step.fault) continue;
    // a control for the device model: a software driver runs without it (withoutOptionalFaults)
    if (step.fault.optional && software) continue;
    if (software)
      return {
        run: false,
        verdict: "SKIP",
        reason: `${where}: fault ${step.fault.kind} needs the device model's fault injection; ${target.driver} has no device model`,
      };
    const gap = erdmaFaultGap(step.fault);
    if (gap) return { run: false, verdict: "MISS", reason: `${where}: ${gap}` };
  }
  return { run: true };
}
