/**
 * The scenario file format (fixtures/scenarios/*.yaml): one RC QP under test and its connected
 * peer, a list of steps, the oracle profiles that judge it, and where it is meant to run.
 */
import { z } from "zod";
import { DRAIN_TARGETS, POLL_CONTEXTS, QP_STATES, SEND_OPS } from "../protocol/commands.ts";
import { DRIVERS, type DriverName, EXECUTORS, ORACLE_PROFILES } from "./axes.ts";
import { cqCapacityProblems } from "./cq-capacity.ts";
import { faultProblems, raiseProblems, resumeProblems } from "./fault-problems.ts";
import { type KnownBug, knownBugEntry, ruleRef, ULP_RULES } from "./known-bug.ts";
import { peerlessProblems } from "./peerless.ts";
import { premiseSchema } from "./premise-schema.ts";
import { scenarioSizeProblems } from "./size-limits.ts";

export {
  DRIVERS,
  type DriverName,
  EXECUTORS,
  type ExecutorKind,
  ORACLE_PROFILES,
  type OracleProfile,
} from "./axes.ts";
export type { KnownBug };

const cqeFaults = [
  "drop-cqe",
  "delay-cqe",
  "duplicate-cqe",
  "reorder-cqe",
  "wrong-index",
  "wrong-cq",
] as const;
export const FAULT_KINDS = [
  "error-wqe",
  ...cqeFaults,
  "lose-irq",
  "stall-queue",
  "ignore-doorbell",
  "coalesce-irq",
  "resume-queue",
  "raise-irq",
] as const;
export type FaultKindName = (typeof FAULT_KINDS)[number];
/** faults on a completion: the CQE of WR wr_id (or the next one) on the queue's CQ */
export const CQE_FAULTS: readonly FaultKindName[] = cqeFaults;

const count = z.number().int().min(1).max(4096);
/**
 * How many WRs a post step posts: one number, or one per driver where their queues are counted
 * differently (erdma counts its SQ in 32-byte blocks, siw in WRs): a chain meant to fill or
 * overflow a queue is sized for each driver it runs on.
 */
const perDriverCount = z
  .partialRecord(z.enum(DRIVERS), count)
  .refine((m) => Object.keys(m).length > 0, { message: "a count per driver names at least one driver" });
const postCount = z.unknown().transform((value, ctx): number | Partial<Record<DriverName, number>> => {
  const r =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? perDriverCount.safeParse(value)
      : count.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  ctx.addIssue({
    code: "custom",
    input: value,
    ...(issue && issue.path.length > 0 ? { path: issue.path } : {}),
    message:
      typeof value === "number"
        ? (issue?.message ?? "not a count")
        : `a count (1-4096) or one per driver ({ siw: 15, erdma: 63 }): ${issue?.message ?? ""}`,
  });
  return z.NEVER;
});
export type PostCount = z.infer<typeof postCount>;

/** The largest of a count or a count per driver. */
function minOf(c: number | Partial<Record<DriverName, number>>): number {
  return typeof c === "number" ? c : Math.max(0, ...Object.values(c));
}

/** The count a post step has on a driver (a per-driver count without it: its largest). */
export function countOn(c: PostCount, driver?: DriverName): number {
  if (typeof c === "number") return c;
  return (driver !== undefined ? c[driver] : undefined) ?? Math.max(...Object.values(c));
}
/**
 * What a step's command may return: a code (0 or a negative errno), any error, or anything. A
 * command that returns otherwise is an ERROR of the run (the step did not do what it meant).
 */
const expectSchema = z.strictObject({
  rc: z.union([z.number().int().max(0), z.enum(["error", "any"])]),
});
/** What a step allows its command to return: a code, any error, or anything. */
export type ExpectedRc = z.infer<typeof expectSchema>["rc"];
const wrId = z
  .number()
  .int()
  .min(0)
  .max(2 ** 52);
