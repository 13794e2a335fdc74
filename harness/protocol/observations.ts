/**
 * What the harness saw of a scenario besides the executor's trace (a step past its watchdog with
 * the worker's stack, kernel console events, faults armed, a ULP workload's steps and objects):
 * the executors and the suite write these, the oracle judges them.
 */
import type { ConsoleEventKind, MemoryStack } from "../console/parse.ts";

/**
 * A work request a problem is about: the QP's name, its queue and its wr_id; `post` is the index in
 * the trace of the record that posted it (its post, or a drain's drain_marker), which tells two
 * WRs with the same wr_id apart.
 */
export type WrRef = { qp: string; queue: "sq" | "rq"; wrId: number; post?: number };

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
  /**
   * told before its watchdog ran out (harness/suite/early-hang.ts): why the hang was certain then,
   * e.g. "the device was idle for 520 ms with nothing in flight"
   */
  declared?: string;
  /**
   * TCP connections of the guests holding bytes nobody read when the step was found stuck
   * (harness/executor/tcp-unread.ts): on iWARP, a message the RDMA layer never took from its socket
   */
  unread?: string[];
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
