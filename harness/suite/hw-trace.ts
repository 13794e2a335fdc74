/**
 * The device's hardware trace beside each scenario's verbs trace: the run's hw-trace file (one a
 * guest boot: hw-trace.jsonl, hw-trace-2.jsonl, ...) is cut by byte offsets taken before and after
 * the scenario into traces/<name>.hw.jsonl, and the events that explain a failure (faults fired,
 * WQEs completed in error, flushes, REFLUSH, DMA faults, QP state changes) are quoted in evidence.
 */
import { open, stat, writeFile } from "node:fs/promises";

export const HW_TRACE_FILE = "hw-trace.jsonl";

/** The hardware trace of the n-th guest boot of a run (the device server truncates its file). */
export function hwTraceName(boot: number): string {
  return boot <= 1 ? HW_TRACE_FILE : `hw-trace-${boot}.jsonl`;
}

export async function fileSize(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

/** The file's size once the writer (the device server's buffered stream) has paused. */
export async function settledSize(file: string, { stepMs = 50, maxMs = 1000 } = {}): Promise<number> {
  let size = await fileSize(file);
  for (let waited = 0; waited < maxMs; waited += stepMs) {
    await new Promise((r) => setTimeout(r, stepMs));
    const now = await fileSize(file);
    if (now === size) return size;
    size = now;
  }
  return size;
}

/** Bytes [from, to) of the file, as whole lines: a partial first or last line is left out. */
export async function readSlice(file: string, from: number, to: number): Promise<string> {
  if (to <= from) return "";
  const fh = await open(file, "r");
  try {
    const start = Math.max(0, from - 1);
    const buf = Buffer.alloc(to - start);
    const { bytesRead } = await fh.read(buf, 0, buf.length, start);
    let text = buf.subarray(0, bytesRead).toString("utf8");
    if (from > 0) {
      // the byte before `from` tells whether `from` starts a line
      const nl = text.indexOf("\n");
      text = nl < 0 ? "" : text.slice(nl + 1);
    }
    return text.slice(0, text.lastIndexOf("\n") + 1);
  } finally {
    await fh.close();
  }
}

/** Writes the slice to `dest`; returns its text. */
export async function writeHwSlice(file: string, from: number, to: number, dest: string): Promise<string> {
  const text = await readSlice(file, from, to);
  await writeFile(dest, text);
  return text;
}

export type HwEvent = Record<string, unknown> & { kind?: unknown; t?: unknown };

/** The JSON lines of a slice (a line that is not JSON is left out: the trace is evidence, not input). */
export function parseHwEvents(text: string): HwEvent[] {
  const out: HwEvent[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    try {
      const v: unknown = JSON.parse(line);
      if (v && typeof v === "object" && !Array.isArray(v)) out.push(v as HwEvent);
    } catch {
      // a torn line
    }
  }
  return out;
}

/** erdma_wc_status: 0 success, 15 flush (erdma_hw.h) */
const WC_SUCCESS = 0;
const WC_FLUSH = 15;

/** Whether an event says something about a failure: a fault fired, an error, a flush, a state. */
export function isNotable(e: HwEvent, qpns?: ReadonlySet<number>): boolean {
  const onQp = (n: unknown) => !qpns || (typeof n === "number" && qpns.has(n));
  switch (e.kind) {
    case "fault":
      return e.action === "fired" || e.action === "armed";
    case "wqe":
      return typeof e.status === "number" && e.status !== WC_SUCCESS && e.status !== WC_FLUSH && onQp(e.qpn);
    case "flush":
    case "reflush":
      return onQp(e.qpn);
    case "dma-fault":
      return true;
    case "state":
      return e.object === "qp" && typeof e.to === "string" && /ERR/i.test(e.to) && onQp(e.id);
    default:
      return false;
  }
}

/** One event as an evidence line: `hw <kind> {fields}` (time and device left out). */
export function quoteHw(e: HwEvent): string {
  const { t, dev, kind, ...rest } = e;
  const ms = typeof t === "number" ? ` @${t.toFixed(1)}ms` : "";
  return `hw ${String(kind)}${ms} ${JSON.stringify(rest)}`;
}

/** The notable events of a slice as evidence lines: faults, then errors and flushes, then ERR transitions; at most `max`. */
export function hwEvidence(events: readonly HwEvent[], qpns?: ReadonlySet<number>, max = 8): string[] {
  const notable = events.filter((e) => isNotable(e, qpns));
  const rank = (e: HwEvent) => (e.kind === "fault" ? 0 : e.kind === "state" ? 2 : 1);
  const ordered = notable
    .map((e, i) => ({ e, i }))
    .sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i)
    .map((x) => x.e);
  const lines = ordered.slice(0, max).map(quoteHw);
  if (notable.length > max) lines.push(`hw ... ${notable.length - max} more notable event(s) in the slice`);
  return lines;
}
