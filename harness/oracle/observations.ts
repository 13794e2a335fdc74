/**
 * What the oracle judges: the executor's trace records of one scenario plus what the harness saw
 * itself (a step past its watchdog with the worker's stack, kernel console events).
 */
import type { ConsoleEventKind, MemoryStack } from "../console/parse.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { WrRef } from "./rule.ts";
import type { SentCommand } from "./run-commands.ts";

export type StuckObservation = {
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
};

export type ConsoleObservation = {
  ev: "console";
  kind: ConsoleEventKind;
  text: string;
  trace: string[];
  /** a KASAN or KFENCE report's allocation and free stacks */
  memoryStacks?: MemoryStack[];
};

/** A device fault the suite armed at a step (the erdma model's fault API). */
export type FaultObservation = {
  ev: "fault";
  step: number;
  kind: string;
  /** the FaultSpec sent to the device */
  spec: Record<string, unknown>;
  /** the WR it hits, when it hits one */
  wr?: WrRef;
};

/** The scenario's console slice could not be closed by its barrier mark: its end is uncertain. */
export type ConsoleCutObservation = {
  ev: "console-cut";
  reason: string;
};

export type Observation = StuckObservation | ConsoleObservation | FaultObservation | ConsoleCutObservation;

export interface ScenarioTrace {
  records: readonly TraceRecord[];
  observations: readonly Observation[];
  /** the command lines the executor was given (the commands rule); absent: not judged */
  commands?: readonly SentCommand[];
}
