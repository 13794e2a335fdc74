/**
 * The suite's plan and queue: each scenario (or repetition) compiled for the guest, and either
 * queued (on one guest, or on a pair for a two-guest scenario) or reported as not run (SKIP, MISS)
 * with the reason: no rule set selected, the plan or the executor refuses it, the device
 * cannot arm its faults or join two guests.
 */
import { backendOf } from "../backend/registry.ts";
import type { ExecutorFactory } from "../executor/executor.ts";
import { GUEST_ADDR } from "../protocol/guest-net.ts";
import { compileScenario, withoutOptionalFaults } from "../scenario/compile.ts";
import { profilesFor, type QueuedRun, type SuiteOptions } from "./options.ts";
import { planScenario, planSteps } from "./plan.ts";
import type { Repetition } from "./repeat.ts";
import { notRun, type SuiteReport } from "./results.ts";

/** The runs to queue, on one guest each (`todo`) or on a pair (`pairs`); the others go to the report. */
export function queueRuns(
  opts: SuiteOptions,
  runs: readonly Repetition[],
  factory: ExecutorFactory | string,
  report: SuiteReport,
): { todo: QueuedRun[]; pairs: QueuedRun[] } {
  const backend = backendOf(opts.device);
  const faultSkip = backend.faultSkip?.(opts.device);
  const twoGuests = backend.twoGuests;
  const todo: QueuedRun[] = [];
  const pairs: QueuedRun[] = [];
  for (const r of runs) {
    const s = r.scenario;
    const profiles = profilesFor(s, opts.profiles, opts.driver);
    const plan = planScenario(s, opts);
    const written = compileScenario(s, {
      addr: GUEST_ADDR,
      port: r.port,
      executor: opts.executor,
      driver: opts.driver,
    });
    const compiled = backend.canArmFaults ? written : withoutOptionalFaults(written);
    const steps = plan.run ? planSteps(compiled, opts) : plan;
    if (profiles.length === 0) report.scenarios.push(notRun(r, [], "SKIP", "no rule set selected"));
    else if (!plan.run) report.scenarios.push(notRun(r, profiles, plan.verdict, plan.reason));
    else if (typeof factory === "string") report.scenarios.push(notRun(r, profiles, "MISS", factory));
    // as a fault on siw: not meant for a device without fault control, so a SKIP, not a MISS
    else if (faultSkip && compiled.steps.some((x) => x.fault))
      report.scenarios.push(notRun(r, profiles, "SKIP", faultSkip));
    else if (!steps.run) report.scenarios.push(notRun(r, profiles, steps.verdict, steps.reason));
    else if (s.guests === 2 && !("joinedBy" in twoGuests))
      report.scenarios.push(
        notRun(r, profiles, "SKIP", "skip" in twoGuests ? twoGuests.skip : twoGuests.unchecked),
      );
    else if (s.guests === 2) pairs.push({ r, profiles, compiled });
    else todo.push({ r, profiles, compiled });
  }
  return { todo, pairs };
}
