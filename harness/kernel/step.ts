import { progress, type Step } from "../../util/progress.ts";

/** Runs `fn` as one progress step: "done" (or `summary`) when it returns, "failed" when it throws. */
export async function inStep<T>(
  label: string,
  fn: (step: Step) => Promise<T>,
  summary?: (result: T) => string,
): Promise<T> {
  const step = progress.step(label);
  try {
    const result = await fn(step);
    step.succeed(summary?.(result));
    return result;
  } catch (err) {
    step.fail();
    throw err;
  }
}
