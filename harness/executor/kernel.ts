/** The in-kernel executor (hil_kverbs) as a suite executor: steps batched into one guest command, a watchdog each in the guest. */

import { progress } from "../../util/progress.ts";
import type { PreparedGuest } from "../boot.ts";
import type { ModuleShell } from "../image/kmod.ts";
import { buildKverbsModule } from "../image/kverbs-module.ts";
import { commandLine } from "../protocol/commands.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import type { ExecutorOutcome, HangProbe, ScenarioExecutor } from "./executor.ts";
import { type CommandGroup, type GroupsOptions, KverbsDriver } from "./kverbs-driver.ts";
import { type CommandRunner, runStepwise, type StepwiseHooks, type StuckCommand } from "./stepwise.ts";

/** Commands of KverbsDriver that only read (the trace, the status): safe to run again. */
const READ_ONLY = /^(tail -c \+\d+|cat) \/sys\/kernel\/debug\/hil_kverbs\/(trace|status)$/;
const RETRIES = 2;
const SYSRQ_ATTEMPTS = 3;
const SYSRQ_SEEN = "sysrq-w dumped";
const SYSRQ_LISTED = "sysrq-w listed the worker";
/** After a release: how long to wait for the stuck command before the device is asked again. */
const RELEASE_WAIT_MS = 500;
const TEARDOWN_WAIT_MS = 10_000;
/**
 * sysrq-w, then proof in the kernel log that it ran (one more "Show Blocked State" than before) and
 * whether its dump lists the stuck worker. A drain on a CQ polled directly is not always blocked:
 * __ib_drain_sq/rq wake every HZ/10 to poll the CQ (verbs.c, IB_POLL_DIRECT), and a dump taken
 * while it polls lists no task.
 */
export function sysrqW(workerPid: number, dmesg = "dmesg", trigger = "/proc/sysrq-trigger"): string {
  return [
    `before=$(${dmesg} | grep -c 'sysrq: Show Blocked State')`,
    `echo w > ${trigger}`,
    `after=$(${dmesg} | grep -c 'sysrq: Show Blocked State')`,
    `[ "$after" -gt "$before" ] && echo '${SYSRQ_SEEN}' && ` +
      `${dmesg} | awk -v n="$after" '/sysrq: Show Blocked State/ { c++ } c == n' | grep -q ' pid:${workerPid} ' && echo '${SYSRQ_LISTED}'`,
    "true",
  ].join("; ");
}

/**
 * The guest shell KverbsDriver uses, with one repair: a read-only command whose SSH channel closed
 * without an exit status (exit code -1 and no signal: the guest's dropbear now and then closes a
 * channel before it reports the status) is run again; anything else is returned as it came.
 * Every exit code -1 is told to onRetry.
 */
export function retryingShell(
  guest: ModuleShell,
  onRetry?: (command: string, why: string) => void,
): ModuleShell {
  return {
    copyTo: (local, remote, opts) => guest.copyTo(local, remote, opts),
    ...(guest.execStream ? { execStream: guest.execStream.bind(guest) } : {}),
    async exec(command, opts) {
      for (let attempt = 0; ; attempt++) {
        const r = await guest.exec(command, opts);
        if (r.exitCode !== -1) return r;
        const signal = (r as { signal?: string }).signal;
        const again = signal === undefined && attempt < RETRIES && READ_ONLY.test(command);
        onRetry?.(
          command,
          `${signal ? `ended by SIG${signal}` : "no exit status"} (stdout ${r.stdout.length} B${r.stderr ? `, stderr ${JSON.stringify(r.stderr.trim().slice(0, 200))}` : ""})${again ? "; run again" : ""}`,
        );
        if (!again) return r;
      }
    },
  };
}

export class KernelExecutor implements ScenarioExecutor, CommandRunner {
  readonly kind = "kernel" as const;
  private stuckOnce = false;
  readonly hangProbe: HangProbe = {
    running: () => this.driver.running(),
    cut: (id) => this.driver.cut(id),
  };

  private constructor(
    private readonly driver: KverbsDriver,
    private readonly guest: ModuleShell,
  ) {}

  /** Builds hil_kverbs for the guest's kernel (cached), copies it in and loads it. */
  static async load(guest: ModuleShell, prepared: PreparedGuest): Promise<KernelExecutor> {
    const mod = await buildKverbsModule(prepared.kernel);
    const shell = retryingShell(guest, (command, why) => progress.info(`[kverbs] ${command}: ${why}`));
    return new KernelExecutor(await KverbsDriver.load(shell, mod), guest);
  }

  get wedged(): boolean {
    return this.stuckOnce;
  }

  runScenario(compiled: CompiledScenario, hooks?: StepwiseHooks): Promise<ExecutorOutcome> {
    return runStepwise(this, compiled, hooks);
  }

  async clear(): Promise<void> {
    await this.driver.clear();
  }

