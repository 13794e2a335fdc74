/**
 * What the oracle judges: the executor's trace records of one scenario plus what the harness saw
 * itself (a step past its watchdog with the worker's stack, kernel console events).
 */
import type { ConsoleEventKind, MemoryStack } from "../console/parse.ts";
import type { HwTraceEvent } from "../protocol/hw-trace.ts";
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

/** A ULP workload's step (guest/ulp/hil-ulp.sh) that returned: its exit code and what it reported. */
export type UlpStepObservation = {
  ev: "ulp-step";
  step: number;
  /** e.g. "connect", "io 1024 KiB" */
  action: string;
  exitCode: number;
  ms: number;
  /** its "hil-ulp key=value" reports (written-sha256, read-sha256, write-error, ...) */
  values: Record<string, string>;
  stderr?: string;
  /** what the step allows its exit to be: 0, any error, or anything */
  expect: number | "error" | "any";
};

/** RDMA objects by kind ("qp", "mr", "pd", "cm_id", ...). */
export type ObjectCounts = Record<string, number>;

/**
 * The RDMA objects held before a ULP workload's first step and after its last: as the kernel's
 * resource tracking counts them (rdma resource show), or as the device model holds them.
 */
export type UlpObjectsObservation = {
  ev: "ulp-objects";
  source: "kernel" | "device";
  before: ObjectCounts;
  after: ObjectCounts;
};

export type Observation =
  | StuckObservation
  | ConsoleObservation
  | FaultObservation
  | ConsoleCutObservation
  | UlpStepObservation
  | UlpObjectsObservation;

export interface ScenarioTrace {
  records: readonly TraceRecord[];
  observations: readonly Observation[];
  /** the command lines the executor was given (the commands rule); absent: not judged */
  commands?: readonly SentCommand[];
  /** the device's hardware trace of the scenario (absent: no device model) */
  hw?: readonly HwTraceEvent[];
}

/**
 * The kinds of object more numerous after than before. CQs are not counted: the kernel's CQ pool
 * keeps the CQs a ULP took from it until the device goes away (drivers/infiniband/core/cq.c,
 * ib_cq_pool_get and ib_cq_pool_cleanup).
 */
export function leftBehind(
  before: ObjectCounts | undefined,
  after: ObjectCounts | undefined,
): { kind: string; before: number; after: number }[] {
  if (!before || !after) return [];
  return Object.entries(after)
    .filter(([kind, n]) => kind !== "cq" && n > (before[kind] ?? 0))
    .map(([kind, n]) => ({ kind, before: before[kind] ?? 0, after: n }));
}
