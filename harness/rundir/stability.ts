/** A run's recorded stability (`--repeat`) in words: the table's cell, the flaky scenarios. */
import type { RunStability as Stability } from "./schema.ts";

/** The table's cell: the verdict all repetitions agree on, or `FLAKY 3/5 FAIL` (the worst one's count). */
export function stabilityCell(s: Pick<Stability, "flaky" | "verdicts" | "worst" | "repetitions">): string {
  return s.flaky ? `FLAKY ${s.verdicts[s.worst] ?? 0}/${s.repetitions} ${s.worst}` : s.worst;
}

/** Scenarios with at least one flaky profile. */
export function flakyScenarios(stability: readonly Stability[]): string[] {
  return [...new Set(stability.filter((s) => s.flaky).map((s) => s.scenario))];
}
