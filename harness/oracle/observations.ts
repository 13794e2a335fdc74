/**
 * What the oracle judges: the executor's trace records of one scenario plus what the harness saw
 * itself (a step past its watchdog with the worker's stack, kernel console events).
 */
import type { ConsoleEventKind } from "../console/parse.ts";
import type { KvRecord } from "../kverbs/trace.ts";

export interface StuckObservation {
  ev: "stuck";
  /** the scenario step (0-based), or -1 for setup */
  step: number;
  /** the command that did not return */
  op: string;
  ms: number;
  /** the stuck task's kernel stack */
  stack: string;
  /** its scheduler state, e.g. "D (disk sleep)" */
  state: string;
}

export interface ConsoleObservation {
  ev: "console";
  kind: ConsoleEventKind;
  text: string;
  trace: string[];
}

export type Observation = StuckObservation | ConsoleObservation;

export interface ScenarioTrace {
  records: readonly KvRecord[];
  observations: readonly Observation[];
}
