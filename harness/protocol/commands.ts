/**
 * The executors' command language, TypeScript side: one command a line, `<op> key=value ...`
 * (the operations and their keys are listed in C, guest/common/commands.def, which both
 * hil_kverbs and hil-uverbs build their parsers from, and again in COMMAND_KEYS below, which
 * commandLine's types are made of). This module owns the line format and the value sets the
 * scenario compiler, the executors, the trace schema and the oracle share.
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

/** signal= of post_send: which WRs of the command ask for a completion (every n-th: a number). */
export type SignalArg = "all" | "none" | "last" | number;

/** The keys every operation that makes a QP takes besides its own (HIL_QP_KEYS). */
const QP_KEYS = {
  sq: false,
  rq: false,
  sge: false,
  inline: false,
  buf: false,
  max_wrs: false,
  sig: false,
} as const;

/**
 * The command language's operations and the keys each takes, `true` for a required one: the
 * table of guest/common/commands.def (the executors' parsers are built from it), written again
 * here so that a command line with a wrong or missing key fails to compile.
 * test/unit/command-table.test.ts parses commands.def and fails on any difference.
 */
export const COMMAND_KEYS = {
  device: { name: false, addr: false },
  pd: { name: true, rkey: false },
  cq: { name: true, depth: false, poll: false, vector: false },
  qp: { name: true, pd: true, scq: true, rcq: true, ...QP_KEYS },
  listen: { name: true, addr: true, port: true, qp: true, pd: true, scq: true, rcq: true, ...QP_KEYS },
  connect: {
    name: true,
    addr: true,
    port: true,
    pd: true,
    scq: true,
    rcq: true,
    src: false,
    timeout: false,
    stop: false,
    ...QP_KEYS,
  },
  disconnect: { qp: true },
  post_send: {
    qp: true,
    wr_id: true,
    op: false,
    count: false,
    len: false,
    batch: false,
    signal: false,
    inline: false,
    fill: false,
    imm: false,
    mr: false,
    access: false,
    bad: false,
  },
  post_recv: { qp: true, wr_id: true, count: false, len: false, batch: false, bad: false },
  poll: { cq: true, min: false, timeout: false, budget: false },
  modify: { qp: true, state: true },
  query: { qp: true },
  drain: { qp: true, which: false },
  bench: { qp: true, op: false, iters: false, depth: false, len: false, signal: false, timeout: false },
  destroy: { qp: false, cq: false, pd: false, listen: false },
  reset: {},
  clear: {},
  sleep: { ms: true },
  mark: { id: true },
} as const satisfies Record<string, Readonly<Record<string, boolean>>>;

export type CommandOp = keyof typeof COMMAND_KEYS;

/** What a key takes unless NarrowValues says more: a number or a word. */
type Value = string | number;

/** The values of the keys that take one of a few words. */
interface NarrowValues {
  pd: { rkey: "global" };
  cq: { poll: PollContext };
  qp: { sig: "all" | "req" };
  listen: { sig: "all" | "req" };
  connect: { sig: "all" | "req"; stop: "route" | "refused" };
  post_send: { op: SendOp; signal: SignalArg };
  modify: { state: QpStateName };
  drain: { which: DrainTarget };
  bench: { op: "send" | "write" };
}

type ValueOf<Op extends CommandOp, K> = Op extends keyof NarrowValues
  ? K extends keyof NarrowValues[Op]
    ? NarrowValues[Op][K]
    : Value
  : Value;
type KeysOf<Op extends CommandOp> = (typeof COMMAND_KEYS)[Op];
type RequiredKey<Op extends CommandOp> = {
  [K in keyof KeysOf<Op>]: KeysOf<Op>[K] extends true ? K : never;
}[keyof KeysOf<Op>];

/** The arguments of an operation: its required keys, and its others (undefined ones are left out). */
export type CommandArgs<Op extends CommandOp> = { [K in RequiredKey<Op>]: ValueOf<Op, K> } & {
  [K in Exclude<keyof KeysOf<Op>, RequiredKey<Op>>]?: ValueOf<Op, K> | undefined;
};

/** Keys of A the operation does not take, each typed never (an object made elsewhere gets no excess-property check). */
type NoOtherKeys<Op extends CommandOp, A> = { [K in Exclude<keyof A, keyof KeysOf<Op>>]: never };

/** `head key=value ...` (undefined values left out): a command line, or a note shown like one. */
export function keyValueLine(head: string, args: Readonly<Record<string, Value | undefined>> = {}): string {
  const parts = [head];
  for (const [k, v] of Object.entries(args)) if (v !== undefined) parts.push(`${k}=${v}`);
  return parts.join(" ");
}

/** A command line from an operation and its arguments; an operation with no required key may omit them. */
export function commandLine<Op extends CommandOp, A extends CommandArgs<Op>>(
  op: Op,
  ...args: RequiredKey<Op> extends never ? [args?: A & NoOtherKeys<Op, A>] : [args: A & NoOtherKeys<Op, A>]
): string {
  return keyValueLine(op, args[0]);
}

/** The operation a command line runs (its first word). */
export function commandOp(line: string): string {
  return line.trim().split(/\s+/, 1)[0] ?? "";
}
