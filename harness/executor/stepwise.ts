/**
 * A scenario run step by step on an executor that keeps its verbs objects between calls: clear the
 * trace, connect the pair, run each step under its watchdog, settle the CQs, destroy everything. A
 * stuck step ends the scenario; a broken setup is an error. A runner that takes several steps at
 * once (runSteps) gets them in as few round trips as the host allows: everything up to the first
 * fault step (which the host arms between steps), the steps between faults, then settle and teardown.
 */

import { commandLine } from "../protocol/commands.ts";
import type { StuckObservation } from "../protocol/observations.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { CompiledScenario, CompiledStep } from "../scenario/compile.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import type { ExecutorOutcome } from "./executor.ts";
import { phaseSent, setupSent, stepSent } from "./sent.ts";
import { owedCompletions, settleCommands } from "./settle.ts";

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
  /**
   * Runs several steps in one round trip, each waited for up to its own timeout in the guest.
   * Stops at the first that does not finish (`stuckAt` is its index in `steps`) or, for a step
   * marked stopOnFailure, that leaves a failed command behind; `ran` counts the steps that ran.
   * With `clear` the trace is emptied first, as clear() does. Optional: without it every step is
   * one `run`.
   */
  runSteps?(
    steps: readonly { lines: readonly string[]; timeoutMs: number; stopOnFailure?: boolean }[],
    opts?: { clear?: boolean },
  ): Promise<{ records: TraceRecord[]; ran: number; stuck?: StuckCommand & { stuckAt: number } }>;
}

/** What the suite carries out itself between the executor's steps. */
export interface StepwiseHooks {
  /** arms a fault step on the device (the trace so far names the QPs); throws when it cannot */
  fault?(step: CompiledStep, records: readonly TraceRecord[]): Promise<void>;
  /**
   * the console barrier to write after the teardown, in the same round trip (`mark id=<n>`); the
   * outcome's `barrier` says whether it ran
   */
  barrier?: number;
  /**
   * Where the device can tell: whether it has been quiet for `ms` with nothing it will still do by
   * itself (no job, no timer: suite/early-hang.ts). The settle then stops waiting for owed
   * completions once the device has been quiet through its first `ms` of it: they can come only if
   * the guest touches the device again.
   */
  deviceQuiet?: { ms: number; now(): Promise<boolean> };
  /**
   * Where the device can tell: waits until it is idle, `ms` at most, for a sleep step until it is
   * (CompiledStep.untilDeviceIdle), instead of the step's sleep in the guest.
   */
  sleepUntilDeviceIdle?(ms: number): Promise<void>;
}

/** Commands run and waited for as one (a step, the setup, the settle, the teardown). */
interface Group {
  commands: readonly SentCommand[];
  timeoutMs: number;
  /** the step index a stuck group is reported under (-1 for the setup) */
  index: number;
  /** the groups after it do not run when a command so far failed */
  stopOnFailure?: boolean;
}

