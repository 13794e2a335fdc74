/**
 * Runs hil-uverbs (guest/uverbs) in a running guest over SSH: the command lines go to its stdin,
 * its stdout is the trace. A run is one process, so every object a scenario needs lives in one
 * run. runUverbs writes all lines at once; runUverbsSegments writes them in segments to the
 * streaming program (-s) and, between two segments, waits until every command sent so far is
 * done, so the caller can act on the device (arm a fault) with the trace so far. Two watchdogs: the program's own drain timeout (-w) turns a drain that never completes
 * into a "hang" record; the host-side timeout here catches anything else stuck (a verbs call
 * that blocks in the kernel): it collects the process's kernel stack and state, kills it, and
 * returns what it wrote until then.
 */
import { randomBytes } from "node:crypto";
import type { ExecOptions, ExecResult, ExecStream, ExecStreamOptions } from "../../qemu/launch/ssh.ts";
import { shellQuote, waitForStdout } from "../../qemu/launch/ssh.ts";
import { HilError } from "../../util/errors.ts";
import { guestToolPath } from "../image/guest-tools.ts";
import {
  type DoneRecord,
  type HangRecord,
  parseTrace,
  recordsOf,
  type TraceRecord,
  wholeLines,
} from "../protocol/trace.ts";

export const UVERBS_BINARY = "hil-uverbs";

/** hil-uverbs' exit statuses (guest/uverbs/main.c). */
export const UVERBS_EXIT = { ok: 0, commandFailed: 1, rejected: 2, hang: 3 } as const;

/** What the driver needs of a guest. */
export interface UverbsShell {
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
}

/** ... and to run input in segments: a command whose stdin and stdout are used while it runs. */
export interface UverbsStreamShell extends UverbsShell {
  execStream(command: string, opts?: ExecStreamOptions): Promise<ExecStream>;
}

export interface UverbsRunOptions {
  /** the host-side limit for the whole run (default 60 s) */
  timeoutMs?: number;
  /** the program's drain timeout, -w (default 10 s) */
  drainTimeoutMs?: number;
  /** throw when the input is rejected, a command fails, a drain hangs or the run is killed (default true) */
  check?: boolean;
}

/** The evidence of a run the host-side timeout ended. */
export interface UverbsKilled {
  pid: number;
  afterMs: number;
  /** /proc/<pid>/stack when it was killed */
  stack: string;
  /** the State: line of /proc/<pid>/status, e.g. "D (disk sleep)" */
  state: string;
  wchan: string;
}

export interface UverbsRun {
  /** every record it wrote, in order */
  records: TraceRecord[];
  done: DoneRecord[];
  exitCode: number;
  stderr: string;
  /** a drain whose marker did not complete in drainTimeoutMs */
  hang?: HangRecord;
  killed?: UverbsKilled;
  /** a segmented run whose callback threw: no input was sent after that segment */
  interrupted?: { segment: number; error: string };
}

/** Where a segmented run stands when its callback is called. */
export interface UverbsPause {
  /** the segment whose commands are all done (0-based); the next is sent when the callback returns */
  segment: number;
  /** the trace so far */
  trace: { records: TraceRecord[] };
}

const SAFE_LINE = /^[\x20-\x7e\t]*$/;

/**
 * The guest command: an inner shell writes its pid to `pidFile` and becomes hil-uverbs (so the
 * host can find and kill it); the outer one removes the pid file whatever happened.
 */
export function uverbsCommand(pidFile: string, drainTimeoutMs: number, stream = false): string {
  const inner = `echo $$ > "$0" && exec ${guestToolPath(UVERBS_BINARY)} -w ${Math.ceil(drainTimeoutMs)}${stream ? " -s" : ""}`;
  return `sh -c ${shellQuote(inner)} ${shellQuote(pidFile)}; rc=$?; rm -f ${shellQuote(pidFile)}; exit $rc`;
}

