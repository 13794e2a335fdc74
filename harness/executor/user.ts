/**
 * The userspace executor (guest/uverbs, hil-uverbs) as a suite executor: one process per scenario,
 * all its command lines at once (the objects live in that process), then a settling pass over the
 * CQs. A scenario with fault steps runs in one streaming process instead: its lines go in segments
 * cut at the fault steps, and before the segment after a fault step the suite arms that fault with
 * the trace so far (every command before it done). Its drain has a timeout of its own: a marker
 * that never completes is a `hang` record, which becomes the stuck observation the oracle judges
 * as a hang (no kernel stack: the process polls); a run the host-side watchdog kills is one too,
 * with the process's kernel stack. The user drain's marker posts become observations, so rule 9
 * can tell a failed marker post from a hang.
 */

import { shellQuote } from "../../qemu/launch/ssh.ts";
import { HilError } from "../../util/errors.ts";
import { guestToolPath } from "../image/guest-tools.ts";
import { commandLine } from "../protocol/commands.ts";
import type { StuckObservation } from "../protocol/observations.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { CompiledScenario, CompiledStep } from "../scenario/compile.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import type { ExecutorOutcome, ScenarioExecutor } from "./executor.ts";
import { phaseSent, setupSent, stepSent } from "./sent.ts";
import type { StepwiseHooks } from "./stepwise.ts";
import {
  runUverbs,
  runUverbsSegments,
  UVERBS_BINARY,
  UVERBS_EXIT,
  type UverbsRun,
  type UverbsShell,
  type UverbsStreamShell,
} from "./uverbs-driver.ts";

/** how long the run waits for late completions before its last polls */
const SETTLE_MS = 500;
/** room for the process, SSH and teardown beyond the steps' own watchdogs */
const RUN_MARGIN_MS = 30_000;

/** hil-uverbs' exit statuses that are results, not a broken run: ok, a command failed, a drain hung. */
const EXPECTED_EXITS: ReadonlySet<number> = new Set([
  UVERBS_EXIT.ok,
  UVERBS_EXIT.commandFailed,
  UVERBS_EXIT.hang,
]);

/** The settling pass at the end of a run: late completions, then a last poll of every CQ. */
function settleLines(compiled: CompiledScenario): string[] {
  return [
    commandLine("sleep", { ms: SETTLE_MS }),
    ...compiled.cqs.map((cq) => commandLine("poll", { cq, min: 0, timeout: 0 })),
  ];
}

/** The hil-uverbs input for a scenario compiled for the user executor, each line with its step. */
export function userSent(compiled: CompiledScenario): SentCommand[] {
  return [
    ...setupSent(compiled),
    ...compiled.steps.flatMap((s) => stepSent(s)),
    ...phaseSent(settleLines(compiled), "settle"),
  ];
}

/** The hil-uverbs input for a scenario compiled for the user executor. */
export function userLines(compiled: CompiledScenario): string[] {
  return userSent(compiled).map((c) => c.line);
}

/**
 * The input cut at the fault steps: segment 0 is the setup and the steps before the first fault,
 * segment i the steps after the i-th fault step up to the next one (the settling pass in the
 * last). faults[i] is the step armed between segments i and i+1.
 */
export function userSegments(compiled: CompiledScenario): { segments: string[][]; faults: CompiledStep[] } {
  const segments: string[][] = [[...compiled.setup]];
  const faults: CompiledStep[] = [];
  for (const s of compiled.steps) {
    if (s.fault) {
      faults.push(s);
      segments.push([]);
      continue;
    }
    segments.at(-1)?.push(...s.commands);
  }
  segments.at(-1)?.push(...settleLines(compiled));
  return { segments, faults };
}

/** The drain steps' watchdog is the user drain's own timeout; the whole run gets them all. */
export function userTimeouts(compiled: CompiledScenario): { drainMs: number; runMs: number } {
  const drains = compiled.steps.filter((s) => s.kind === "drain").map((s) => s.timeoutMs);
  const drainMs = Math.max(1000, ...drains);
  const runMs = compiled.setupTimeoutMs + compiled.steps.reduce((n, s) => n + s.timeoutMs, 0) + RUN_MARGIN_MS;
  return { drainMs, runMs };
}

/** The scenario step the n-th drain record of the run belongs to. */
function drainStep(compiled: CompiledScenario, records: readonly TraceRecord[], call: number): number {
  const nth = records.filter((r) => r.ev === "drain").findIndex((r) => r.ev === "drain" && r.call === call);
  const drains = compiled.steps.filter((s) => s.kind === "drain");
  return drains[nth >= 0 ? nth : drains.length - 1]?.index ?? -1;
}

/** The step of the last command that started and did not finish (a killed run); -1: setup. */
function unfinishedStep(
  compiled: CompiledScenario,
  records: readonly TraceRecord[],
): { step: number; op: string } {
  const cmds = records.flatMap((r) => (r.ev === "cmd" ? [r] : []));
  const done = new Set(records.flatMap((r) => (r.ev === "done" ? [r.id] : [])));
  const op =
    cmds
      .filter((c) => !done.has(c.id))
      .at(-1)
      ?.line.split(" ")[0] ?? "?";
  let n = compiled.setup.length;
  if (cmds.length <= n) return { step: -1, op };
  for (const s of compiled.steps) {
    n += s.commands.length;
    if (cmds.length <= n) return { step: s.index, op };
  }
  return { step: compiled.steps.length, op };
}

