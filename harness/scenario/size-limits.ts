/**
 * Bounds on what one scenario may ask of a guest, so that a mistake (a generated file gone wrong,
 * a count with two extra zeros) is refused with its line instead of occupying the machine for
 * hours. Each bound is far above what the shipped scenarios use (at most 40 steps, 1100 WRs, 2 s
 * of waits).
 */
import { countOn, type ScenarioSpec, sleepMsOf } from "./schema.ts";

export const MAX_STEPS = 1000;
/** WRs posted by all the post steps of a scenario, on the driver where their counts are largest */
export const MAX_POSTED_WRS = 65_536;
/** time the steps ask to wait on purpose: sleeps and polls' wait_ms */
export const MAX_WAIT_MS = 30 * 60_000;

export interface SizeProblem {
  path: (string | number)[];
  message: string;
}

export function scenarioSizeProblems(s: ScenarioSpec): SizeProblem[] {
  const problems: SizeProblem[] = [];
  if (s.steps.length > MAX_STEPS)
    problems.push({
      path: ["steps"],
      message: `${s.steps.length} steps; a scenario may have at most ${MAX_STEPS}`,
    });
  let posted = 0;
  let waited = 0;
  s.steps.forEach((step, i) => {
    const post = "post_send" in step ? step.post_send : "post_recv" in step ? step.post_recv : undefined;
    if (post) posted += countOn(post.count) * (post.on === "fanout" ? (s.fanout?.pairs ?? 0) : 1);
    if ("sleep" in step) waited += sleepMsOf(step.sleep);
    if ("poll" in step) waited += step.poll.wait_ms;
    if (posted > MAX_POSTED_WRS) {
      problems.push({
        path: ["steps", i],
        message: `the post steps up to here post ${posted} WRs; a scenario may post at most ${MAX_POSTED_WRS}`,
      });
      posted = Number.NEGATIVE_INFINITY;
    }
    if (waited > MAX_WAIT_MS) {
      problems.push({
        path: ["steps", i],
        message: `the sleeps and poll waits up to here add up to ${waited} ms; a scenario may wait at most ${MAX_WAIT_MS} ms`,
      });
      waited = Number.NEGATIVE_INFINITY;
    }
  });
  return problems;
}
