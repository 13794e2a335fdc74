/**
 * What the suite needs of an in-guest executor: it runs a compiled scenario (hil_kverbs command
 * lines) and returns the trace records they produced, plus what it saw stuck. The kernel module
 * (guest/kverbs) runs it step by step under a watchdog per step; a userspace program speaking the
 * same command language may run it in one go. Each is made for a booted guest by a factory.
 */
import type { PreparedGuest } from "../boot.ts";
import type { ModuleShell } from "../image/kmod.ts";
import type { StuckObservation } from "../protocol/observations.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import type { ExecutorKind } from "../scenario/schema.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import type { StepwiseHooks } from "./stepwise.ts";

export interface ExecutorOutcome {
  records: TraceRecord[];
  stuck: StuckObservation[];
  /** the command lines it was given, in order, with where each came from */
  sent: SentCommand[];
  /** the run broke (setup failed, the executor threw): the scenario is an ERROR */
  error?: string;
  /** asked for a console barrier (StepwiseHooks.barrier): whether its mark was written */
  barrier?: boolean;
}

/** The command an executor is running now, as the guest tells it. */
export interface RunningCommand {
  /** its id, for HangProbe.cut */
  id: number;
  op: string;
  /** how long it has been running */
  ms: number;
  /** the scheduler state of the task running it, e.g. "D (disk sleep)" */
  state: string;
}

/**
 * What an executor offers to tell a hang before its watchdog runs out (harness/suite/early-hang.ts):
 * what it runs now, and a way to end its wait for that command as if the watchdog had run out (the
 * stuck evidence is then collected as always).
 */
export interface HangProbe {
  running(): Promise<RunningCommand | undefined>;
  cut(id: number): Promise<void>;
}

export interface ScenarioExecutor {
  readonly kind: ExecutorKind;
  /** true once something got stuck: nothing more can run in this guest */
  readonly wedged: boolean;
  /** runs it; hooks carry out what the executor does not (device faults) */
  runScenario(compiled: CompiledScenario, hooks?: StepwiseHooks): Promise<ExecutorOutcome>;
  /** writes `hil-mark <id>` to the kernel log after everything the scenario did (the console barrier) */
  barrier?(id: number): Promise<void>;
  /**
   * After a hang: lets the device go (`release`, again while the stuck command waits), waits up to
   * timeoutMs for it to return, destroys every object, writes the console barrier `barrier` (as
   * barrier() does) and takes the executor back into use; why not, when it cannot.
   */
  recover?(release: () => Promise<void>, timeoutMs: number, barrier?: number): Promise<string | undefined>;
  /** present when the executor can be asked what it runs and told to stop waiting for it */
  readonly hangProbe?: HangProbe;
  /** destroys what is left and unloads; throws when something stays behind */
  close(): Promise<void>;
}

/** What an executor is made with: the running guest (a shell and a way to copy files in, as loading a module needs) and what was built for it. */
export type ExecutorGuest = ModuleShell;

export type ExecutorFactory = (guest: ExecutorGuest, prepared: PreparedGuest) => Promise<ScenarioExecutor>;
