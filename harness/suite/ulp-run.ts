/**
 * A ULP workload's scenario on a suite guest: the UlpRunner's steps, its faults armed on the
 * device's control channel (on the host's or the target's I/O queue QP) and the device model's
 * objects counted before and after.
 */
import type { BootedGuest } from "../boot.ts";
import type { ExecutorOutcome } from "../executor/executor.ts";
import { UlpRunner } from "../executor/ulp.ts";
import type { FaultObservation, Observation } from "../protocol/observations.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { armUlpFault, controlOf, deviceObjectCounts } from "./faults.ts";

export type UlpRunOutcome = ExecutorOutcome & { observations: Observation[]; wedged: boolean };

export function ulpWorkload(compiled: CompiledScenario): boolean {
  return compiled.scenario.workload !== "verbs";
}

/** Runs the scenario's ULP steps; the faults it armed are among its observations. */
export async function runUlp(
  guest: BootedGuest,
  compiled: CompiledScenario,
  barrier: number,
): Promise<UlpRunOutcome> {
  const control = controlOf(guest.device);
  const outcome = await new UlpRunner(guest).run(compiled, {
    barrier,
    ...(control
      ? {
          fault: async (step) => {
            const armed = await armUlpFault(control, step, undefined, compiled.endpoint.port);
            const seen: FaultObservation = {
              ev: "fault",
              step: step.index,
              kind: step.fault?.kind ?? "?",
              spec: armed.spec,
            };
            return seen;
          },
          deviceObjects: () => deviceObjectCounts(control),
        }
      : {}),
  });
  return {
    records: [],
    sent: [],
    stuck: outcome.stuck,
    observations: outcome.observations,
    wedged: outcome.wedged,
    ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    ...(outcome.barrier !== undefined ? { barrier: outcome.barrier } : {}),
  };
}
