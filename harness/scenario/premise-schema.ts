/**
 * A scenario's premise: the situation it exists to create, as conditions checked on the traces of
 * every run (harness/oracle/premise.ts). A PASS claims the rules held in that situation; a run in
 * which the situation did not happen is a MISS naming the condition. Conditions on the verbs trace
 * are checked on every driver; those on the device's hardware trace where there is one (the
 * emulated erdma). `none` says why a scenario needs no premise (its situation is made by its own
 * steps, whatever the driver and device do).
 */
import { z } from "zod";
import { POST_OPS } from "../protocol/commands.ts";
import { DRIVERS, type DriverName } from "./axes.ts";

const side = z.enum(["qp", "peer"]).default("qp");
const queue = z.enum(["sq", "rq"]);
const atLeast = z.number().int().min(1).max(65536);
/** at least this many, or this many per driver (queues are counted differently per driver) */
const perDriverMin = z.union([
  atLeast,
  z
    .partialRecord(z.enum(DRIVERS), atLeast)
    .refine((m) => Object.keys(m).length > 0, { message: "a minimum per driver names at least one driver" }),
]);
export type PerDriverMin = z.infer<typeof perDriverMin>;

/** The minimum on a driver (one not named: the smallest given). */
export function minOn(m: PerDriverMin, driver: DriverName | undefined): number {
  if (typeof m === "number") return m;
  return (driver !== undefined ? m[driver] : undefined) ?? Math.min(...Object.values(m));
}

export const PREMISE_CONDITIONS = {
  /** WRs posted before the QP's ERR transition (so outstanding at it) completed with a flush */
  flushed: z.strictObject({
    on: side,
    queue,
    op: z.enum(POST_OPS).optional(),
    min: perDriverMin.default(1),
  }),
  /** post calls made while the QP was in ERR (by what the trace shows of its state) */
  posted_in_error: z.strictObject({
    on: side,
    queue,
    op: z.enum(POST_OPS).optional(),
    min: perDriverMin.default(1),
  }),
  /** WRs of the queue still outstanding (none of their completions polled) when a drain posted its marker */
  outstanding_at_drain: z.strictObject({ on: side, queue, min: perDriverMin.default(1) }),
  /** a drain or a modify to ERR called on a QP the trace shows in ERR already */
  again_in_error: z.strictObject({ on: side, call: z.enum(["drain", "modify"]) }),
  /** the QP went to ERROR by an error of its own (an error completion other than a flush, a fatal QP event, its connection terminated), not by a modify */
  error_without_modify: z.strictObject({ on: side }),
  /** a post call with more WRs than the queue holds (the capacity the driver reported at create) */
  chain_exceeds_queue: z.strictObject({ on: side, queue }),
  /**
   * the WRs outstanding at the ERR transition lie across the end of the queue's ring: the oldest
   * was among the first `capacity` WRs posted to it, the newest posted after more than
   * `capacity` + 1 (a ring of the capacity the driver reported at create, or of one slot more,
   * turned over between them)
   */
  outstanding_across_wrap: z.strictObject({ on: side, queue }),
  /** more completions polled from one CQ than it holds, `times` times over: its ring turned over */
  cq_wrapped: z.strictObject({ cq: z.enum(["send", "recv"]), times: z.number().int().min(1).max(64) }),
  /**
   * the QP was drained (or moved to ERR) without ever being connected: never (no rdma_connect) or
   * refused (its rdma_connect was refused: REJECTED, UNREACHABLE or CONNECT_ERROR)
   */
  drained_unconnected: z.strictObject({ how: z.enum(["never", "refused"]) }),
  /** completions of both QPs polled from one CQ of the QP under test */
  cq_shared_by_qps: z.strictObject({ cq: z.enum(["send", "recv"]) }),
  // ---- on the device's hardware trace
  /** the device wrote flush completions for WQEs that take at least `blocks` 32-byte blocks */
  device_flushed_blocks: z.strictObject({
    on: side,
    queue,
    blocks: z.number().int().min(2).max(8),
    min: atLeast.default(1),
  }),
  /** the device flushed WQEs of the QP (absent `on`: of any QP, a ULP's own) */
  device_flushed: z.strictObject({ on: z.enum(["qp", "peer"]).optional(), queue, min: atLeast.default(1) }),
  /** the QP was destroyed while WQEs it had been given were neither completed nor flushed */
  device_destroyed_unflushed: z.strictObject({ on: side }),
  /** the QP was destroyed while CQEs the device had written for it were still unpolled in its CQ, and the CQ was polled after */
  device_destroyed_with_unpolled_cqes: z.strictObject({ on: side }),
  /** a doorbell of the queue in ERROR while WQEs rung before it were still being flushed */
  device_posted_while_flushing: z.strictObject({ on: side, queue }),
  /** the flush of the queue met a completion of an earlier WQE still on its way to the CQ (held, or overtaken) */
  device_flush_behind_pending: z.strictObject({ on: side, queue }),
  /** one interrupt of a completion event queue came after more events than the handler takes in a run */
  device_ceq_batch: z.strictObject({ min: z.number().int().min(2).max(4096) }),
} as const;

export type PremiseKind = keyof typeof PREMISE_CONDITIONS;
export type PremiseCondition = {
  [K in PremiseKind]: { kind: K } & z.output<(typeof PREMISE_CONDITIONS)[K]>;
}[PremiseKind];

/** The conditions read on the device's hardware trace. */
export const DEVICE_CONDITIONS: readonly PremiseKind[] = [
  "device_flushed_blocks",
  "device_flushed",
  "device_destroyed_unflushed",
  "device_destroyed_with_unpolled_cqes",
  "device_posted_while_flushing",
  "device_flush_behind_pending",
  "device_ceq_batch",
];

