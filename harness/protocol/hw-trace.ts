/**
 * The device's hardware trace as the harness reads it: JSON lines, each an event of the erdma
 * model (qemu/erdma/trace-schema.ts) or of the vfio-user server beside it (marked "src":"vfio-user",
 * qemu/device-server/trace-line.ts). Strict for what a finished run left (a run directory's
 * slices): every line is an event, else one HilError naming the file and the line. Lenient for a
 * file still being written and for evidence: a line that is not an event (a torn last line, a line
 * still being written) is left out.
 */
import { readFileSync } from "node:fs";
import {
  SERVER_TRACE_SRC,
  type ServerTraceLine,
  serverTraceLineSchema,
} from "../../qemu/device-server/trace-line.ts";
import {
  type ErdmaTraceEvent,
  type ErdmaTraceEventOf,
  type ErdmaTraceKind,
  erdmaTraceEventSchema,
} from "../../qemu/erdma/trace-schema.ts";
import { HilError } from "../../util/errors.ts";

export type { ErdmaTraceEvent, ErdmaTraceEventOf, ErdmaTraceKind, ServerTraceLine };
export type HwTraceEvent = ErdmaTraceEvent | ServerTraceLine;

/** Whether an event is the vfio-user server's rather than the device's. */
export function isServerLine(e: HwTraceEvent): e is ServerTraceLine {
  return "src" in e;
}

export interface HwTraceOptions {
  /** names the trace in errors: its file */
  source?: string;
  /** leave out the lines that are not events instead of refusing the trace */
  lenient?: boolean;
}

type LineResult = { event: HwTraceEvent } | { problem: string; detail: string };

function parseLine(line: string): LineResult {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (err) {
    return { problem: "is not JSON", detail: (err as Error).message };
  }
  const fromServer =
    typeof json === "object" && json !== null && (json as { src?: unknown }).src === SERVER_TRACE_SRC;
  const checked = (fromServer ? serverTraceLineSchema : erdmaTraceEventSchema).safeParse(json);
  if (!checked.success)
    return {
      problem: `is not ${fromServer ? "a vfio-user server" : "an erdma device"} event`,
      detail: checked.error.issues.map((i) => `${i.path.join(".") || "(event)"}: ${i.message}`).join("\n"),
    };
  // The line itself, not zod's copy: the schema has no defaults or transforms, and the line keeps
  // the writer's field order (evidence quotes events as written).
  return { event: json as HwTraceEvent };
}

/** The events of a hardware trace's text. */
export function parseHwTrace(text: string, opts: HwTraceOptions = {}): HwTraceEvent[] {
  const out: HwTraceEvent[] = [];
  text.split("\n").forEach((line, i) => {
    if (line === "") return;
    const r = parseLine(line);
    if ("event" in r) out.push(r.event);
    else if (!opts.lenient)
      throw new HilError(`hardware trace line ${i + 1} ${r.problem}`, {
        ...(opts.source === undefined ? {} : { where: opts.source }),
        detail: `${r.detail}\n${line.slice(0, 200)}`,
      });
  });
  return out;
}

/**
 * The events of a trace file from byte `from` on (a line cut there is not an event). Strict unless
 * `lenient`: give it for a file the device server may still be writing.
 */
export function readHwTrace(file: string, opts: { from?: number; lenient?: boolean } = {}): HwTraceEvent[] {
  const text = readFileSync(file)
    .subarray(opts.from ?? 0)
    .toString("utf8");
  return parseHwTrace(text, { source: file, lenient: opts.lenient ?? false });
}

/** The device's events of one kind. */
export function eventsOf<K extends ErdmaTraceKind>(
  events: readonly HwTraceEvent[],
  kind: K,
): ErdmaTraceEventOf<K>[] {
  return events.filter((e): e is ErdmaTraceEventOf<K> => !isServerLine(e) && e.kind === kind);
}
