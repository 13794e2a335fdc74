/**
 * The scenario file format (fixtures/scenarios/*.yaml): one RC QP under test and its connected
 * peer, a list of steps, the oracle profiles that judge it, and where it is meant to run.
 */
import { z } from "zod";

export const ORACLE_PROFILES = ["ib", "iwarp-rdmac", "linux"] as const;
export type OracleProfile = (typeof ORACLE_PROFILES)[number];
export const DRIVERS = ["siw", "erdma"] as const;
export type DriverName = (typeof DRIVERS)[number];
export const EXECUTORS = ["kernel", "user"] as const;
export type ExecutorKind = (typeof EXECUTORS)[number];

export const QP_STATES = ["RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"] as const;
export const SEND_OPS = ["send", "send_imm", "write", "write_imm", "read", "reg_mr", "local_inv"] as const;
export type SendOp = (typeof SEND_OPS)[number];
export const FAULT_KINDS = [
  "error-wqe",
  "drop-cqe",
  "delay-cqe",
  "duplicate-cqe",
  "reorder-cqe",
  "wrong-cq",
  "lose-irq",
  "stall-queue",
] as const;

const count = z.number().int().min(1).max(4096);
const wrId = z
  .number()
  .int()
  .min(0)
  .max(2 ** 52);
const ms = z.number().int().min(1).max(600_000);
/** which QP of the pair a step acts on: the one under test or its connected peer */
const side = z.enum(["qp", "peer"]).default("qp");
const signal = z.union([z.enum(["all", "none", "last"]), z.number().int().min(1)]);

const postSend = z.strictObject({
  post_send: z.strictObject({
    on: side,
    op: z.enum(SEND_OPS).default("send"),
    count: count.default(1),
    wr_id: wrId.optional(),
    signal: signal.default("all"),
    /** WRs chained per ib_post_send call (default: all of them in one call) */
    batch: count.optional(),
    len: z.number().int().min(0).max(65536).optional(),
  }),
  timeout_ms: ms.optional(),
});
const postRecv = z.strictObject({
  post_recv: z.strictObject({
    on: side,
    count: count.default(1),
    wr_id: wrId.optional(),
    batch: count.optional(),
    len: z.number().int().min(0).max(65536).optional(),
  }),
  timeout_ms: ms.optional(),
});
const modify = z.strictObject({
  modify: z.strictObject({ on: side, state: z.enum(QP_STATES) }),
  timeout_ms: ms.optional(),
});
const drain = z.strictObject({
  drain: z.strictObject({ on: side, which: z.enum(["qp", "sq", "rq"]).default("qp") }),
  timeout_ms: ms.optional(),
});
const poll = z.strictObject({
  poll: z.strictObject({
    /** send / recv: the CQs of the QP under test (the same one when shared); peer: the peer's */
    cq: z.enum(["send", "recv", "peer"]),
    min: z.number().int().min(0).max(65536).default(0),
    wait_ms: z.number().int().min(0).max(600_000).default(1000),
  }),
  timeout_ms: ms.optional(),
});
const query = z.strictObject({
  query: z.strictObject({ on: side }),
  timeout_ms: ms.optional(),
});
const sleep = z.strictObject({
  sleep: z.number().int().min(1).max(600_000),
  timeout_ms: ms.optional(),
});
/** A device fault, kept as data: the device model is what carries it out (executors without one cannot). */
const fault = z.strictObject({
  fault: z.strictObject({
    kind: z.enum(FAULT_KINDS),
    queue: z.enum(["sq", "rq", "cq"]).optional(),
    wr_id: wrId.optional(),
    /** e.g. an IB_WC status name for error-wqe */
    status: z.string().optional(),
    ms: z.number().int().min(0).optional(),
    count: z.number().int().min(1).optional(),
  }),
  timeout_ms: ms.optional(),
});

const STEP_KINDS = {
  post_send: postSend,
  post_recv: postRecv,
  modify,
  drain,
  poll,
  query,
  sleep,
  fault,
} as const;
export type StepKind = keyof typeof STEP_KINDS;
export type Step = z.infer<(typeof STEP_KINDS)[StepKind]>;

/**
 * A step is a one-key mapping (plus timeout_ms): the key picks the schema, so an error names the
 * field that is wrong rather than "matches none of 8 kinds".
 */