  async run(
    lines: readonly string[],
    timeoutMs: number,
  ): Promise<{ records: TraceRecord[]; stuck?: StuckCommand }> {
    const { stuck, records } = await this.runSteps([{ lines, timeoutMs }]);
    if (!stuck) return { records };
    const { stuckAt: _, ...evidence } = stuck;
    return { records, stuck: evidence };
  }

  async runSteps(
    steps: readonly CommandGroup[],
    opts: GroupsOptions = {},
  ): Promise<{ records: TraceRecord[]; ran: number; stuck?: StuckCommand & { stuckAt: number } }> {
    const r = await this.driver.runGroups(steps, opts);
    const ran = r.statuses.length;
    if (!r.stuck) return { records: r.records, ran };
    this.stuckOnce = true;
    await this.dumpBlockedTasks(r.stuck.status.pid);
    const busy = r.stuck.status.busy;
    return {
      records: r.records,
      ran,
      stuck: {
        stuckAt: ran - 1,
        op: busy?.op ?? "?",
        ms: busy?.ms ?? (steps[ran - 1] as CommandGroup).timeoutMs,
        stack: r.stuck.stack,
        state: r.stuck.state,
      },
    };
  }

  /**
   * The blocked tasks' stacks on the console too, as the hung-task detector would print them
   * (sysrq-w). Checked in the kernel log, and asked again when the command was lost on the way or
   * its dump caught the worker between two waits (sysrqW).
   */
  private async dumpBlockedTasks(workerPid: number): Promise<void> {
    let why = "";
    for (let attempt = 1; attempt <= SYSRQ_ATTEMPTS; attempt++) {
      const r = await this.guest.exec(sysrqW(workerPid), { timeoutMs: 10_000 }).catch((err: Error) => err);
      // a guest that does not answer in time is not asked again: the harness's freeze check follows
      if (r instanceof Error) {
        why = r.message;
        break;
      }
      if (r.exitCode === 0 && r.stdout.includes(SYSRQ_LISTED)) return;
      why = r.stdout.includes(SYSRQ_SEEN)
        ? `the dump did not list the worker (pid ${workerPid})`
        : `exit ${r.exitCode}${r.stderr ? `, ${r.stderr.trim().slice(0, 200)}` : ""}`;
    }
    progress.info(`[kverbs] sysrq-w: no blocked-task dump in the kernel log (${why})`);
  }

  /**
   * After a hang (suite/recover.ts): lets the device go (`release`), waits for the stuck command to
   * return, again while it waits for the device (ib_drain_qp drains the SQ, then the RQ: each
   * marker may need the device again), up to timeoutMs in all; then destroys every object (reset)
   * and writes the console barrier `barrier`, in the same round trip, and takes the executor back
   * into use. Why not, when the worker stays stuck or the reset fails.
   */
  async recover(
    release: () => Promise<void>,
    timeoutMs: number,
    barrier?: number,
  ): Promise<string | undefined> {
    if (!this.stuckOnce) return undefined;
    const deadline = Date.now() + timeoutMs;
    const teardown = [
      commandLine("reset"),
      ...(barrier !== undefined ? [commandLine("mark", { id: barrier })] : []),
    ];
    // a cut of the stuck command (suite/early-hang.ts) would end these waits at once
    await Promise.all([this.driver.cut(0), release()]);
    for (;;) {
      const wait = Math.max(100, Math.min(RELEASE_WAIT_MS, deadline - Date.now()));
      const r = await this.driver.runGroups([
        { lines: [], timeoutMs: wait },
        { lines: teardown, timeoutMs: TEARDOWN_WAIT_MS },
      ]);
      if (r.stuck && r.statuses.length > 1)
        return `the reset after the hang did not finish in ${TEARDOWN_WAIT_MS} ms (${r.stuck.state})`;
      if (!r.stuck) {
        const failed = r.records.filter(
          (x) => x.ev === "done" && x.rc !== 0 && (x.op === "reset" || x.op === "mark"),
        );
        const ran = r.records.filter((x) => x.ev === "done" && (x.op === "reset" || x.op === "mark")).length;
        if (failed.length > 0 || ran < teardown.length)
          return `the reset after the hang did not run cleanly (${failed.map((x) => (x.ev === "done" ? `${x.op}: rc ${x.rc}` : "")).join(", ") || "not run"})`;
        this.stuckOnce = false;
        return undefined;
      }
      if (Date.now() >= deadline)
        return `the worker is still in ${r.stuck.status.busy?.op ?? "a command"} after ${timeoutMs} ms (${r.stuck.state})`;
      await release();
    }
  }

  async barrier(id: number): Promise<void> {
    const r = await this.driver.run([commandLine("mark", { id })], { timeoutMs: 10_000, check: false });
    const done = r.done[0];
    if (done?.rc !== 0) throw new Error(`mark id=${id} did not run (${done ? `rc ${done.rc}` : "stuck"})`);
  }

  async close(): Promise<void> {
    if (!this.stuckOnce) await this.driver.unload();
  }
}
