/**
 * The vfio-user server's own lines in an erdma device's hardware trace: its events
 * (qemu/vfio-user/trace.ts TraceEvent) as main.ts writes them beside the device's, marked
 * "src":"vfio-user" with the device's clock `t` and name `dev`, bigints as hex strings (traceLine).
 * The schema is for readers of a trace; a compile-time check below keeps it equal to TraceEvent.
 */
import { z } from "zod";
import type { TraceEvent } from "../vfio-user/trace.ts";

/** What marks the server's lines among the device's. */
export const SERVER_TRACE_SRC = "vfio-user";

const tag = { src: z.literal(SERVER_TRACE_SRC), t: z.number(), dev: z.string() };
const int = z.number().int();
const record = z.record(z.string(), z.unknown());

export const serverTraceLineSchema = z.discriminatedUnion("kind", [
  z.strictObject({ ...tag, kind: z.literal("connect") }),
  z.strictObject({ ...tag, kind: z.literal("disconnect"), reason: z.string() }),
  z.strictObject({
    ...tag,
    kind: z.enum(["recv", "send"]),
    id: int,
    command: z.string(),
    flags: int,
    size: int,
    fds: int,
    info: record.optional(),
  }),
  z.strictObject({
    ...tag,
    kind: z.literal("refused"),
    id: int,
    command: z.string(),
    errno: z.string(),
    reason: z.string(),
  }),
  z.strictObject({
    ...tag,
    kind: z.literal("dma"),
    access: z.enum(["read", "write"]),
    address: z.string().regex(/^0x[0-9a-f]+$/, "a hex string (0x...)"),
    length: int,
    path: z.string(),
  }),
  z.strictObject({ ...tag, kind: z.literal("irq"), vector: int, delivered: z.boolean() }),
  z.strictObject({ ...tag, kind: z.literal("config"), change: record }),
  z.strictObject({ ...tag, kind: z.literal("device"), event: z.string(), detail: record.optional() }),
  z.strictObject({ ...tag, kind: z.literal("note"), text: z.string() }),
]);

export type ServerTraceLine = z.infer<typeof serverTraceLineSchema>;

// ---- the schema describes what is written: TraceEvent, tagged, as JSON

/** A value as JSON.stringify with traceLine's replacer gives it back: bigints as strings. */
type AsJson<T> = T extends bigint
  ? string
  : T extends readonly unknown[]
    ? { [K in keyof T]: AsJson<T[K]> }
    : T extends object
      ? { [K in keyof T]: AsJson<T[K]> }
      : T;
type Untagged<T> = T extends unknown ? Omit<T, keyof typeof tag> : never;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type KindOf<T> = T extends { kind: infer K extends string } ? K : never;
/** The members whose kind includes K ("recv" and "send" share one). */
type ByKind<T, K> = T extends { kind: infer TK } ? (K extends TK ? T : never) : never;
type Agreement = {
  [K in KindOf<TraceEvent> | KindOf<ServerTraceLine>]: Same<
    ByKind<Untagged<ServerTraceLine>, K>,
    ByKind<AsJson<TraceEvent>, K>
  >;
};
type AllTrue<T extends Record<string, true>> = T;
/** Fails to compile when TraceEvent and the schema part ways (a field or a kind on one side only). */
export type ServerTraceLineMatchesTraceEvent = AllTrue<Agreement>;
