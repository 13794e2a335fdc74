/**
 * A scenario run one step at a time on an executor that keeps its verbs objects between calls:
 * clear the trace, connect the pair, run each step under its watchdog, settle the CQs, destroy
 * everything. A stuck step ends the scenario; a broken setup is an error.
 */

import type { StuckObservation } from "../oracle/observations.ts";
import type { SentCommand } from "../oracle/run-commands.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { CompiledScenario, CompiledStep } from "../scenario/compile.ts";
import type { ExecutorOutcome } from "./executor.ts";
import { phaseSent, setupSent, stepSent } from "./sent.ts";
import { settleCommands } from "./settle.ts";

export interface StuckCommand {
  op: string;
  ms: number;
  stack: string;
  state: string;
}

/** An executor driven by command lines, its state kept between calls. */
export interface CommandRunner {
  /** empties the trace (a scenario's trace starts here) */
  clear(): Promise<void>;
  /** sends the lines, waits up to timeoutMs for all of them; `stuck` when they did not finish */
  run(lines: readonly string[], timeoutMs: number): Promise<{ records: TraceRecord[]; stuck?: StuckCommand }>;
}

/** What the suite carries out itself between the executor's steps. */
export interface StepwiseHooks {
  /** arms a fault step on the device (the trace so far names the QPs); throws when it cannot */
  fault?(step: CompiledStep, records: readonly TraceRecord[]): Promise<void>;
}

const SETTLE_WAIT_MS = 2000;
const TEARDOWN_TIMEOUT_MS = 30_000;

function failedCommands(records: readonly TraceRecord[]): string[] {
  return records.flatMap((r) =>
    r.ev === "done" && r.rc !== 0 ? [`${r.op}: rc ${r.rc}${r.err ? ` (${r.err})` : ""}`] : [],
  );
}

export async function runStepwise(
  runner: CommandRunner,
  compiled: CompiledScenario,
  hooks: StepwiseHooks = {},
): Promise<ExecutorOutcome> {
  const records: TraceRecord[] = [];
  const stuck: StuckObservation[] = [];
  const sent: SentCommand[] = [];
  const outcome = (error?: string): ExecutorOutcome => ({
    records,
    stuck,
    sent,
    ...(error ? { error } : {}),
  });
  const step = async (
    commands: readonly SentCommand[],
    timeoutMs: number,
    index: number,
  ): Promise<boolean> => {
    sent.push(...commands);
    const r = await runner.run(
      commands.map((c) => c.line),
      timeoutMs,
    );
    records.push(...r.records);
    if (r.stuck) stuck.push({ ev: "stuck", step: index, ...r.stuck });
    return !r.stuck;
  };
  try {
    await runner.clear();
    if (!(await step(setupSent(compiled), compiled.setupTimeoutMs, -1)))
      return outcome(`setup did not finish: ${stuck[0]?.op} stuck for ${stuck[0]?.ms} ms`);
    const setupFailures = failedCommands(records);
    if (setupFailures.length > 0) return outcome(`setup failed: ${setupFailures.join("; ")}`);
    for (const s of compiled.steps) {
      if (s.fault) {
        const where = `step ${s.index + 1} (line ${s.line}): fault ${s.fault.kind}`;
        if (!hooks.fault) return outcome(`${where}: nothing here arms device faults`);
        try {
          await hooks.fault(s, records);
        } catch (err) {
          return outcome(`${where}: ${err instanceof Error ? err.message : String(err)}`);
        }
        continue;
      }
      if (!(await step(stepSent(s), s.timeoutMs, s.index))) return outcome();
    }
    const end = compiled.steps.length;
    const settle = settleCommands(records, compiled.cqs, SETTLE_WAIT_MS);
    if (!(await step(phaseSent(settle, "settle"), SETTLE_WAIT_MS * settle.length + 10_000, end)))
      return outcome();
    await step(phaseSent(["reset"], "teardown"), TEARDOWN_TIMEOUT_MS, end);
    return outcome();
  } catch (err) {
    return outcome(err instanceof Error ? err.message : String(err));
  }
}
