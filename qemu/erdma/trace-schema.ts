/**
 * The hardware trace's erdma events as JSON: one per register access, doorbell, command, queue
 * element written, interrupt, state change and fault. 64-bit values are hex strings. The schema is
 * for readers of a trace; the device writes plain objects of the type derived from it (trace.ts),
 * so the type is written once and writing costs nothing.
 */
import { z } from "zod";

export const DOORBELLS = ["cmdq-sq", "cmdq-cq", "aeq", "ceq", "sq", "rq", "cq"] as const;
export type Doorbell = (typeof DOORBELLS)[number];

const base = {
  /** ms on the device server's clock */
  t: z.number(),
  /** the device's name (--name of the device server) */
  dev: z.string(),
};
const int = z.number().int();
const hex = z.string().regex(/^0x[0-9a-f]+$/, "a hex string (0x...)");
const queue = z.enum(["sq", "rq"]);
const record = z.record(z.string(), z.unknown());

/** The object a refused command was refused for (status.ts CmdObject). */
const cmdObject = z.strictObject({
  kind: z.enum(["qp", "cq", "eq", "mr", "ah", "gid", "db"]),
  id: int,
});

/**
 * The device's view of the ring a doorbell is for, as the doorbell found it: its depth and the
 * index the doorbell is judged against. An SQ/RQ doorbell: the device's consumer index (the next
 * WQE it will take; SQ in 32-byte WQEBBs, RQ in RQEs). A CQ doorbell: the producer index (the CQEs
 * written so far). Absent when the doorbell names no queue the device has.
 */
const doorbellRing = z.strictObject({ depth: int, ci: int.optional(), pi: int.optional() });

const register = { ...base, offset: int, size: int, name: z.string(), value: hex };

export const erdmaTraceEventSchema = z.discriminatedUnion("kind", [
  z.strictObject({ ...register, kind: z.literal("reg-read") }),
  z.strictObject({ ...register, kind: z.literal("reg-write") }),
  z.strictObject({
    ...base,
    kind: z.literal("doorbell"),
    db: z.enum(DOORBELLS),
    value: hex,
    id: int.optional(),
    detail: record.optional(),
    ring: doorbellRing.optional(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal("cmd"),
    opcode: int,
    submod: int,
    name: z.string(),
    cookie: int,
    sqeIdx: int,
    status: int,
    statusName: z.string(),
    reason: z.string().optional(),
    /** a refused command: the object it was refused for */
    object: cmdObject.optional(),
    detail: record.optional(),
    resp: z.tuple([hex, hex]).optional(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal("state"),
    object: z.enum(["device", "qp", "cq", "eq", "mr", "cmdq"]),
    id: int,
    from: z.string(),
    to: z.string(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal("cqe"),
    cq: z.union([int, z.literal("cmdq")]),
    index: int,
    owner: int,
    qpn: int,
    /** erdma_wc_status (hw.ts WcStatus) */
    syndrome: int,
    opcode: int,
    /** the work queue and the WQE index (qe_idx) the CQE reports (data CQEs) */
    queue: queue.optional(),
    wqe: int.optional(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal("eqe"),
    eq: z.union([int, z.literal("aeq")]),
    index: int,
    owner: int,
    detail: record,
  }),
  z.strictObject({
    ...base,
    kind: z.literal("irq"),
    vector: int,
    delivered: z.boolean(),
    source: z.string(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal("dma-fault"),
    address: hex,
    length: int,
    access: z.enum(["read", "write"]),
    context: z.string(),
    reason: z.string(),
  }),
  z.strictObject({ ...base, kind: z.literal("reflush"), qpn: int, sqPi: int, rqPi: int, mode: z.string() }),
  z.strictObject({
    ...base,
    kind: z.literal("wqe"),
    qpn: int,
    queue,
    index: int,
    opcode: int,
    op: z.string(),
    /** the completion status (erdma_wc_status, hw.ts WcStatus) */
    status: int,
    length: int.optional(),
    signaled: z.boolean().optional(),
    peer: z.string().optional(),
    reason: z.string().optional(),
    /** a REG_MR's registration: the pages it was given, the page size the device walks them in */
    mr: z
      .strictObject({
        stag: z.string(),
        va: z.string(),
        length: int,
        pages: int,
        pageSize: int,
        mtt: z.enum(["inline", "table"]),
      })
      .optional(),
  }),
  z.strictObject({
    ...base,
    kind: z.literal("flush"),
    qpn: int,
    queue,
    from: int,
    to: int,
    count: int,
    /** what bounded the flush: the producer index, the index at the error, or REFLUSH's */
    limit: z.enum(["pi", "error", "reflush"]),
    /** the index of each WQE flushed: each is owed one flush completion */
    wqes: z.array(int).optional(),
    /** the 32-byte blocks each flushed WQE takes (send queue; a receive WQE is one) */
    blocks: z.array(int).optional(),
    /**
     * flush completions written while completions of earlier WQEs of the queue were still on their
     * way to the CQ (they overtook them), and the queue engine's signal that granted them
     */
    overtook: z.strictObject({ wqes: z.array(int), pending: z.array(int), origin: z.string() }).optional(),
    /** WQEs the queue engine stepped over without a flush completion, and its signal that withheld it */
    skipped: z.strictObject({ wqes: z.array(int), origin: z.string() }).optional(),
  }),
  z.strictObject({ ...base, kind: z.literal("wait"), qpn: int, queue, index: int, reason: z.string() }),
  z.strictObject({
    ...base,
    kind: z.literal("fault"),
    action: z.enum(["armed", "fired", "cleared"]),
    id: int.optional(),
    fault: record.optional(),
    context: record.optional(),
  }),
  z.strictObject({ ...base, kind: z.literal("warn"), message: z.string(), detail: record.optional() }),
  z.strictObject({
    ...base,
    kind: z.literal("internal-error"),
    message: z.string(),
    stack: z.string().optional(),
  }),
]);

export type ErdmaTraceEvent = z.infer<typeof erdmaTraceEventSchema>;
export type DoorbellRing = z.infer<typeof doorbellRing>;
export type ErdmaTraceKind = ErdmaTraceEvent["kind"];
export type ErdmaTraceEventOf<K extends ErdmaTraceKind> = Extract<ErdmaTraceEvent, { kind: K }>;
