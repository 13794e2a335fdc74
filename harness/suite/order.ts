/**
 * The order scenarios run in on one guest. A scenario whose hang is foreseen (its expected
 * failure is a hang, or a fault step stops a queue) wedges the guest, which is then rebooted for
 * the scenarios after it; run last, it costs no reboot. Reports keep the plan's order.
 */

import type { CompiledScenario } from "../scenario/compile.ts";
import type { FaultStep } from "../scenario/schema.ts";

/**
 * Whether the fault at step `i` stops the device completing a queue's work for good (a drain there
 * cannot return): an ignored doorbell, or a stall with no end of its own that no later
 * resume-queue of the same queue ends.
 */
function stopsAQueue(steps: readonly { fault?: FaultStep }[], i: number): boolean {
  const fault = steps[i]?.fault;
  if (fault?.kind === "ignore-doorbell") return true;
  if (fault?.kind !== "stall-queue" || fault.ms) return false;
  return !steps
    .slice(i + 1)
    .some(
      (s) => s.fault?.kind === "resume-queue" && s.fault.on === fault.on && s.fault.queue === fault.queue,
    );
}

export function foreseesHang(compiled: CompiledScenario): boolean {
  const expected = (compiled.scenario.expect_fail?.rules ?? []).map(String);
  return expected.includes("hang") || compiled.steps.some((_, i) => stopsAQueue(compiled.steps, i));
}

/** The items with the foreseen hangs moved to the end, each group in its own order. */
export function hangsLast<T extends { compiled: CompiledScenario }>(items: readonly T[]): T[] {
  return [
    ...items.filter((i) => !foreseesHang(i.compiled)),
    ...items.filter((i) => foreseesHang(i.compiled)),
  ];
}