const ms = z.number().int().min(1).max(600_000);
/** which QP of the pair a step acts on: the one under test or its connected peer */
const side = z.enum(["qp", "peer"]).default("qp");
/** where a post step posts: a QP of the pair, or every pair of the scenario's fanout */
const postSide = z.enum(["qp", "peer", "fanout"]).default("qp");
export type PostSide = z.infer<typeof postSide>;
const signal = z.union([z.enum(["all", "none", "last"]), z.number().int().min(1)]);

const postSend = z.strictObject({
  post_send: z.strictObject({
    on: postSide,
    op: z.enum(SEND_OPS).default("send"),
    count: postCount.default(1),
    wr_id: wrId.optional(),
    signal: signal.default("all"),
    /** WRs chained per ib_post_send call (default: all of them in one call) */
    batch: count.optional(),
    len: z.number().int().min(0).max(65536).optional(),
    /** the WR at this index of each call is invalid (too many SGEs): a partial post */
    bad: z.number().int().nonnegative().optional(),
    /** the payload goes inline in the WQE (IB_SEND_INLINE); the QP needs qp.inline of at least len */
    inline: z.boolean().optional(),
  }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
const postRecv = z.strictObject({
  post_recv: z.strictObject({
    on: postSide,
    count: postCount.default(1),
    wr_id: wrId.optional(),
    batch: count.optional(),
    len: z.number().int().min(0).max(65536).optional(),
    /** the WR at this index of each call is invalid (too many SGEs): a partial post */
    bad: z.number().int().nonnegative().optional(),
  }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
const modify = z.strictObject({
  modify: z.strictObject({ on: side, state: z.enum(QP_STATES) }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
const drain = z.strictObject({
  drain: z.strictObject({ on: side, which: z.enum(DRAIN_TARGETS).default("qp") }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
const poll = z.strictObject({
  poll: z.strictObject({
    /** send / recv: the CQs of the QP under test (the same one when shared); peer: the peer's */
    cq: z.enum(["send", "recv", "peer"]),
    /** at least this many, or this many per driver (their queues count WRs differently) */
    min: z
      .union([
        z.number().int().min(0).max(65536),
        z.partialRecord(z.enum(DRIVERS), z.number().int().min(0).max(65536)),
      ])
      .default(0),
    wait_ms: z.number().int().min(0).max(600_000).default(1000),
  }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
const query = z.strictObject({
  query: z.strictObject({ on: side }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
/** ib_destroy_qp (of a QP made over rdma_cm: rdma_destroy_qp), its WRs whatever state they are in */
const destroy = z.strictObject({
  destroy: z.strictObject({ on: side }),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
const sleepMs = z.number().int().min(1).max(600_000);
/**
 * `sleep: <ms>`, or `sleep: { ms, until: device_idle }`: until the device has done all it was
 * given (nothing to process, no timer a fault set, quiet a moment), at most ms; where the device
 * cannot tell, the whole ms
 */
const sleep = z.strictObject({
  sleep: z.union([sleepMs, z.strictObject({ ms: sleepMs, until: z.literal("device_idle") })]),
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
/** A device fault, kept as data: the device model is what carries it out (executors without one cannot). */
const fault = z.strictObject({
  fault: z.strictObject({
    kind: z.enum(FAULT_KINDS),
    /** the QP whose queue it hits (default: the QP under test) */
    on: side,
    /** sq / rq: that queue of the QP; cq: any completion of the QP (CQE faults only) */
    queue: z.enum(["sq", "rq", "cq"]).optional(),
    /** the WR it hits (the WQE for error-wqe, its completion for CQE faults); default: the next */
    wr_id: wrId.optional(),
    /** an IB_WC status name: the one error-wqe completes with, e.g. LOC_ACCESS_ERR; on a completion fault, the status of the completions it hits, e.g. WR_FLUSH_ERR */
    status: z.string().optional(),
    /** delay-cqe: how long; stall-queue: how long (default: until a resume-queue of the queue, or the scenario's end); coalesce-irq: how long the interrupt is held (default: until a raise-irq) */
    ms: z.number().int().min(1).max(60_000).optional(),
    /** wrong-index: the index the CQE reports, relative to the WR's */
    delta: z.number().int().min(-1024).max(1024).optional(),
    /** lose-irq, coalesce-irq, raise-irq: the MSI-X vector (default: any) */
    vector: z.number().int().min(0).max(64).optional(),
    /** how many consecutive events it hits (default 1) */
    count: z.number().int().min(1).max(4096).optional(),
    /** stall-queue: `error`, the stall lasts until the QP enters ERROR; delay-cqe: `flush`, the completion is written once the queue's flush reaches it (at most ms) */
    until: z.enum(["error", "flush"]).optional(),
    /** stall-queue: the queue executes this many more WQEs first, then stalls */
    after: z.number().int().min(0).max(4096).optional(),
    /**
     * a control that makes the scenario's premise certain where a device model can be told: left
     * out where none can (siw, a device of your own), where the premise is checked as it happened
     */
    optional: z.boolean().optional(),
  }),
  timeout_ms: ms.optional(),
});

/**
 * A workload: `verbs` drives one QP pair through hil_kverbs or hil-uverbs; the others run a kernel
 * upper-layer protocol unmodified over the device (guest/ulp/hil-ulp.sh): `nvme-rdma` NVMe over
 * Fabrics (nvmet-rdma target, nvme-rdma host), `rnbd` the RDMA Network Block Device over RTRS
 * (rnbd-server, rnbd-client; two guests, over IPv6: rtrs-srv listens on the IPv6 wildcard).
 */
export const WORKLOADS = ["verbs", "nvme-rdma", "rnbd"] as const;
export type Workload = (typeof WORKLOADS)[number];
/** What a ULP step does; io writes `kib` KiB of random data to the ULP's block device and reads it back. */
export const ULP_ACTIONS = ["target-up", "connect", "disconnect", "target-down"] as const;
const ulpAction = z.union([
  z.enum(ULP_ACTIONS),
  z.strictObject({
    io: z.strictObject({ kib: z.number().int().min(4).max(65_536).multipleOf(4) }),
  }),
]);
export type UlpAction = z.infer<typeof ulpAction>;
/** A step of a ULP workload, run by guest/ulp/hil-ulp.sh under the step's watchdog. */
const ulp = z.strictObject({
  ulp: ulpAction,
  timeout_ms: ms.optional(),
  expect: expectSchema.optional(),
});
/** How long a sleep step waits at most. */
export function sleepMsOf(sleep: number | { ms: number }): number {
  return typeof sleep === "number" ? sleep : sleep.ms;
}

/** The kinds of step a ULP workload may have: its own, device faults and sleeps. */
export const ULP_STEP_KINDS = ["ulp", "fault", "sleep"] as const;

const STEP_KINDS = {
  post_send: postSend,
  post_recv: postRecv,
  modify,
  drain,
  poll,
  query,
  destroy,
  sleep,
  fault,
  ulp,
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
      ? Object.keys(value).filter((k) => k !== "timeout_ms" && k !== "expect")
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
export const CONNECT_OUTCOMES = ["established", "never", "refused"] as const;

export const qpSetupSchema = z.strictObject({
  type: z.literal("rc").default("rc"),
  sq: depth.default(64),
  rq: depth.default(64),
  /** shared: one CQ for both queues; separate: a send CQ and a receive CQ */
  cq: z.enum(["shared", "separate"]).default("shared"),
  cq_depth: z.number().int().min(1).max(65536).default(256),
  poll: z.enum(POLL_CONTEXTS).default("direct"),
  /** IB_SIGNAL_ALL_WR: every send WR is signaled whatever the post asks */
  sig_all: z.boolean().default(false),
  buf: z.number().int().min(64).max(65536).default(4096),
  /** bytes of inline data a send WR may carry (max_inline_data); 0: none */
  inline: z.number().int().min(0).max(1024).default(0),
  /**
   * how far the QP's connection gets before the steps: established (with its peer); never (made
   * by rdma_create_qp after route resolution, left in INIT: no peer); refused (rdma_connect to a
   * port nobody listens on, refused: no peer). The last two are a ULP's connect error paths.
   */
  connect: z.enum(CONNECT_OUTCOMES).default("established"),
});
export type QpSetup = z.infer<typeof qpSetupSchema>;

const peerSchema = z.strictObject({
  sq: depth.default(64),
  rq: depth.default(256),
  poll: z.enum(POLL_CONTEXTS).default("softirq"),
  /** own: the peer's CQ pcq; qp: the peer's completions go to the CQ(s) of the QP under test (two QPs on one CQ) */
  cq: z.enum(["own", "qp"]).default("own"),
});

export const MAX_FANOUT_PAIRS = 16;
const fanoutDepth = z.number().int().min(1).max(256);
/**
 * More connected QP pairs beside the one under test, each QP with a CQ of its own (depth: its
 * queues' depths, so it cannot overrun): many armed CQs raising completion events at once, as a
 * ULP with a connection per CPU or per target does.
 */
export const fanoutSchema = z.strictObject({
  pairs: z.number().int().min(1).max(MAX_FANOUT_PAIRS),
  poll: z.enum(POLL_CONTEXTS).default("softirq"),
  sq: fanoutDepth.default(16),
  rq: fanoutDepth.default(16),
});
export type Fanout = z.infer<typeof fanoutSchema>;

/**
 * The rules a scenario's injected device faults are meant to break (the oracle must catch a faulty
 * device): on a driver with a device model they are XFAIL when they FAIL, and a FAIL when they hold
 * (the oracle missed the fault).
 */
export const expectFailSchema = z.strictObject({
  rules: z.array(ruleRef).min(1),
  why: z.string().trim().min(1),
});
export type ExpectFail = z.infer<typeof expectFailSchema>;

const scenarioBase = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]*$/, "lowercase letters, digits and dashes")
    .optional(),
  description: z.string().min(1),
  workload: z.enum(WORKLOADS).default("verbs"),
  /**
   * A ULP workload's guests: 1 (target and host in one guest, loopback) or 2 (the target in the
   * second guest, the host in the first, joined by the fabric network: erdma devices on one
   * emulated fabric, or siw on each guest's fabric NIC)
   */
  guests: z.union([z.literal(1), z.literal(2)]).default(1),
  /** the rules (README, What is judged) this scenario is written to exercise (all rules are judged) */
  covers: z.array(ruleRef).min(1),
  profiles: z.array(z.enum(ORACLE_PROFILES)).min(1).default(["ib", "iwarp-rdmac", "linux"]),
  drivers: z.array(z.enum(DRIVERS)).min(1).default(["siw", "erdma", "rxe"]),
  /** erdma device profiles it is meant for (absent: any) */
  device_profiles: z.array(z.string()).min(1).optional(),
  executors: z.array(z.enum(EXECUTORS)).min(1).default(["kernel", "user"]),
  /** the default per-step watchdog */
  timeout_ms: ms.default(10_000),
  qp: qpSetupSchema.default(qpSetupSchema.parse({})),
  peer: peerSchema.default(peerSchema.parse({})),
  fanout: fanoutSchema.optional(),
  steps: z.array(stepSchema).min(1),
  /** known driver bugs: a record, or the id of one in fixtures/known-bugs.yaml */
  known_bugs: z.array(knownBugEntry).min(1).optional(),
  /** the situation the scenario exists to create, checked on each run's traces (premise-schema.ts) */
  premise: premiseSchema.optional(),
  /**
   * where the scenario cannot exercise what it covers though it is meant for the driver and
   * executor (a queue the driver drains as fast as it is written): a SKIP there, with the reason
   */
  skip_on: z
    .array(
      z.strictObject({
        driver: z.enum(DRIVERS).optional(),
        executors: z.array(z.enum(EXECUTORS)).min(1).optional(),
        device_profiles: z.array(z.string().min(1)).min(1).optional(),
        why: z.string().trim().min(1),
      }),
    )
    .min(1)
    .optional(),
  expect_fail: expectFailSchema.optional(),
});

export const scenarioSchema = scenarioBase.superRefine((s, ctx) => {
  const tooBig = scenarioSizeProblems(s);
  for (const p of tooBig) ctx.addIssue({ code: "custom", path: p.path, message: p.message });
  if (tooBig.length > 0) return;
  for (const p of workloadProblems(s)) ctx.addIssue({ code: "custom", path: p.path, message: p.message });
  for (const p of peerlessProblems(s)) ctx.addIssue({ code: "custom", path: p.path, message: p.message });
  for (const p of cqCapacityProblems(s)) ctx.addIssue({ code: "custom", path: p.path, message: p.message });
  if (s.expect_fail && !s.steps.some((x) => "fault" in x))
    ctx.addIssue({
      code: "custom",
      path: ["expect_fail"],
      message: "expect_fail is for scenarios whose fault steps break rules; this one has no fault step",
    });
  s.known_bugs?.forEach((bug, i) => {
    if (!s.drivers.includes(bug.driver))
      ctx.addIssue({
        code: "custom",
        path: ["known_bugs", i, "driver"],
        message: `the scenario does not run on ${bug.driver} (drivers: ${s.drivers.join(", ")})`,
      });
    const off = bug.executors?.find((e) => !s.executors.includes(e));
    if (off)
      ctx.addIssue({
        code: "custom",
        path: ["known_bugs", i, "executors"],
        message: `the scenario does not run on the ${off} executor (executors: ${s.executors.join(", ")})`,
      });
  });
  for (const p of [...resumeProblems(s.steps), ...raiseProblems(s.steps)])
    ctx.addIssue({ code: "custom", path: ["steps", p.index, "fault", "kind"], message: p.message });
  s.steps.forEach((step, i) => {
    if ("fault" in step)
      for (const p of faultProblems(step.fault))
        ctx.addIssue({ code: "custom", path: ["steps", i, "fault", p.field], message: p.message });
    const post = "post_send" in step ? step.post_send : "post_recv" in step ? step.post_recv : undefined;
    const key = "post_send" in step ? "post_send" : "post_recv";
    if (post && typeof post.count !== "number")
      for (const d of s.drivers)
        if (post.count[d] === undefined)
          ctx.addIssue({
            code: "custom",
            path: ["steps", i, key, "count"],
            message: `no count for ${d}, a driver the scenario runs on (drivers: ${s.drivers.join(", ")})`,
          });
    if (post?.on === "fanout") {
      const queue = key === "post_send" ? "sq" : "rq";
      if (!s.fanout)
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, key, "on"],
          message: "on: fanout posts on the scenario's fanout pairs; this scenario has no fanout",
        });
      else if (countOn(post.count) > s.fanout[queue])
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, key, "count"],
          message: `${countOn(post.count)} WRs on each fanout pair's ${queue}, which holds ${s.fanout[queue]} (fanout.${queue})`,
        });
    }
    const most = post ? countOn(post.count) : 0;
    if (post && most > 1024 && post.batch === undefined)
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
    if ("post_send" in step && step.post_send.inline && (step.post_send.len ?? 64) > s.qp.inline)
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "post_send", "inline"],
        message: `an inline post of ${step.post_send.len ?? 64} bytes needs qp.inline of at least that (it is ${s.qp.inline})`,
      });
    if (post?.len !== undefined && post.len > s.qp.buf)
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "post_send" in step ? "post_send" : "post_recv", "len"],
        message: `len ${post.len} is more than the QP's buf ${s.qp.buf}`,
      });
    const fewest = post
      ? typeof post.count === "number"
        ? post.count
        : Math.min(...Object.values(post.count))
      : 0;
    if (post?.bad !== undefined && post.bad >= (post.batch ?? fewest))
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "post_send" in step ? "post_send" : "post_recv", "bad"],
        message: `bad ${post.bad} is past the end of each call (${post.batch ?? fewest} WRs a call): no WR would be invalid`,
      });
    // (a sleep past its watchdog stays allowed: it is how the harness's own tests provoke one)
    const waits = "poll" in step ? step.poll.wait_ms : undefined;
    if (waits !== undefined && step.timeout_ms !== undefined && step.timeout_ms <= waits)
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "timeout_ms"],
        message: `the step's watchdog (${step.timeout_ms} ms) ends it before its own wait (${waits} ms): it would always be a hang`,
      });
    if ("poll" in step && minOf(step.poll.min) > 0 && step.poll.wait_ms === 0)
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "poll", "wait_ms"],
        message: "a poll for min > 0 completions needs wait_ms > 0",
      });
  });
});

