/**
 * The userspace executor's trace (guest/uverbs, hil-uverbs on stdout): the in-kernel executor's
 * records (harness/protocol/trace.ts parses them) plus the few only this executor writes, for its
 * own drain (libibverbs has none, so it does what __ib_drain_sq/__ib_drain_rq do, with a
 * timeout). Until harness/protocol/trace.ts knows these kinds, parseUverbsTrace takes them out
 * before handing the rest to parseTrace; a kind that schema knows stays with it.
 */
import { z } from "zod";
import { HilError } from "../../util/errors.ts";
import { type KvRecord, kvRecordSchema, parseTrace } from "./trace.ts";

const base = {
  seq: z.number().int().nonnegative(),
  ns: z.number().nonnegative(),
  truncated: z.literal(true).optional(),
};
const int = z.number().int();
const uint = z.number().int().nonnegative();
const queue = z.enum(["sq", "rq"]);

/** The user drain posted its marker WR on a queue (after the ERR transition). */
export const drainMarkerSchema = z.strictObject({
  ...base,
  ev: z.literal("drain_marker"),
  /** the drain's call */
  call: uint,
  qp: z.string(),
  queue,
  /** "user": the user executor's drain, not the kernel's ib_drain_* */
  how: z.literal("user"),
  /** the marker's wr_id as the device saw it */
  wr_id: uint,
  /** ibv_post_send/ibv_post_recv's return: 0 or a negative errno */
  rc: int,
});

/** The marker's completion, in poll order among the cqe records. */
export const drainMarkerCqeSchema = z.strictObject({
  ...base,
  ev: z.literal("drain_marker_cqe"),
  call: uint,
  cq: z.string(),
  qp: z.string(),
  queue,
  status: uint,
  status_name: z.string(),
  opcode: uint,
  opcode_name: z.string(),
  qp_num: uint,
  vendor_err: uint,
});

/** A drain's marker did not complete within the executor's drain timeout; the run ended there. */
export const hangSchema = z.strictObject({
  ...base,
  ev: z.literal("hang"),
  call: uint,
  qp: z.string(),
  op: z.literal("drain"),
  which: z.enum(["qp", "sq", "rq"]),
  queue,
  cq: z.string(),
  waited_ms: uint,
});

export const uvRecordSchema = z.discriminatedUnion("ev", [
  drainMarkerSchema,
  drainMarkerCqeSchema,
  hangSchema,
]);
export type UvRecord = z.infer<typeof uvRecordSchema>;
export type HangRecord = z.infer<typeof hangSchema>;
export type DrainMarkerRecord = z.infer<typeof drainMarkerSchema>;
export type DrainMarkerCqeRecord = z.infer<typeof drainMarkerCqeSchema>;

/** The user-only kinds, in the order they are listed above. */
export const USER_ONLY_EVENTS: readonly string[] = uvRecordSchema.options.map((o) => o.shape.ev.value);

const kvKnows = new Set<string>(kvRecordSchema.options.map((o) => o.shape.ev.value));

export interface UverbsTrace {
  /** every record the in-kernel executor's schema knows, parsed by parseTrace */
  records: KvRecord[];
  /** the user-only records */
  user: UvRecord[];
  /** both, in seq order */
  all: (KvRecord | UvRecord)[];
}

function eventOf(line: string): string | undefined {
  try {
    const json: unknown = JSON.parse(line);
    if (json && typeof json === "object" && "ev" in json && typeof json.ev === "string") return json.ev;
  } catch {
    // parseTrace reports it
  }
  return undefined;
}

/**
 * Parses hil-uverbs output: the user-only kinds against their schema, everything else with
 * parseTrace (which also checks seq order within its share); then checks seq order over all.
 */
export function parseUverbsTrace(text: string, source = "hil-uverbs output"): UverbsTrace {
  const lines = text.split("\n");
  if (lines.at(-1) !== "")
    throw new HilError("the trace ends in the middle of a line", { where: source, detail: lines.at(-1) });
  lines.pop();
  const kvLines: string[] = [];
  const user: UvRecord[] = [];
  lines.forEach((line, i) => {
    const ev = eventOf(line);
    if (ev === undefined || kvKnows.has(ev) || !USER_ONLY_EVENTS.includes(ev)) {
      kvLines.push(line);
      return;
    }
    const r = uvRecordSchema.safeParse(JSON.parse(line));
    if (!r.success) {
      const issues = r.error.issues.map((x) => `${x.path.join(".") || "(record)"}: ${x.message}`);
      throw new HilError(`trace line ${i + 1} is not a valid record`, {
        where: source,
        detail: `${issues.join("\n")}\n${line}`,
      });
    }
    user.push(r.data);
  });
  const records = parseTrace(kvLines.map((l) => `${l}\n`).join(""), source);
  const all = [...records, ...user].sort((a, b) => a.seq - b.seq);
  for (let i = 1; i < all.length; i++) {
    const prev = all[i - 1] as KvRecord | UvRecord;
    const cur = all[i] as KvRecord | UvRecord;
    if (cur.seq === prev.seq) throw new HilError(`two records with seq ${cur.seq}`, { where: source });
  }
  return { records, user, all };
}

/** Drops an incomplete last line (a run killed from outside may leave one). */
export function wholeLines(text: string): string {
  return text.slice(0, text.lastIndexOf("\n") + 1);
}
