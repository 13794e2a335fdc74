/**
 * Runs hil-uverbs (guest/uverbs) in a running guest over SSH: the command lines go to its stdin,
 * its stdout is the trace. A run is one process, so every object a scenario needs lives in one
 * run. Two watchdogs: the program's own drain timeout (-w) turns a drain that never completes
 * into a "hang" record; the host-side timeout here catches anything else stuck (a verbs call
 * that blocks in the kernel): it collects the process's kernel stack and state, kills it, and
 * returns what it wrote until then.
 */
import { randomBytes } from "node:crypto";
import { guestToolPath } from "../../guest/tools/build.ts";
import type { ExecOptions, ExecResult } from "../../qemu/launch/ssh.ts";
import { shellQuote } from "../../qemu/launch/ssh.ts";
import { type DoneRecord, type KvRecord, recordsOf } from "../kverbs/trace.ts";
import { HilError } from "../util/errors.ts";
import { type HangRecord, parseUverbsTrace, type UvRecord, wholeLines } from "./trace.ts";

export const UVERBS_BINARY = "hil-uverbs";

/** hil-uverbs' exit statuses (guest/uverbs/main.c). */
export const UVERBS_EXIT = { ok: 0, commandFailed: 1, rejected: 2, hang: 3 } as const;

/** What the driver needs of a guest. */
export interface UverbsShell {
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
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
  records: KvRecord[];
  user: UvRecord[];
  all: (KvRecord | UvRecord)[];
  done: DoneRecord[];
  exitCode: number;
  stderr: string;
  /** a drain whose marker did not complete in drainTimeoutMs */
  hang?: HangRecord;
  killed?: UverbsKilled;
}

const SAFE_LINE = /^[\x20-\x7e\t]*$/;

/**
 * The guest command: an inner shell writes its pid to `pidFile` and becomes hil-uverbs (so the
 * host can find and kill it); the outer one removes the pid file whatever happened.
 */
export function uverbsCommand(pidFile: string, drainTimeoutMs: number): string {
  const inner = `echo $$ > "$0" && exec ${guestToolPath(UVERBS_BINARY)} -w ${Math.ceil(drainTimeoutMs)}`;
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
  for (const line of lines)
    if (!SAFE_LINE.test(line) || line.length > 200)
      throw new HilError(`not a hil-uverbs command line: ${JSON.stringify(line)}`);
  const pidFile = `/tmp/hil-uverbs-${randomBytes(6).toString("hex")}.pid`;
  const t0 = Date.now();
  let killed: UverbsKilled | undefined;
  let watchdogDone: Promise<void> = Promise.resolve();
  const timer = setTimeout(() => {
    watchdogDone = evidence(guest, pidFile).then(
      (e) => {
        if (e) killed = { ...e, afterMs: Date.now() - t0 };
      },
      () => undefined,
    );
  }, timeoutMs);
  let r: ExecResult;
  try {
    // the grace covers the kill; a process that outlives SIGKILL (stuck in D state) ends it here
    r = await guest.exec(uverbsCommand(pidFile, drainTimeoutMs), {
      input: lines.map((l) => `${l}\n`).join(""),
      timeoutMs: timeoutMs + 30_000,
    });
  } finally {
    clearTimeout(timer);
    await watchdogDone;
  }
  const trace = parseUverbsTrace(killed ? wholeLines(r.stdout) : r.stdout);
  const run: UverbsRun = {
    ...trace,
    done: recordsOf(trace.records, "done"),
    exitCode: r.exitCode,
    stderr: r.stderr,
    hang: trace.user.find((x): x is HangRecord => x.ev === "hang"),
    killed,
  };
  if (opts.check ?? true) checkRun(run);
  return run;
}
