/**
 * The executors' command language, TypeScript side: one command a line, `<op> key=value ...`
 * (the operations and their keys are listed once in C, guest/common/commands.def, which both
 * hil_kverbs and hil-uverbs build their parsers from). This module owns the line format and the
 * value sets the scenario compiler, the executors, the trace schema and the oracle share.
 */

/** post_send's op= values: the send-queue operations a scenario may post. */
export const SEND_OPS = [
  "send",
  "send_imm",
  "write",
  "write_imm",
  "read",
  "reg_mr",
  "local_inv",
  "send_inv",
] as const;
export type SendOp = (typeof SEND_OPS)[number];

/** The operations a post record names: the send operations and recv. */
export const POST_OPS = [...SEND_OPS, "recv"] as const;
export type PostOp = (typeof POST_OPS)[number];

/** How a kernel CQ is polled (ib_alloc_cq's poll context; the user executor polls directly). */
export const POLL_CONTEXTS = ["direct", "softirq", "workqueue", "unbound"] as const;
export type PollContext = (typeof POLL_CONTEXTS)[number];

export const QP_STATES = ["RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"] as const;
export type QpStateName = (typeof QP_STATES)[number];

/** What a drain command drains: ib_drain_qp, ib_drain_sq, ib_drain_rq. */
export const DRAIN_TARGETS = ["qp", "sq", "rq"] as const;
export type DrainTarget = (typeof DRAIN_TARGETS)[number];

export type CommandArgs = Record<string, string | number | undefined>;

/** A command line from an operation and its arguments (undefined ones are left out). */
export function commandLine(op: string, args: CommandArgs = {}): string {
  const parts = [op];
  for (const [k, v] of Object.entries(args)) if (v !== undefined) parts.push(`${k}=${v}`);
  return parts.join(" ");
}

/** The operation a command line runs (its first word). */
export function commandOp(line: string): string {
  return line.trim().split(/\s+/, 1)[0] ?? "";
}
