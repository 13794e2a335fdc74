/**
 * The device's hardware trace beside each scenario's verbs trace: the run's hw-trace file (one a
 * guest boot: hw-trace.jsonl, hw-trace-2.jsonl, ...) is cut by byte offsets taken before and after
 * the scenario into traces/<name>.hw.jsonl, and the events that explain a failure (faults fired,
 * WQEs completed in error, flushes, REFLUSH, DMA faults, QP state changes) are quoted in evidence.
 */
import { open, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { WcStatus } from "../../qemu/erdma/hw.ts";
import { type HwTraceEvent, isServerLine } from "../protocol/hw-trace.ts";

export const HW_TRACE_FILE = "hw-trace.jsonl";

/** The hardware trace of the n-th guest boot of a run (the device server truncates its file). */
export function hwTraceName(boot: number): string {
  return boot <= 1 ? HW_TRACE_FILE : `hw-trace-${boot}.jsonl`;
}

/** The hardware trace file of the n-th boot: the first as given, later ones beside it. */
export function hwTraceFileFor(first: string, boot: number): string {
  if (boot <= 1) return first;
  const name = basename(first);
  return join(
    dirname(first),
    name === "hw-trace.jsonl" ? hwTraceName(boot) : name.replace(/(\.jsonl)?$/, `-${boot}$1`),
  );
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

/** Whether a hardware trace line is the device's record of its faults being cleared. */
export function isClearLine(line: string): boolean {
  if (!line.includes('"cleared"')) return false;
  try {
    const e = JSON.parse(line) as { kind?: unknown; action?: unknown };
    return e.kind === "fault" && e.action === "cleared";
  } catch {
    return false;
  }
}

/**
 * The pause after the clear line that ends a slice when the clear leaves the device nothing to do
 * (suite/lanes.ts clearMayWakeDevice): three of the device server's 5 ms write batches
 * (qemu/device-server/line-batch.ts), for lines of the clear's own tick that a full batch split off.
 */
export const QUIET_AFTER_IDLE_CLEAR_MS = 15;

/** Bytes [from, to) of the file as text (what it has of them). */
async function readBytes(file: string, from: number, to: number): Promise<string> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(to - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    return buf.subarray(0, bytesRead).toString("utf8");
  } finally {
    await fh.close();
  }
}

/**
 * settledSize for the end of a scenario whose device faults were just cleared: the device traces
 * the clear (a fault "cleared" line, written a few ms later by its batched writer), so the pause
 * is waited for once that line is in the file (after `from`), not from before it landed, which
 * cost a second step of settledSize on every scenario. settledSize's own wait when the line does
 * not show within maxMs.
 */
export async function settledAfterClear(
  file: string,
  from: number,
  { pollMs = 5, maxMs = 1000, stepMs = 50 } = {},
): Promise<number> {
  const deadline = Date.now() + maxMs;
  let scanned = from;
  let partial = "";
  for (;;) {
    const size = await fileSize(file);
    if (size > scanned) {
      const lines = (partial + (await readBytes(file, scanned, size))).split("\n");
      scanned = size;
      partial = lines.pop() ?? "";
      if (lines.some(isClearLine)) return settledSize(file, { stepMs, maxMs });
    }
    if (Date.now() >= deadline) return settledSize(file, { stepMs, maxMs });
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * The file's size once its writer says every line it traced so far is in it (`sync`: the device
 * server's control request, qemu/device-server/control-socket.ts); undefined when it cannot say.
 * After a clear that leaves the device nothing to do, the slice ends there without a pause.
 */
export async function syncedSize(file: string, sync: () => Promise<boolean>): Promise<number | undefined> {
  return (await sync().catch(() => false)) ? fileSize(file) : undefined;
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

/** Whether an event says something about a failure: a fault fired, an error, a flush, a state. */
export function isNotable(e: HwTraceEvent, qpns?: ReadonlySet<number>): boolean {
  if (isServerLine(e)) return false;
  const onQp = (n: number) => !qpns || qpns.has(n);
  switch (e.kind) {
    case "fault":
      return e.action === "fired" || e.action === "armed";
    case "wqe":
      return e.status !== WcStatus.SUCCESS && e.status !== WcStatus.FLUSH_ERR && onQp(e.qpn);
    case "flush":
    case "reflush":
      return onQp(e.qpn);
    case "dma-fault":
      return true;
    case "state":
      return e.object === "qp" && /ERR/i.test(e.to) && onQp(e.id);
    default:
      return false;
  }
}

/** One event as an evidence line: `hw <kind> @<t>ms {fields}` (device name left out). */
export function quoteHw(e: HwTraceEvent): string {
  const { t, dev, kind, ...rest } = e;
  return `hw ${kind} @${t.toFixed(1)}ms ${JSON.stringify(rest)}`;
}

/** The notable events of a slice as evidence lines: faults, then errors and flushes, then ERR transitions; at most `max`. */
export function hwEvidence(events: readonly HwTraceEvent[], qpns?: ReadonlySet<number>, max = 8): string[] {
  const notable = events.filter((e) => isNotable(e, qpns));
  const rank = (e: HwTraceEvent) => (e.kind === "fault" ? 0 : e.kind === "state" ? 2 : 1);
  const ordered = notable
    .map((e, i) => ({ e, i }))
    .sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i)
    .map((x) => x.e);
  const lines = ordered.slice(0, max).map(quoteHw);
  if (notable.length > max) lines.push(`hw ... ${notable.length - max} more notable event(s) in the slice`);
  return lines;
}
