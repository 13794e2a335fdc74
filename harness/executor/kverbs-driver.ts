/**
 * Drives hil_kverbs in a running guest over SSH: loads it, sends command lines to its ctl file,
 * waits (bounded) for its worker to finish them, and reads the new part of the trace. A command
 * that does not finish in time (a hung drain) leaves the worker stuck in the guest; run() then
 * reports it with the worker's kernel stack instead of hanging.
 */
import { z } from "zod";
import { HilError } from "../../util/errors.ts";
import type { BuiltGuestModule, ModuleShell } from "../image/kmod.ts";
import { loadGuestModule } from "../image/kmod.ts";
import { KVERBS_DEPS, KVERBS_MODULE } from "../image/kverbs-module.ts";
import { commandLine } from "../protocol/commands.ts";
import { type DoneRecord, parseTrace, recordsOf, type TraceRecord } from "../protocol/trace.ts";
import { type GuestShell, guestShellOf } from "./guest-shell.ts";
import { addSoftLink } from "./soft-link.ts";

export const KVERBS_DEBUGFS = "/sys/kernel/debug/hil_kverbs";

const statusSchema = z.strictObject({
  version: z.number().int(),
  pid: z.number().int(),
  idle: z.boolean(),
  queued: z.number().int().nonnegative(),
  last_done: z.number().int().nonnegative(),
  busy: z.strictObject({ id: z.number().int(), op: z.string(), ms: z.number().int() }).nullable(),
  /** commands that returned non-zero since the trace was cleared */
  failed: z.number().int().nonnegative(),
  trace_bytes: z.number().int().nonnegative(),
  dropped: z.number().int().nonnegative(),
  release: z.string(),
});
export type KverbsStatus = z.infer<typeof statusSchema>;

/** The evidence of a command that did not finish in time. */
export interface KverbsStuck {
  status: KverbsStatus;
  /** /proc/<worker pid>/stack */
  stack: string;
  /** the State: line of /proc/<pid>/status, e.g. "D (disk sleep)" */
  state: string;
}

export interface KverbsRun {
  /** the trace records that appeared while the commands ran */
  records: TraceRecord[];
  /** the done records of the commands, in order (fewer than the commands when stuck) */
  done: DoneRecord[];
  status: KverbsStatus;
  stuck?: KverbsStuck;
}

export interface RunOptions {
  /** how long the worker may take for all the lines (default 30 s) */
  timeoutMs?: number;
  /** throw when a command fails or the worker is stuck (default true) */
  check?: boolean;
}

const SAFE_LINE = /^[A-Za-z0-9_=.:, -]+$/;

/** Lines the worker runs as one group, waited for up to timeoutMs. */
export interface CommandGroup {
  lines: readonly string[];
  timeoutMs: number;
  /** end the batch after this group when any command since the trace was cleared failed */
  stopOnFailure?: boolean;
}

export interface GroupsOptions {
  /** empty the trace first (reading what is left of it), as clear() does */
  clear?: boolean;
}

export interface GroupsRun {
  records: TraceRecord[];
  /** the wait status after each group that ran */
  statuses: KverbsStatus[];
  stuck?: KverbsStuck;
}

/** Separates the parts of a batch's output: the old trace, the groups' statuses, the new trace. */
const TRACE_MARK = "@@hil-kverbs-trace";

/**
 * The guest command for runGroups, with no process forked per group (echo, read and case are the
 * shell's own): each group's lines written to ctl, then a bounded wait whose status is printed; a
 * status that is not idle (or, for a stopOnFailure group, one that counts a failure) ends the
 * groups. The trace since `offset` follows the mark. A refused line (its write fails) exits
 * non-zero, after the trace.
 */
export function groupsScript(groups: readonly CommandGroup[], offset: number, opts: GroupsOptions): string {
  const group = (g: CommandGroup) =>
    [
      ...g.lines.map((l) => `echo '${l}' > ctl`),
      `echo ${Math.ceil(g.timeoutMs)} > wait_ms`,
      "read -r s < wait",
      `echo "$s"`,
      `case "$s" in *'"idle":true'*) ;; *) exit 0 ;; esac`,
      ...(g.stopOnFailure ? [`case "$s" in *'"failed":0,'*) ;; *) exit 0 ;; esac`] : []),
    ].join(" && ");
  const clear = opts.clear
    ? [
        `tail -c +${offset + 1} trace && echo && echo ${TRACE_MARK} || exit 1`,
        "echo clear > ctl && read -r s < wait || exit 1",
      ]
    : [];
  return [
    `cd ${KVERBS_DEBUGFS} || exit 1`,
    ...clear,
    ...(groups.length > 0 ? [`( ${groups.map(group).join(" || exit 1\n")} || exit 1\n)`, "rc=$?"] : ["rc=0"]),
    `echo; echo ${TRACE_MARK}`,
    `tail -c +${opts.clear ? 1 : offset + 1} trace`,
    "exit $rc",
  ].join("\n");
}