/** The run's records and what it saw stuck, in the suite's shape. */
export function userOutcome(compiled: CompiledScenario, run: UverbsRun): ExecutorOutcome {
  const stuck: StuckObservation[] = [];
  if (run.hang)
    stuck.push({
      ev: "stuck",
      step: drainStep(compiled, run.records, run.hang.call),
      op: "drain",
      ms: run.hang.waited_ms,
      stack: `(user drain: the ${run.hang.queue} marker of ${run.hang.qp} did not complete on ${run.hang.cq} in ${run.hang.waited_ms} ms)`,
      state: "polling its CQ",
    });
  else if (run.killed) {
    const { step, op } = unfinishedStep(compiled, run.records);
    stuck.push({
      ev: "stuck",
      step,
      op,
      ms: run.killed.afterMs,
      stack: run.killed.stack,
      state: run.killed.state,
    });
  }
  const rejected = run.records.find((r) => r.ev === "reject");
  const crashed = !run.killed && !EXPECTED_EXITS.has(run.exitCode);
  return {
    records: run.records,
    stuck,
    sent: userSent(compiled),
    ...(crashed
      ? {
          error: `hil-uverbs ended with exit status ${run.exitCode}${run.exitCode > 128 ? ` (signal ${run.exitCode - 128})` : ""}${run.stderr.trim() ? `: ${run.stderr.trim().split("\n").at(-1)}` : ""}`,
        }
      : {}),
    ...(rejected?.ev === "reject" ? { error: `hil-uverbs refused ${rejected.line}: ${rejected.why}` } : {}),
  };
}

/** The setup commands that failed (the first setup.length commands of a run), as "op: rc N (err)". */
function setupFailures(compiled: CompiledScenario, records: readonly TraceRecord[]): string[] {
  return records.flatMap((r) =>
    r.ev === "done" && r.id <= compiled.setup.length && r.rc !== 0
      ? [`${r.op}: rc ${r.rc}${r.err ? ` (${r.err})` : ""}`]
      : [],
  );
}

/** A guest the user executor runs in; fault steps need the streaming exec. */
export type UserExecutorGuest = UverbsShell & Partial<Pick<UverbsStreamShell, "execStream">>;

export class UserExecutor implements ScenarioExecutor {
  readonly kind = "user" as const;
  private stuckOnce = false;

  private constructor(private readonly guest: UserExecutorGuest) {}

  /** Checks the guest has hil-uverbs (the tools layer of the image). */
  static async load(guest: UserExecutorGuest): Promise<UserExecutor> {
    const r = await guest.exec(`command -v ${UVERBS_BINARY}`, { timeoutMs: 10_000 });
    if (r.exitCode !== 0) throw new HilError(`the guest has no ${UVERBS_BINARY} (the guest tools layer)`);
    return new UserExecutor(guest);
  }

  get wedged(): boolean {
    return this.stuckOnce;
  }

  async runScenario(compiled: CompiledScenario, hooks: StepwiseHooks = {}): Promise<ExecutorOutcome> {
    const { drainMs, runMs } = userTimeouts(compiled);
    const opts = { drainTimeoutMs: drainMs, timeoutMs: runMs, check: false };
    const { segments, faults } = userSegments(compiled);
    let run: UverbsRun;
    if (faults.length === 0) run = await runUverbs(this.guest, userLines(compiled), opts);
    else {
      const first = faults[0] as CompiledStep;
      const where = (s: CompiledStep) => `step ${s.index + 1} (line ${s.line}): fault ${s.fault?.kind}`;
      const { fault } = hooks;
      if (!fault)
        return {
          records: [],
          stuck: [],
          sent: [],
          error: `${where(first)}: nothing here arms device faults`,
        };
      const { execStream } = this.guest;
      if (!execStream)
        return {
          records: [],
          stuck: [],
          sent: [],
          error: `${where(first)}: this guest has no streaming exec to stop hil-uverbs at the fault`,
        };
      const shell: UverbsStreamShell = {
        exec: (command, o) => this.guest.exec(command, o),
        execStream: (command, o) => execStream.call(this.guest, command, o),
      };
      run = await runUverbsSegments(
        shell,
        segments,
        async ({ segment, trace }) => {
          // as the stepwise runner: a broken setup arms nothing (the QPs may not exist)
          const failed = segment === 0 ? setupFailures(compiled, trace.records) : [];
          if (failed.length > 0) throw new Error(`setup failed: ${failed.join("; ")}`);
          const step = faults[segment] as CompiledStep;
          try {
            await fault(step, trace.records);
          } catch (err) {
            throw new Error(`${where(step)}: ${err instanceof Error ? err.message : String(err)}`);
          }
        },
        opts,
      );
    }
    // a killed process may still hold its verbs objects (stuck in the kernel): reboot after it
    if (run.killed) this.stuckOnce = true;
    const outcome = userOutcome(compiled, run);
    return run.interrupted && outcome.error === undefined
      ? { ...outcome, error: run.interrupted.error }
      : outcome;
  }

  async barrier(id: number): Promise<void> {
    const r = await this.guest.exec(
      `echo ${shellQuote(commandLine("mark", { id }))} | ${guestToolPath(UVERBS_BINARY)}`,
      {
        timeoutMs: 10_000,
      },
    );
    if (r.exitCode !== 0)
      throw new Error(`hil-uverbs mark id=${id} exited ${r.exitCode}: ${r.stderr.trim()}`);
  }

  async close(): Promise<void> {}
}
