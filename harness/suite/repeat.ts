/**
 * `hil run --repeat n`: races (a post against the flush worker, a completion handler on another
 * CPU) show in some runs only, so each scenario runs n times on the same guest, one after another
 * (A#1 ... A#n, then B#1 ...), each repetition judged on its own, and then, per scenario and oracle
 * profile, whether the repetitions' verdicts agree.
 *
 * A repetition is called `<scenario>#<k>` in verdicts.json and traces/ (n > 1 only: with n = 1
 * every name is the scenario's). Each takes its own rdma_cm port, as each scenario does.
 *
 * Flaky is any disagreement, whatever the verdicts (PASS and FAIL, XFAIL and XPASS, PASS and
 * ERROR). What the exit status counts stays the verdict of each repetition: a FAIL in any of them
 * is a failure (1), an ERROR or MISS could not judge (3, which wins), and a scenario flaky between
 * passing verdicts (PASS, XFAIL, XPASS, SKIP) is shown and counted as flaky but not a failure: an
 * XFAIL is a recorded known bug, and a race that shows it in some repetitions only is still that
 * bug.
 */

import { HilError } from "../../util/errors.ts";
import { combineVerdicts } from "../oracle/judge.ts";
import type { RunStability } from "../rundir/schema.ts";
import type { Scenario } from "../scenario/schema.ts";
import { VERDICTS, type Verdict } from "../verdict.ts";

export const MAX_REPEAT = 100;
const MAX_PORT = 65535;

/** One run of a scenario in the suite. */
export interface Repetition {
  /** the scenario as loaded: its name is unchanged, the guest never sees the suffix */
  scenario: Scenario;
  /** what the run directory calls this run: the scenario's name, `#k` after it when n > 1 */
  name: string;
  /** 1-based */
  repetition: number;
  /** how many repetitions of each scenario the suite runs */
  of: number;
  /** the rdma_cm port of its QP pair */
  port: number;
}

/** `drain-qp-idle#2` for the second of several repetitions; the scenario's own name when n = 1. */
export function repetitionName(name: string, k: number, n: number): string {
  return n > 1 ? `${name}#${k}` : name;
}

/** How the progress line names a run: `drain-qp-idle #2/5`, or the scenario's name when n = 1. */
export function repetitionLabel(r: Repetition): string {
  return r.of > 1 ? `${r.scenario.name} #${r.repetition}/${r.of}` : r.scenario.name;
}

/**
 * Each scenario n times in a row, in the given order; the i-th run (counting every repetition)
 * gets port firstPort + i, so with n = 1 each scenario keeps the port it always had.
 */
export function expandRepeats(scenarios: readonly Scenario[], n: number, firstPort: number): Repetition[] {
  if (!Number.isInteger(n) || n < 1 || n > MAX_REPEAT)
    throw new HilError(`--repeat takes a whole number from 1 to ${MAX_REPEAT}, not ${n}`);
  const total = scenarios.length * n;
  if (firstPort + total - 1 > MAX_PORT)
    throw new HilError(
      `${scenarios.length} scenario(s) x ${n} repetition(s) need ${total} ports from ${firstPort}: more than there are (${MAX_PORT})`,
    );
  return scenarios.flatMap((scenario, i) =>
    Array.from({ length: n }, (_, k) => ({
      scenario,
      name: repetitionName(scenario.name, k + 1, n),
      repetition: k + 1,
      of: n,
      port: firstPort + i * n + k,
    })),
  );
}

/** One repetition's verdict under one oracle profile, with the reason the table shows for it. */
export interface RepetitionVerdict {
  scenario: string;
  repetition: number;
  profile: string;
  verdict: Verdict;
  reason: string;
}

/** Whether a scenario's repetitions agree under one oracle profile (verdicts.json's `stability`). */
export type Stability = RunStability;

/** Per scenario and profile, in the order they first appear. */
export function stabilityOf(verdicts: readonly RepetitionVerdict[]): Stability[] {
  const groups = new Map<string, RepetitionVerdict[]>();
  for (const v of verdicts) {
    const key = JSON.stringify([v.scenario, v.profile]);
    const group = groups.get(key) ?? [];
    group.push(v);
    groups.set(key, group);
  }
  return [...groups.values()].map((group) => {
    const reps = [...group].sort((a, b) => a.repetition - b.repetition);
    const first = reps[0] as RepetitionVerdict;
    const counts: Partial<Record<Verdict, number>> = {};
    for (const v of VERDICTS) {
      const n = reps.filter((r) => r.verdict === v).length;
      if (n > 0) counts[v] = n;
    }
    const other = reps.find((r) => r.verdict !== first.verdict);
    return {
      scenario: first.scenario,
      profile: first.profile,
      repetitions: reps.length,
      verdicts: counts,
      flaky: other !== undefined,
      worst: combineVerdicts(reps.map((r) => r.verdict)),
      first: { verdict: first.verdict, reason: first.reason },
      ...(other
        ? { differs: { repetition: other.repetition, verdict: other.verdict, reason: other.reason } }
        : {}),
    };
  });
}