const condition = z.unknown().transform((value, ctx): PremiseCondition => {
  const keys = value !== null && typeof value === "object" && !Array.isArray(value) ? Object.keys(value) : [];
  const kinds = keys.filter((k): k is PremiseKind => k in PREMISE_CONDITIONS);
  if (kinds.length !== 1 || keys.length !== 1) {
    ctx.addIssue({
      code: "custom",
      input: value,
      message: `a premise condition is one of ${Object.keys(PREMISE_CONDITIONS).join(", ")}${keys.length ? `, not ${keys.join(" and ")}` : ""}`,
    });
    return z.NEVER;
  }
  const kind = kinds[0] as PremiseKind;
  const r = PREMISE_CONDITIONS[kind].safeParse((value as Record<string, unknown>)[kind] ?? {});
  if (r.success) return { kind, ...r.data } as PremiseCondition;
  for (const issue of r.error.issues)
    ctx.addIssue({
      code: "custom",
      input: value,
      path: [kind, ...issue.path],
      message: issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}` : issue.message,
    });
  return z.NEVER;
});

const conditions = z.array(condition).min(1);
const none = z.strictObject({ none: z.string().trim().min(1) });
export type Premise = z.output<typeof conditions> | z.output<typeof none>;

/** A list of conditions, or `none:` with the reason; an error names the field that is wrong. */
export const premiseSchema = z.unknown().transform((value, ctx): Premise => {
  const r = Array.isArray(value) ? conditions.safeParse(value) : none.safeParse(value);
  if (r.success) return r.data;
  for (const issue of r.error.issues)
    ctx.addIssue({
      code: "custom",
      input: value,
      path: issue.path,
      message: Array.isArray(value)
        ? issue.message
        : `a premise is a list of conditions, or none: <why none is needed> (${issue.message})`,
    });
  return z.NEVER;
});

function which(on: "qp" | "peer"): string {
  return on === "peer" ? "the peer's" : "the QP's";
}
function whichQp(on: "qp" | "peer"): string {
  return on === "peer" ? "the peer QP" : "the QP";
}
function ops(op: string | undefined, n: number | string): string {
  return `${n} ${op ? `${op.toUpperCase()} ` : ""}WR${n === 1 || n === "1" ? "" : "s"}`;
}
function minText(m: PerDriverMin, driver?: DriverName): string {
  if (typeof m === "number" || driver !== undefined) return String(minOn(m, driver));
  return Object.entries(m)
    .map(([d, n]) => `${n} on ${d}`)
    .join(", ");
}

/** What the condition asks, as `hil scenarios --show` and a MISS say it. */
export function describeCondition(c: PremiseCondition, driver?: DriverName): string {
  switch (c.kind) {
    case "flushed":
      return `at least ${ops(c.op, minText(c.min, driver))} of ${which(c.on)} ${c.queue} outstanding at the ERR transition, then flushed`;
    case "posted_in_error":
      return `at least ${ops(c.op, minText(c.min, driver))} posted to ${which(c.on)} ${c.queue} while it is in ERR`;
    case "outstanding_at_drain":
      return `at least ${minText(c.min, driver)} WR(s) of ${which(c.on)} ${c.queue} outstanding when the drain posts its marker`;
    case "again_in_error":
      return `a ${c.call === "drain" ? "drain" : "modify to ERR"} of ${whichQp(c.on)} when it is in ERR already`;
    case "error_without_modify":
      return `${whichQp(c.on)} in ERROR by an error of its own (an error completion, a fatal event or its connection terminated), before any modify to ERR`;
    case "chain_exceeds_queue":
      return `one post call with more WRs than ${which(c.on)} ${c.queue} holds`;
    case "outstanding_across_wrap":
      return `WRs of ${which(c.on)} ${c.queue} outstanding at the ERR transition lying across the end of its ring`;
    case "cq_wrapped":
      return `more than ${c.times} times the ${c.cq} CQ's size in completions polled from it (its ring turned over ${c.times} time(s))`;
    case "cq_shared_by_qps":
      return `completions of both QPs polled from the ${c.cq} CQ`;
    case "drained_unconnected":
      return c.how === "never"
        ? "the QP drained or moved to ERR without rdma_connect ever being called for it (in INIT)"
        : "the QP drained or moved to ERR after its rdma_connect was refused, never established";
    case "device_flushed_blocks":
      return `the device flushed at least ${c.min} WQE(s) of ${which(c.on)} ${c.queue} taking ${c.blocks} or more 32-byte blocks`;
    case "device_flushed":
      return `the device flushed at least ${c.min} WQE(s) of ${c.on ? which(c.on) : "a QP's"} ${c.queue}`;
    case "device_destroyed_unflushed":
      return `${whichQp(c.on)} destroyed while the device still had WQEs of it to complete or flush`;
    case "device_destroyed_with_unpolled_cqes":
      return `${whichQp(c.on)} destroyed while completions the device had written for it were unpolled in its CQ, which was polled after`;
    case "device_posted_while_flushing":
      return `a doorbell of ${which(c.on)} ${c.queue} in ERROR while the device was still flushing the WQEs before it`;
    case "device_flush_behind_pending":
      return `the device's flush of ${which(c.on)} ${c.queue} met a completion of an earlier WQE still on its way to the CQ`;
    case "device_ceq_batch":
      return `a completion event queue interrupt raised after ${c.min} or more events (more than one handler run takes)`;
  }
}