export const stepSchema = z.unknown().transform((value, ctx): Step => {
  const keys =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.keys(value).filter((k) => k !== "timeout_ms")
      : [];
  const kinds = keys.filter((k): k is StepKind => k in STEP_KINDS);
  if (kinds.length !== 1) {
    ctx.addIssue({
      code: "custom",
      input: value,
      message:
        kinds.length > 1
          ? `a step has one kind, this one has ${kinds.join(" and ")}`
          : `a step is one of ${Object.keys(STEP_KINDS).join(", ")}${keys.length ? `, not ${keys.join(", ")}` : ""}`,
    });
    return z.NEVER;
  }
  const r = STEP_KINDS[kinds[0] as StepKind].safeParse(value);
  if (r.success) return r.data;
  for (const issue of r.error.issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys)
        ctx.addIssue({ code: "custom", input: value, path: [...issue.path, key], message: "unknown field" });
    } else ctx.addIssue({ code: "custom", input: value, path: issue.path, message: issue.message });
  }
  return z.NEVER;
});

const depth = z.number().int().min(1).max(4096);

export const qpSetupSchema = z.strictObject({
  type: z.literal("rc").default("rc"),
  sq: depth.default(64),
  rq: depth.default(64),
  /** shared: one CQ for both queues; separate: a send CQ and a receive CQ */
  cq: z.enum(["shared", "separate"]).default("shared"),
  cq_depth: z.number().int().min(1).max(65536).default(256),
  poll: z.enum(["direct", "softirq", "workqueue", "unbound"]).default("direct"),
  /** IB_SIGNAL_ALL_WR: every send WR is signaled whatever the post asks */
  sig_all: z.boolean().default(false),
  buf: z.number().int().min(64).max(65536).default(4096),
});
export type QpSetup = z.infer<typeof qpSetupSchema>;

const peerSchema = z.strictObject({
  sq: depth.default(64),
  rq: depth.default(256),
  poll: z.enum(["direct", "softirq", "workqueue", "unbound"]).default("softirq"),
});

const knownBug = z.strictObject({
  driver: z.enum(DRIVERS),
  /** kernel bases (debian:6.1, ...) the bug is in; absent: all */
  kernels: z.array(z.string()).optional(),
  device_profiles: z.array(z.string()).optional(),
  rules: z.array(z.number().int().min(1).max(9)).min(1),
  note: z.string(),
});

export const scenarioSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/, "lowercase letters, digits and dashes")
      .optional(),
    description: z.string().min(1),
    /** the rules of DESIGN.md this scenario is written to exercise (all rules are judged) */
    covers: z.array(z.number().int().min(1).max(9)).min(1),
    profiles: z.array(z.enum(ORACLE_PROFILES)).min(1).default(["ib", "iwarp-rdmac", "linux"]),
    drivers: z.array(z.enum(DRIVERS)).min(1).default(["siw", "erdma"]),
    /** erdma device profiles it is meant for (absent: any) */
    device_profiles: z.array(z.string()).min(1).optional(),
    executors: z.array(z.enum(EXECUTORS)).min(1).default(["kernel", "user"]),
    /** the default per-step watchdog */
    timeout_ms: ms.default(10_000),
    qp: qpSetupSchema.default(qpSetupSchema.parse({})),
    peer: peerSchema.default(peerSchema.parse({})),
    steps: z.array(stepSchema).min(1),
    known_bugs: z.array(knownBug).optional(),
  })
  .superRefine((s, ctx) => {
    s.steps.forEach((step, i) => {
      const post = "post_send" in step ? step.post_send : "post_recv" in step ? step.post_recv : undefined;
      if (post && post.count > 1024 && post.batch === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, "post_send" in step ? "post_send" : "post_recv", "count"],
          message: "more than 1024 WRs need batch (at most 1024 WRs a call)",
        });
      if (post?.batch !== undefined && post.batch > 1024)
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, "post_send" in step ? "post_send" : "post_recv", "batch"],
          message: "batch is at most 1024",
        });
      if (post?.len !== undefined && post.len > s.qp.buf)
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, "post_send" in step ? "post_send" : "post_recv", "len"],
          message: `len ${post.len} is more than the QP's buf ${s.qp.buf}`,
        });
      if ("poll" in step && step.poll.min > 0 && step.poll.wait_ms === 0)
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, "poll", "wait_ms"],
          message: "a poll for min > 0 completions needs wait_ms > 0",
        });
    });
  });

export type ScenarioSpec = z.infer<typeof scenarioSchema>;

/** A validated scenario and where it came from. */
export interface Scenario extends ScenarioSpec {
  name: string;
  file: string;
  /** the 1-based line of each step in its file */
  stepLines: number[];
}