async function evidence(
  guest: UverbsShell,
  pidFile: string,
): Promise<Omit<UverbsKilled, "afterMs"> | undefined> {
  const script = [
    `pid=$(cat ${shellQuote(pidFile)} 2>/dev/null) || exit 3`,
    `echo "pid $pid"`,
    `echo "state $(grep '^State:' /proc/$pid/status 2>/dev/null | cut -f2-)"`,
    `echo "wchan $(cat /proc/$pid/wchan 2>/dev/null)"`,
    "echo stack",
    "cat /proc/$pid/stack 2>&1",
    "kill -KILL $pid",
  ].join("; ");
  const r = await guest.exec(script, { timeoutMs: 30_000 });
  if (r.exitCode === 3) return undefined;
  const [head, stack = ""] = r.stdout.split(/^stack\n/m);
  const field = (k: string) => (head ?? "").match(new RegExp(`^${k} (.*)$`, "m"))?.[1]?.trim() ?? "";
  return { pid: Number(field("pid")), state: field("state"), wchan: field("wchan"), stack: stack.trim() };
}

function checkRun(run: UverbsRun): void {
  if (run.interrupted) {
    throw new HilError(
      `hil-uverbs: the input stopped after segment ${run.interrupted.segment + 1}: ${run.interrupted.error}`,
    );
  }
  if (run.killed) {
    throw new HilError(
      `hil-uverbs did not finish in ${run.killed.afterMs} ms and was killed (pid ${run.killed.pid}, ${run.killed.state})`,
      { detail: run.killed.stack },
    );
  }
  if (run.hang) {
    throw new HilError(
      `hil-uverbs: drain ${run.hang.which} of ${run.hang.qp} hung: the ${run.hang.queue} marker did not complete in ${run.hang.waited_ms} ms`,
    );
  }
  if (run.exitCode === UVERBS_EXIT.rejected) {
    const rejects = recordsOf(run.records, "reject");
    throw new HilError("hil-uverbs refused the input", {
      detail: rejects.length ? rejects.map((x) => x.why).join("\n") : run.stderr.trim(),
    });
  }
  const failed = run.done.filter((d) => d.rc !== 0);
  if (failed.length)
    throw new HilError(`hil-uverbs: ${failed.length} command(s) failed`, {
      detail: failed.map((d) => `#${d.id} ${d.op}: rc ${d.rc}${d.err ? ` (${d.err})` : ""}`).join("\n"),
    });
  if (run.exitCode !== UVERBS_EXIT.ok)
    throw new HilError(`hil-uverbs exited with status ${run.exitCode}`, { detail: run.stderr.trim() });
}

function checkLines(lines: readonly string[]): void {
  for (const line of lines)
    if (!SAFE_LINE.test(line) || line.length > 200)
      throw new HilError(`not a hil-uverbs command line: ${JSON.stringify(line)}`);
}

function newPidFile(): string {
  return `/tmp/hil-uverbs-${randomBytes(6).toString("hex")}.pid`;
}

/**
 * The host-side watchdog: after timeoutMs it collects the process's evidence and kills it.
 * `stop()` disarms it and waits for a collection under way.
 */
function watchdog(
  guest: UverbsShell,
  pidFile: string,
  timeoutMs: number,
): { killed(): UverbsKilled | undefined; stop(): Promise<void> } {
  const t0 = Date.now();
  let killed: UverbsKilled | undefined;
  let collecting: Promise<void> = Promise.resolve();
  const timer = setTimeout(() => {
    collecting = evidence(guest, pidFile).then(
      (e) => {
        if (e) killed = { ...e, afterMs: Date.now() - t0 };
      },
      () => undefined,
    );
  }, timeoutMs);
  return {
    killed: () => killed,
    async stop() {
      clearTimeout(timer);
      await collecting;
    },
  };
}

function finishRun(
  r: ExecResult,
  killed: UverbsKilled | undefined,
  opts: UverbsRunOptions,
  interrupted?: UverbsRun["interrupted"],
): UverbsRun {
  const records = parseTrace(killed ? wholeLines(r.stdout) : r.stdout, "hil-uverbs output");
  const run: UverbsRun = {
    records,
    done: recordsOf(records, "done"),
    exitCode: r.exitCode,
    stderr: r.stderr,
    hang: records.find((x): x is HangRecord => x.ev === "hang"),
    killed,
    ...(interrupted ? { interrupted } : {}),
  };
  if (opts.check ?? true) checkRun(run);
  return run;
}

/**
 * Runs the command lines in one hil-uverbs process and returns its trace. The host-side timeout
 * kills the process (after collecting its stack); with check (the default) a rejected input, a
 * failed command, a hang or a kill throws.
 */
