/**
 * A ULP workload's scenario on a suite guest: the UlpRunner's steps, its faults armed on the
 * device's control channel (any QP) and the device model's objects counted before and after.
 */
import type { BootedGuest } from "../boot.ts";
import type { ExecutorOutcome } from "../executor/executor.ts";
import { UlpRunner } from "../executor/ulp.ts";
import type { FaultObservation, Observation } from "../oracle/observations.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { armUlpFault, controlOf, deviceObjectCounts } from "./faults.ts";

export type UlpRunOutcome = ExecutorOutcome & { observations: Observation[]; wedged: boolean };

export function ulpWorkload(compiled: CompiledScenario): boolean {
  return compiled.scenario.workload !== "verbs";
}

/** Runs the scenario's ULP steps; `faults` receives each fault armed (the suite's observations). */
export async function runUlp(
  guest: BootedGuest,
  compiled: CompiledScenario,
  barrier: number,
  faults: FaultObservation[],
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
            faults.push(seen);
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
    // the faults are the suite's observations already
    observations: outcome.observations.filter((o) => o.ev !== "fault"),
    wedged: outcome.wedged,
    ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    ...(outcome.barrier !== undefined ? { barrier: outcome.barrier } : {}),
  };
}