/**
 * The parts of groupsScript's output: the trace read before the clear (with `clear`), the groups'
 * status lines, and the trace since (undefined when the output stops before a mark).
 */
export function splitGroupsOutput(
  stdout: string,
  opts: GroupsOptions,
): { oldTrace?: string; statusText: string; trace?: string } {
  const mark = `\n${TRACE_MARK}\n`;
  let out = stdout;
  let oldTrace: string | undefined;
  if (opts.clear) {
    const at = out.indexOf(mark);
    if (at >= 0) {
      oldTrace = out.slice(0, at);
      out = out.slice(at + mark.length);
    }
  }
  const at = out.indexOf(mark);
  return {
    ...(oldTrace !== undefined ? { oldTrace } : {}),
    statusText: at < 0 ? out : out.slice(0, at),
    ...(at < 0 ? {} : { trace: out.slice(at + mark.length) }),
  };
}

/** The wait status lines a batch printed, one per group that ran. */
export function parseStatuses(text: string): KverbsStatus[] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => parseStatus(l, "wait"));
}

function parseStatus(text: string, what: string): KverbsStatus {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new HilError(`hil_kverbs ${what} is not JSON`, { detail: text });
  }
  const r = statusSchema.safeParse(json);
  if (!r.success) throw new HilError(`hil_kverbs ${what} has an unexpected shape`, { detail: text });
  return r.data;
}

export class KverbsDriver {
  private offset = 0;
  private readonly seen: TraceRecord[] = [];
  /** the worker thread's pid, from the last status read */
  private workerPid: number | undefined;

  /** where runGroups' scripts run when the guest can keep a shell open (GuestShell) */
  private readonly shell: GuestShell | undefined;

  constructor(private readonly guest: ModuleShell) {
    this.shell = guestShellOf(guest);
  }

  /** Loads the module (after its in-tree dependencies) and returns a driver for it. */
  static async load(
    guest: ModuleShell,
    mod: BuiltGuestModule,
    opts: { inImage?: boolean; params?: string } = {},
  ): Promise<KverbsDriver> {
    await loadGuestModule(guest, mod, { deps: KVERBS_DEPS, inImage: opts.inImage, params: opts.params });
    const driver = new KverbsDriver(guest);
    await driver.status();
    return driver;
  }

  /** Every record read so far. */
  get records(): readonly TraceRecord[] {
    return this.seen;
  }

  private async sh(command: string, timeoutMs = 30_000): Promise<string> {
    const r = await this.guest.exec(command, { timeoutMs });
    if (r.exitCode !== 0)
      throw new HilError(`guest command failed (${r.exitCode}): ${command}`, {
        detail: `${r.stdout}${r.stderr}`.trim(),
      });
    return r.stdout;
  }

  async status(): Promise<KverbsStatus> {
    const status = parseStatus(await this.sh(`cat ${KVERBS_DEBUGFS}/status`), "status");
    this.workerPid = status.pid;
    return status;
  }

  /**
   * The command the worker runs now and the worker's scheduler state, in one round trip;
   * undefined when it runs none.
   */
  async running(): Promise<{ id: number; op: string; ms: number; state: string } | undefined> {
    const out = await this.sh(
      `cat ${KVERBS_DEBUGFS}/status && { grep '^State:' /proc/${this.workerPid ?? 0}/status 2>/dev/null || true; }`,
      10_000,
    );
    const [json = "", stateLine = ""] = out.split("\n");
    const busy = parseStatus(json, "status").busy;
    if (!busy) return undefined;
    return { ...busy, state: stateLine.replace(/^State:\s*/, "").trim() };
  }

  /** Ends the waits for command `id` while it runs: a read of wait returns its status at once. */
  async cut(id: number): Promise<void> {
    await this.sh(`echo ${Math.trunc(id)} > ${KVERBS_DEBUGFS}/cut`, 10_000);
  }

  /** The trace records written since the last read. */
  async readTrace(): Promise<TraceRecord[]> {
    return this.takeTrace(await this.sh(`tail -c +${this.offset + 1} ${KVERBS_DEBUGFS}/trace`));
  }

  /** The worker's kernel stack and scheduler state. */
  async workerStack(pid: number): Promise<{ stack: string; state: string }> {
    const stack = await this.sh(`cat /proc/${pid}/stack 2>/dev/null || true`);
    const state = await this.sh(`grep '^State:' /proc/${pid}/status 2>/dev/null || true`);
    // a worker that oopsed is gone: its stack is the console's
    if (!state.trim()) return { stack: "(the worker thread has exited: see the console)", state: "gone" };
    return { stack: stack.trim(), state: state.replace(/^State:\s*/, "").trim() };
  }