export async function runUverbs(
  guest: UverbsShell,
  lines: readonly string[],
  opts: UverbsRunOptions = {},
): Promise<UverbsRun> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const drainTimeoutMs = opts.drainTimeoutMs ?? 10_000;
  checkLines(lines);
  const pidFile = newPidFile();
  const dog = watchdog(guest, pidFile, timeoutMs);
  let r: ExecResult;
  try {
    // the grace covers the kill; a process that outlives SIGKILL (stuck in D state) ends it here
    r = await guest.exec(uverbsCommand(pidFile, drainTimeoutMs), {
      input: lines.map((l) => `${l}\n`).join(""),
      timeoutMs: timeoutMs + 30_000,
    });
  } finally {
    await dog.stop();
  }
  return finishRun(r, dog.killed(), opts);
}

/**
 * The commands hil-uverbs runs for these lines (guest/uverbs/main.c): each line split at ';',
 * blank parts and '#' comments skipped. Each gets a "done" record unless the run ends first.
 */
export function commandCount(lines: readonly string[]): number {
  let n = 0;
  for (const line of lines)
    for (const part of line.split(";")) {
      const text = part.replace(/^[ \t\r]+/, "");
      if (text !== "" && !text.startsWith("#")) n++;
    }
  return n;
}

/** Counts the "done" records in stdout as it arrives (whole lines only). */
function doneCounter(stream: ExecStream): () => number {
  let done = 0;
  let partial = "";
  const count = (chunk: string) => {
    partial += chunk;
    const lines = partial.split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      try {
        if ((JSON.parse(line) as { ev?: unknown }).ev === "done") done++;
      } catch {
        // not a record: the trace parser reports it
      }
    }
  };
  count(stream.stdout);
  stream.onStdout(count);
  return () => done;
}

/**
 * Runs the segments' command lines in one streaming hil-uverbs process (-s): writes segment 1,
 * waits until every command sent so far has its "done" record, calls `between` with the trace so
 * far, writes segment 2, and so on; EOF after the last. A run that ends early (a drain hang, a
 * rejected line, the watchdog's kill) sends nothing more and calls `between` no more. When
 * `between` throws, no more input is sent: the program tears down at EOF and the run says where
 * it stopped (`interrupted`; with check, an error). Timeouts, evidence and check as runUverbs.
 */
export async function runUverbsSegments(
  guest: UverbsStreamShell,
  segments: readonly (readonly string[])[],
  between: (pause: UverbsPause) => Promise<void> | void,
  opts: UverbsRunOptions = {},
): Promise<UverbsRun> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const drainTimeoutMs = opts.drainTimeoutMs ?? 10_000;
  for (const segment of segments) checkLines(segment);
  const pidFile = newPidFile();
  const dog = watchdog(guest, pidFile, timeoutMs);
  let interrupted: UverbsRun["interrupted"];
  let r: ExecResult;
  try {
    const stream = await guest.execStream(uverbsCommand(pidFile, drainTimeoutMs, true), {
      timeoutMs: timeoutMs + 30_000,
    });
    try {
      const done = doneCounter(stream);
      const text = (lines: readonly string[]) => lines.map((l) => `${l}\n`).join("");
      let sent = 0;
      let more = true;
      for (const [i, segment] of segments.slice(0, -1).entries()) {
        sent += commandCount(segment);
        // the process ended (a hang, a rejected line, the watchdog): nothing more to send
        more =
          (segment.length === 0 || stream.write(text(segment))) &&
          (await waitForStdout(stream, () => done() >= sent));
        const trace = { records: parseTrace(wholeLines(stream.stdout), "hil-uverbs output") };
        if (trace.records.some((x) => x.ev === "hang" || x.ev === "reject")) more = false;
        if (!more) break;
        try {
          await between({ segment: i, trace });
        } catch (err) {
          interrupted = { segment: i, error: err instanceof Error ? err.message : String(err) };
          more = false;
          break;
        }
      }
      if (more) stream.end(text(segments.at(-1) ?? []));
    } finally {
      stream.end();
    }
    r = await stream.result;
  } finally {
    await dog.stop();
  }
  return finishRun(r, dog.killed(), opts, interrupted);
}
