/** The command lines an executor is given for a scenario, each with where it came from (the commands rule). */

import type { CompiledScenario, CompiledStep } from "../scenario/compile.ts";
import type { SentCommand } from "../scenario/sent-command.ts";

export function setupSent(compiled: CompiledScenario): SentCommand[] {
  return compiled.setup.map((line) => ({ line, phase: "setup" }));
}

export function stepSent(step: CompiledStep): SentCommand[] {
  return step.commands.map((line) => ({
    line,
    phase: "step",
    step: step.index,
    stepLine: step.line,
    kind: step.kind,
    ...(step.expect !== undefined ? { expect: step.expect } : {}),
  }));
}

export function phaseSent(lines: readonly string[], phase: "settle" | "teardown" | "barrier"): SentCommand[] {
  return lines.map((line) => ({ line, phase }));
}
