/**
 * How the suite's scenarios are shared among guests booted side by side (`--guests n`): the
 * queue (foreseen hangs last, suite/order.ts) is cut into units, a scenario's repetitions together
 * so that they run in a row on one guest, and each guest takes the next unit when it is free.
 */
import { availableParallelism } from "node:os";

/** More guests than this gain nothing measurable on the machines the suite runs on. */
export const MAX_DEFAULT_GUESTS = 4;
export const MAX_GUESTS = 16;

/** One guest per CPU, at most MAX_DEFAULT_GUESTS: each TCG guest keeps a CPU busy while it runs. */
export function defaultGuests(cpus = availableParallelism()): number {
  return Math.max(1, Math.min(MAX_DEFAULT_GUESTS, cpus));
}

/** The queue's runs in units: consecutive runs of one scenario (its repetitions) stay together. */
export function unitsOf<T>(queue: readonly T[], scenarioOf: (item: T) => string): T[][] {
  const units: T[][] = [];
  for (const item of queue) {
    const last = units.at(-1);
    if (last && scenarioOf(last[0] as T) === scenarioOf(item)) last.push(item);
    else units.push([item]);
  }
  return units;
}