const SETTLE_WAIT_MS = 2000;
/** The settle's first wait is the device's quiet time and this, so that a device quiet through it is quiet for that time when asked. */
const SETTLE_FIRST_WAIT_MORE_MS = 100;
const TEARDOWN_TIMEOUT_MS = 30_000;
const BARRIER_TIMEOUT_MS = 10_000;

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
  let barrier: boolean | undefined;
  const outcome = (error?: string): ExecutorOutcome => ({
    records,
    stuck,
    sent,
    ...(error ? { error } : {}),
    ...(barrier !== undefined ? { barrier } : {}),
  });
  /**
   * Runs the groups in order, in one round trip when the runner can; the same records, sent
   * commands and stuck evidence either way. False when one did not finish (nothing after it runs).
   */
  const run = async (groups: readonly Group[], opts: { clear?: boolean } = {}): Promise<boolean> => {
    if (!runner.runSteps) {
      if (opts.clear) await runner.clear();
      for (const g of groups) {
        sent.push(...g.commands);
        const r = await runner.run(
          g.commands.map((c) => c.line),
          g.timeoutMs,
        );
        records.push(...r.records);
        if (r.stuck) {
          stuck.push({ ev: "stuck", step: g.index, ...r.stuck });
          return false;
        }
        if (g.stopOnFailure && failedCommands(records).length > 0) return true;
      }
      return true;
    }
    if (groups.length === 0) return true;
    const r = await runner.runSteps(
      groups.map((g) => ({
        lines: g.commands.map((c) => c.line),
        timeoutMs: g.timeoutMs,
        ...(g.stopOnFailure ? { stopOnFailure: true } : {}),
      })),
      opts,
    );
    for (const g of groups.slice(0, r.ran)) sent.push(...g.commands);
    records.push(...r.records);
    if (!r.stuck) return true;
    const { stuckAt, ...evidence } = r.stuck;
    stuck.push({ ev: "stuck", step: (groups[stuckAt] as Group).index, ...evidence });
    return false;
  };
  const ofStep = (s: CompiledStep): Group => ({
    commands: stepSent(s),
    timeoutMs: s.timeoutMs,
    index: s.index,
  });
  try {
    // the setup and the steps before the first fault go out with the clear, in one round trip
    // where the runner can; a failed setup stops them there
    const setup: Group = {
      commands: setupSent(compiled),
      timeoutMs: compiled.setupTimeoutMs,
      index: -1,
      stopOnFailure: true,
    };
    // fault steps are the host's; so is a sleep until the device is idle where the host can ask it
    const hostStep = (s: CompiledStep) =>
      s.fault !== undefined || (s.untilDeviceIdle !== undefined && hooks.sleepUntilDeviceIdle !== undefined);
    const firstFault = compiled.steps.findIndex(hostStep);
    const leading = compiled.steps.slice(0, firstFault < 0 ? undefined : firstFault);
    const setupDone = await run([setup, ...leading.filter((s) => s.commands.length > 0).map(ofStep)], {
      clear: true,
    });
    if (!setupDone && stuck[0]?.step === -1)
      return outcome(`setup did not finish: ${stuck[0]?.op} stuck for ${stuck[0]?.ms} ms`);
    const setupFailures = failedCommands(records);
    if (setupFailures.length > 0 && !sent.some((c) => c.phase === "step"))
      return outcome(`setup failed: ${setupFailures.join("; ")}`);
    if (!setupDone) return outcome();
    let pending: Group[] = [];
    for (const s of compiled.steps.slice(leading.length)) {
      if (!hostStep(s)) {
        if (s.commands.length > 0) pending.push(ofStep(s));
        continue;
      }
      if (!(await run(pending))) return outcome();
      pending = [];
      if (s.untilDeviceIdle && hooks.sleepUntilDeviceIdle) {
        await hooks.sleepUntilDeviceIdle(s.untilDeviceIdle.ms);
        continue;
      }
      if (!s.fault) continue;
      const where = `step ${s.index + 1} (line ${s.line}): fault ${s.fault.kind}`;
      if (!hooks.fault) return outcome(`${where}: nothing here arms device faults`);
      try {
        await hooks.fault(s, records);
      } catch (err) {
        return outcome(`${where}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (!(await run(pending))) return outcome();
    const end = compiled.steps.length;
    const settleFor = (waitMs: number): Group => {
      const settle = settleCommands(records, compiled.cqs, waitMs);
      return {
        commands: phaseSent(settle, "settle"),
        timeoutMs: waitMs * settle.length + 10_000,
        index: end,
      };
    };
    let settle = [settleFor(SETTLE_WAIT_MS)];
    const device = hooks.deviceQuiet;
    if (device && owedCompletions(records).size > 0) {
      // what is still owed after the first wait, from a device quiet all along, will not come
      const first = Math.min(SETTLE_WAIT_MS, device.ms + SETTLE_FIRST_WAIT_MORE_MS);
      const from = records.length;
      if (!(await run([settleFor(first)]))) return outcome();
      // a poll that got its min ended the wait as the whole 2 s one would have (the completions
      // it got need not be the ones owed); one that ran out of time waits on, unless the device
      // has been quiet through it
      const ranOut = records.slice(from).some((r) => r.ev === "poll" && r.got < r.min);
      const done = !ranOut || (await device.now().catch(() => false));
      settle = done || first >= SETTLE_WAIT_MS ? [] : [settleFor(SETTLE_WAIT_MS - first)];
    }
    const mark = hooks.barrier !== undefined ? commandLine("mark", { id: hooks.barrier }) : undefined;
    await run([
      ...settle,
      { commands: phaseSent([commandLine("reset")], "teardown"), timeoutMs: TEARDOWN_TIMEOUT_MS, index: end },
      ...(mark
        ? [{ commands: phaseSent([mark], "barrier"), timeoutMs: BARRIER_TIMEOUT_MS, index: end }]
        : []),
    ]);
    if (mark) {
      const ran = records.find((r) => r.ev === "cmd" && r.line === mark);
      const done = ran?.ev === "cmd" ? records.find((r) => r.ev === "done" && r.id === ran.id) : undefined;
      barrier = done?.ev === "done" && done.rc === 0;
    }
    return outcome();
  } catch (err) {
    return outcome(err instanceof Error ? err.message : String(err));
  }
}