  /**
   * Sends the lines, waits up to timeoutMs for the worker to run them all, and returns the new
   * trace records. With check (the default) a failed command or a stuck worker throws.
   */
  async run(lines: readonly string[], opts: RunOptions = {}): Promise<KverbsRun> {
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const batch = await this.runGroups([{ lines, timeoutMs }]);
    const status = batch.statuses[0] as KverbsStatus;
    const result: KverbsRun = { records: batch.records, done: recordsOf(batch.records, "done"), status };
    if (batch.stuck) result.stuck = batch.stuck;
    if (opts.check ?? true) {
      if (result.stuck) {
        throw new HilError(
          `hil_kverbs: ${status.busy?.op ?? "a command"} did not finish in ${timeoutMs} ms (worker ${status.pid} ${result.stuck.state})`,
          { detail: result.stuck.stack },
        );
      }
      const failed = result.done.filter((d) => d.rc !== 0);
      if (failed.length)
        throw new HilError(`hil_kverbs: ${failed.length} command(s) failed`, {
          detail: failed.map((d) => `#${d.id} ${d.op}: rc ${d.rc}${d.err ? ` (${d.err})` : ""}`).join("\n"),
        });
    }
    return result;
  }

  /**
   * Runs groups of lines one after the other in one guest command, each group waited for up to its
   * own timeout by the module (the watchdog is in the guest), and reads the new trace in the same
   * command. The first group the worker does not finish in time ends the batch: `stuck` then holds
   * the worker's stack, and `statuses` has one entry per group that ran (the last one busy).
   */
  async runGroups(groups: readonly CommandGroup[], opts: GroupsOptions = {}): Promise<GroupsRun> {
    for (const line of groups.flatMap((g) => g.lines)) {
      if (!SAFE_LINE.test(line)) throw new HilError(`not a hil_kverbs command line: ${JSON.stringify(line)}`);
      if (/^\s*clear\b/.test(line)) throw new HilError("use clear(), not a clear line, to empty the trace");
    }
    const script = groupsScript(groups, this.offset, opts);
    const budget = groups.reduce((sum, g) => sum + g.timeoutMs, 0);
    const r = this.shell
      ? await this.shell.run(script, budget + 30_000)
      : await this.guest.exec(script, { timeoutMs: budget + 30_000 });
    const parts = splitGroupsOutput(r.stdout, opts);
    if (opts.clear) {
      if (parts.oldTrace !== undefined) this.takeTrace(parts.oldTrace);
      this.offset = 0;
    }
    const statusText = parts.statusText;
    const records = parts.trace === undefined ? await this.readTrace() : this.takeTrace(parts.trace);
    if (r.exitCode !== 0) {
      const rejects = recordsOf(records, "reject");
      throw new HilError("hil_kverbs refused a command", {
        detail: rejects.length
          ? rejects.map((x) => `${x.line}: ${x.why}`).join("\n")
          : `${r.stdout}${r.stderr}`.trim(),
      });
    }
    const statuses = parseStatuses(statusText);
    const last = statuses.at(-1);
    if (groups.length === 0 && statuses.length === 0) return { records, statuses };
    if (!last || statuses.length > groups.length)
      throw new HilError(`hil_kverbs: ${statuses.length} status line(s) for ${groups.length} group(s)`, {
        detail: r.stdout,
      });
    if (last.idle) return { records, statuses };
    return { records, statuses, stuck: { status: last, ...(await this.workerStack(last.pid)) } };
  }

  /** Parses the trace text read at this.offset and moves the offset past its whole lines. */
  private takeTrace(text: string): TraceRecord[] {
    const end = text.lastIndexOf("\n") + 1;
    const fresh = parseTrace(text.slice(0, end), `${KVERBS_DEBUGFS}/trace @${this.offset}`);
    this.offset += Buffer.byteLength(text.slice(0, end));
    this.seen.push(...fresh);
    return fresh;
  }

  /** Empties the trace (after reading what is in it). */
  async clear(): Promise<void> {
    await this.runGroups([], { clear: true });
  }

  /**
   * Destroys every object (reset), waits, and unloads the module; throws when something stays:
   * the module, its worker thread or its debugfs directory.
   */
  async unload(): Promise<void> {
    await this.run([commandLine("reset")]);
    await this.shell?.close();
    await this.sh(`rmmod ${KVERBS_MODULE}`);
    const left = await this.sh(
      `{ [ -d ${KVERBS_DEBUGFS} ] && echo debugfs; [ -d /sys/module/${KVERBS_MODULE} ] && echo module; grep -qx ${KVERBS_MODULE} /proc/[0-9]*/comm && echo thread; } 2>/dev/null; true`,
    );
    if (left.trim()) throw new HilError(`hil_kverbs left things behind after rmmod: ${left.trim()}`);
  }
}

/** soft-iWARP on a guest netdev: loads siw and adds the link; returns the device name once it is registered. */
export function addSiwLink(guest: ModuleShell, netdev = "eth0", name = "siw0"): Promise<string> {
  return addSoftLink(guest, { module: "siw", type: "siw", device: name }, netdev);
}
