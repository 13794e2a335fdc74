/**
 * Runs one input through a target and classifies what happened: a crash (the harness threw, an
 * error escaped as an unhandled rejection or exception, or it hung), memory accessed outside what
 * the guest mapped, or fds leaked. The corpus replay test and the engine both use it.
 */
import type { FuzzTarget } from "./target.ts";

export interface Outcome {
  crash?: string;
  outOfBounds: string[];
  fdLeaks: string[];
}

const stray: string[] = [];
let listening = 0;
const onStray = (err: unknown) => {
  stray.push(`escaped: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
};

/** While on, errors nobody caught are collected (and charged to the input that is running). */
export function catchStrayErrors(on: boolean): void {
  if (on && listening++ === 0) {
    process.on("unhandledRejection", onStray);
    process.on("uncaughtException", onStray);
  } else if (!on && --listening === 0) {
    process.off("unhandledRejection", onStray);
    process.off("uncaughtException", onStray);
  }
}

export async function runOne(target: FuzzTarget, input: Uint8Array): Promise<Outcome> {
  stray.length = 0;
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`hang: no end after ${target.timeoutMs} ms`)),
      target.timeoutMs,
    );
  });
  try {
    const found = await Promise.race([target.run(input), hang]);
    // let errors thrown by work the input started surface
    await new Promise((r) => setImmediate(r));
    if (stray.length > 0) return { crash: stray.join("\n"), ...found };
    return { outOfBounds: found.outOfBounds, fdLeaks: found.fdLeaks };
  } catch (err) {
    return {
      crash: err instanceof Error ? (err.stack ?? err.message) : String(err),
      outOfBounds: [],
      fdLeaks: [],
    };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs a target's first seed once, unjudged: Node opens some fds of its own on first use (module
 * loading, the watchdog thread), which the fd oracle would otherwise charge to the first input.
 */
export async function warmUp(target: FuzzTarget): Promise<void> {
  const [seed] = target.seeds();
  if (seed) await runOne(target, seed);
}
