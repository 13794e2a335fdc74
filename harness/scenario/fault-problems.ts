/** What a scenario's fault step must say for its kind, and what it may not (scenario/schema.ts checks each). */
import { CQE_FAULTS, type FaultStep } from "./schema.ts";

type Step = { fault: FaultStep } | object;

/** What a fault step must say for its kind (the file's error, whatever the driver). */
export function faultProblems(f: FaultStep): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  const needs = (field: keyof FaultStep, why: string) => {
    if (f[field] === undefined) out.push({ field: "kind", message: `${f.kind} needs ${field} (${why})` });
  };
  const refuses = (field: keyof FaultStep) => {
    if (f[field] !== undefined) out.push({ field, message: `${f.kind} takes no ${field}` });
  };
  if (f.kind === "error-wqe") needs("status", "an IB_WC status name");
  // on a completion fault, status picks the completions it hits (WR_FLUSH_ERR: flush completions)
  else if (!CQE_FAULTS.includes(f.kind)) refuses("status");
  if (f.kind === "delay-cqe") needs("ms", "how long the completion is held");
  else if (f.kind !== "stall-queue" && f.kind !== "coalesce-irq") refuses("ms");
  if (f.kind === "wrong-index") needs("delta", "the index offset the CQE reports");
  else refuses("delta");
  const irq = f.kind === "lose-irq" || f.kind === "coalesce-irq" || f.kind === "raise-irq";
  if (!irq) refuses("vector");
  if (irq) {
    refuses("queue");
    refuses("wr_id");
  }
  if (f.kind !== "stall-queue") refuses("after");
  if (f.kind === "stall-queue") {
    if (f.until === "flush")
      out.push({
        field: "until",
        message: "a stall lasts ms or until ERROR (until: error), not until flush",
      });
    else if (f.until !== undefined && f.ms !== undefined)
      out.push({ field: "until", message: "a stall lasts ms or until ERROR, not both" });
  } else if (f.kind === "delay-cqe") {
    if (f.until === "error")
      out.push({
        field: "until",
        message:
          "a delayed completion waits ms or until its queue's flush reaches it (until: flush), not until ERROR",
      });
  } else refuses("until");
  if (f.kind === "stall-queue" || f.kind === "ignore-doorbell" || f.kind === "resume-queue") {
    needs("queue", "sq or rq");
    refuses("wr_id");
  }
  if (f.kind === "resume-queue" || f.kind === "raise-irq") refuses("count");
  if (f.queue === "cq" && !CQE_FAULTS.includes(f.kind))
    out.push({ field: "queue", message: `queue cq is for completion faults, not ${f.kind}` });
  if (f.kind === "error-wqe" && f.queue === undefined) needs("queue", "sq or rq");
  return out;
}

/**
 * Each resume-queue ends a stall-queue of the same QP and queue at an earlier step; one with no
 * such stall before it is the file's error (it would resume nothing), and so is a resume-queue
 * that is not optional when that stall is (where the stall is left out, the resume would be armed alone).
 */
export function resumeProblems(steps: readonly Step[]): { index: number; message: string }[] {
  const out: { index: number; message: string }[] = [];
  /** per QP and queue stalled so far: whether its last stall is optional */
  const stalls = new Map<string, boolean>();
  steps.forEach((step, index) => {
    if (!("fault" in step)) return;
    const f = step.fault;
    const key = `${f.on} ${f.queue}`;
    if (f.kind === "stall-queue") stalls.set(key, f.optional === true);
    if (f.kind !== "resume-queue" || f.queue === undefined) return;
    const optionalStall = stalls.get(key);
    if (optionalStall === undefined)
      out.push({
        index,
        message: `resume-queue ends a stall: no stall-queue of the ${f.on === "peer" ? "peer's" : "QP's"} ${f.queue} comes before it`,
      });
    else if (optionalStall && f.optional !== true)
      out.push({
        index,
        message:
          "the stall it ends is optional (left out where no fault can be armed): so is its resume-queue (optional: true)",
      });
  });
  return out;
}

/**
 * A coalesce-irq holds its interrupt for `ms`, or until a raise-irq at a later step; a raise-irq
 * needs a coalesce-irq without `ms` before it (optional when that one is).
 */
export function raiseProblems(steps: readonly Step[]): { index: number; message: string }[] {
  const out: { index: number; message: string }[] = [];
  const faults = steps.flatMap((step, index) => ("fault" in step ? [{ f: step.fault, index }] : []));
  for (const { f, index } of faults) {
    if (
      f.kind === "coalesce-irq" &&
      f.ms === undefined &&
      !faults.some((x) => x.index > index && x.f.kind === "raise-irq")
    )
      out.push({
        index,
        message: "coalesce-irq needs ms (how long the interrupt is held), or a raise-irq at a later step",
      });
    if (f.kind !== "raise-irq") continue;
    const held = faults
      .filter((x) => x.index < index && x.f.kind === "coalesce-irq" && x.f.ms === undefined)
      .at(-1);
    if (!held)
      out.push({
        index,
        message: "raise-irq raises what a coalesce-irq without ms holds: none comes before it",
      });
    else if (held.f.optional === true && f.optional !== true)
      out.push({
        index,
        message:
          "the hold it ends is optional (left out where no fault can be armed): so is its raise-irq (optional: true)",
      });
  }
  return out;
}