export type ScenarioSpec = z.infer<typeof scenarioSchema>;

/** A ULP workload has ULP, fault and sleep steps and covers ULP rules; a verbs one has no ULP step. */
function workloadProblems(s: z.infer<typeof scenarioBase>): { path: (string | number)[]; message: string }[] {
  const out: { path: (string | number)[]; message: string }[] = [];
  const ulp = s.workload !== "verbs";
  s.steps.forEach((step, i) => {
    const kind = Object.keys(step).find((k) => k !== "timeout_ms" && k !== "expect") ?? "";
    if (ulp && !(ULP_STEP_KINDS as readonly string[]).includes(kind))
      out.push({
        path: ["steps", i, kind],
        message: `the ${s.workload} workload has ${ULP_STEP_KINDS.join(", ")} steps, not ${kind} (verbs steps are for workload: verbs)`,
      });
    if (ulp && "fault" in step && step.fault.wr_id !== undefined)
      out.push({
        path: ["steps", i, "fault", "wr_id"],
        message: `the ${s.workload} workload's WRs are the ULP's own: a fault hits the next matching event on any QP (no wr_id)`,
      });
    if (!ulp && kind === "ulp")
      out.push({
        path: ["steps", i, kind],
        message: "a ulp step needs a ULP workload (workload: nvme-rdma or rnbd)",
      });
  });
  if (s.guests === 2 && !ulp)
    out.push({
      path: ["guests"],
      message: "two guests are for a ULP workload (workload: nvme-rdma or rnbd)",
    });
  if (s.workload === "rnbd" && s.guests !== 2)
    out.push({
      path: ["guests"],
      message:
        "rnbd needs two guests (guests: 2): rtrs-srv listens on the IPv6 wildcard, and siw binds a wildcard listen to its netdev, which a connection from the same guest does not arrive on",
    });
  s.covers.forEach((rule, i) => {
    const ulpRule = (ULP_RULES as readonly string[]).includes(String(rule));
    if (ulp && typeof rule === "number")
      out.push({
        path: ["covers", i],
        message: `rule ${rule} is judged on a verbs trace; the ${s.workload} workload covers ${ULP_RULES.join(", ")}, hw-protocol, hang, console`,
      });
    if (!ulp && ulpRule)
      out.push({
        path: ["covers", i],
        message: `${rule} is a ULP workload's rule (workload: nvme-rdma or rnbd)`,
      });
  });
  return out;
}
export type FaultStep = Extract<Step, { fault: unknown }>["fault"];

/** A validated scenario and where it came from. */
export interface Scenario extends ScenarioSpec {
  name: string;
  file: string;
  /** the 1-based line of each step in its file */
  stepLines: number[];
}
