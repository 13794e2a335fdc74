/**
 * The order scenarios run in on one guest. A scenario whose hang is foreseen (its expected
 * failure is a hang, or a fault step stops a queue) wedges the guest, which is then rebooted for
 * the scenarios after it; run last, it costs no reboot. Reports keep the plan's order.
 */

import type { CompiledScenario } from "../scenario/compile.ts";
import type { FaultStep } from "../scenario/schema.ts";

/** A fault that stops the device completing a queue's work for good: a drain there cannot return. */
function stopsAQueue(fault: FaultStep): boolean {
  if (fault.kind === "ignore-doorbell") return true;
  return fault.kind === "stall-queue" && !("ms" in fault && fault.ms);
}

export function foreseesHang(compiled: CompiledScenario): boolean {
  const expected = (compiled.scenario.expect_fail?.rules ?? []).map(String);
  return (
    expected.includes("hang") || compiled.steps.some((s) => s.fault !== undefined && stopsAQueue(s.fault))
  );
}

/** The items with the foreseen hangs moved to the end, each group in its own order. */
export function hangsLast<T extends { compiled: CompiledScenario }>(items: readonly T[]): T[] {
  return [
    ...items.filter((i) => !foreseesHang(i.compiled)),
    ...items.filter((i) => foreseesHang(i.compiled)),
  ];
}
