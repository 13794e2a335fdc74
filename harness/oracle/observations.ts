/**
 * What the oracle judges: the executor's trace records of one scenario plus what the harness saw
 * itself (a step past its watchdog with the worker's stack, kernel console events).
 */
import type { ConsoleEventKind } from "../console/parse.ts";
import type { KvRecord } from "../protocol/trace.ts";

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

/** The user executor's drain posted its marker (libibverbs has no ib_drain_*: it does what it does). */
export interface MarkerObservation {
  ev: "marker";
  /** the drain's call */
  call: number;
  qp: string;
  queue: "sq" | "rq";
  wr_id: number;
  /** the post's return: 0 or a negative errno */
  rc: number;
}

/** A device fault the suite armed at a step (the erdma model's fault API). */
export interface FaultObservation {
  ev: "fault";
  step: number;
  kind: string;
  /** the FaultSpec sent to the device */
  spec: Record<string, unknown>;
}

export type Observation = StuckObservation | ConsoleObservation | MarkerObservation | FaultObservation;

export interface ScenarioTrace {
  records: readonly KvRecord[];
  observations: readonly Observation[];
}
