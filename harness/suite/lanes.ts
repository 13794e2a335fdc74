/** The guests of a suite run side by side, each taking the next scenario of the shared queue when free. */
import { progress } from "../../util/progress.ts";
import { backendOf } from "../backend/registry.ts";
import type { ExecutorFactory } from "../executor/executor.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { PASSING_VERDICTS } from "../verdict.ts";
import { controlOf } from "./faults.ts";
import { unitsOf } from "./guests.ts";
import {
  QUIET_AFTER_IDLE_CLEAR_MS,
  readSlice,
  settledAfterClear,
  settledSize,
  syncedSize,
} from "./hw-trace.ts";
import { type ObservedOutcome, observeScenario } from "./observe.ts";
import type { QueuedRun, SuiteOptions } from "./options.ts";
import { hangsLast } from "./order.ts";
import { recordRun } from "./record.ts";
import { recoverAfterHang } from "./recover.ts";
import { repetitionLabel } from "./repeat.ts";
import { notRun, type SuiteReport } from "./results.ts";
import { checkHwTrace, closeSession, type GuestSession, startSession } from "./session.ts";

/** The scenarios that run on one guest each, on the suite's guests side by side. */
export async function runLanes(
  opts: SuiteOptions,
  factory: ExecutorFactory,
  report: SuiteReport,
  todo: QueuedRun[],
  maxGuests: number,
): Promise<void> {
  const repeat = opts.repeat ?? 1;
  const units = unitsOf(hangsLast(todo), (item) => item.r.scenario.name);
  // one device behind a socket or a host PCI function: one guest at a time can have it
  const guests = Math.max(1, Math.min(opts.guests ?? 1, units.length, maxGuests));
  const what =
    repeat > 1
      ? `${opts.scenarios.length} scenario(s) x ${repeat} repetitions`
      : `${todo.length} scenario(s)`;
  const step = progress.step(
    `[suite] ${what} on ${opts.driver}, ${opts.executor} executor${guests > 1 ? `, ${guests} guests` : ""}`,
  );
  const lanes = new SuiteLanes(opts, factory, report, units, todo.length, step);
  const settled = await Promise.allSettled(Array.from({ length: guests }, () => lanes.run()));
  const failed = settled.find((x): x is PromiseRejectedResult => x.status === "rejected");
  if (failed) {
    step.fail();
    throw failed.reason;
  }
  step.succeed(
    repeat > 1
      ? `${todo.length} run(s) of ${opts.scenarios.length} scenario(s), ${report.boots} boot(s)`
      : `${todo.length} scenario(s), ${report.boots} boot(s)`,
  );
}

/**
 * The guests of one suite run, each taking the next unit of the shared queue when it is free.
 * The first guest's first boot runs the probe stage; the others boot meanwhile and wait for its
 * outcome before their first scenario. When one guest fails, the others stop at their next run.
 */
class SuiteLanes {
  private started = 0;
  private failure = false;
  private readonly probed: Promise<string | undefined>;
  private settleProbe: (why: string | undefined) => void = () => {};

  constructor(
    private readonly opts: SuiteOptions,
    private readonly factory: ExecutorFactory,
    private readonly report: SuiteReport,
    private readonly units: QueuedRun[][],
    private readonly total: number,
    private readonly step: ReturnType<typeof progress.step>,
  ) {
    this.probed = new Promise((resolve) => {
      this.settleProbe = resolve;
    });
    if (!opts.probe) this.settleProbe(undefined);
  }

  /** Every run of the queue not taken yet is a MISS for `why`. */
  private missRest(unit: readonly QueuedRun[], why: string): void {
    for (const rest of [...unit, ...this.units.splice(0).flat()])
      this.report.scenarios.push(notRun(rest.r, rest.profiles, "MISS", why));
  }

  async run(): Promise<void> {
    let session: GuestSession | undefined;
    try {
      for (let unit = this.units.shift(); unit && !this.failure; unit = this.units.shift()) {
        for (const [i, item] of unit.entries()) {
          if (this.failure) break;
          this.step.update(this.started++, this.total, repetitionLabel(item.r));
          if (!session) {
            const t0 = Date.now();
            const boot = ++this.report.boots;
            const started = await startSession(this.opts, this.factory, boot).catch((err: unknown) => {
              if (boot === 1) this.settleProbe("the first guest did not start");
              throw err;
            });
            this.report.timings.bootMs += Date.now() - t0;
            if (boot === 1) {
              if (started.probe) this.report.probe = started.probe;
              const bad = started.probe?.find((x) => !PASSING_VERDICTS.includes(x.verdict));
              this.settleProbe(
                bad
                  ? `the device probes stage failed (${bad.id}: ${bad.verdict} ${bad.reason}): no scenario ran`
                  : undefined,
              );
            }
            const why = await this.probed;
            if (why || !started.session) {
              if (started.session) await closeSession(started.session);
              this.missRest(unit.slice(i), why ?? "the device probes stage failed: no scenario ran");
              return;
            }
            session = started.session;
          }
          const more = i < unit.length - 1 || this.units.length > 0;
          if (await runOne(this.opts, session, item, this.report, more)) session = undefined;
        }
      }
    } catch (err) {
      this.failure = true;
      if (session) await closeSession(session).catch(() => {}); // the first failure is the one to tell
      throw err;
    }
    if (session) await closeSession(session);
  }
}

/**
 * Whether clearing the device's faults after this run can set the device working again: a stall
 * or an ignored doorbell lets its queues run on a clear (qemu/erdma/datapath.ts schedules every
 * QP), and a run that did not finish cleanly (stuck, an error, a wedged executor) may leave QPs
 * behind for it to run. After a clean teardown there is none: in 336 scenario slices of seven
 * default-suite runs, only fault-stall-sq-drain's had events after the clear line.
 */
function clearMayWakeDevice(
  compiled: CompiledScenario,
  outcome: ObservedOutcome,
  session: GuestSession,
): boolean {
  const stops = compiled.steps.some(
    (s) => s.fault?.kind === "stall-queue" || s.fault?.kind === "ignore-doorbell",
  );
  return (
    stops ||
    outcome.stuck.length > 0 ||
    outcome.error !== undefined ||
    outcome.wedged === true ||
    session.executor.wedged
  );
}

/**
 * Runs one scenario (or repetition) on the session's guest, judges it and adds it to the report.
 * True when the guest was disposed of (a stuck executor, a broken run): the next run boots another.
 */
async function runOne(
  opts: SuiteOptions,
  session: GuestSession,
  item: QueuedRun,
  report: SuiteReport,
  /** another run is queued: a guest kept after a hang would be used again */
  more = true,
): Promise<boolean> {
  const { r, compiled } = item;
  const control = controlOf(session.guest.device);
  if (compiled.steps.some((x) => x.fault) && !control) {
    const why =
      backendOf(opts.device).faultSkip?.(opts.device) ??
      "the device server has no control channel to arm faults on";
    report.scenarios.push(notRun(r, item.profiles, "MISS", why));
    return false;
  }
  const hwFile = session.hwTraceFile;
  const hwFrom = hwFile ? (session.hwAt ?? (await settledSize(hwFile, { maxMs: 200 }))) : 0;
  const outcome = await observeScenario(session, compiled, { earlyHang: opts.driver === "erdma" });
  let cleared = false;
  if (control && !outcome.harnessFault) {
    const reply = await control
      .control({ op: "clear" })
      .catch((err: Error) => ({ ok: false, error: err.message }));
    cleared = reply.ok;
    if (!reply.ok) progress.info(`[suite] ${r.name}: clearing the device's faults failed: ${reply.error}`);
  }
  let hwText: string | undefined;
  if (hwFile) {
    const mayWake = clearMayWakeDevice(compiled, outcome, session);
    const synced =
      cleared && !mayWake && control
        ? await syncedSize(hwFile, async () => (await control.control({ op: "sync" })).ok)
        : undefined;
    const hwTo =
      synced ??
      (cleared
        ? await settledAfterClear(hwFile, hwFrom, { stepMs: mayWake ? 50 : QUIET_AFTER_IDLE_CLEAR_MS })
        : await settledSize(hwFile));
    session.hwAt = hwTo;
    hwText = await readSlice(hwFile, hwFrom, hwTo);
    checkHwTrace(session.guest);
  }
  await recordRun(opts, item, outcome, hwText, report);
  if (session.executor.wedged || outcome.wedged || outcome.error !== undefined) {
    const notKept = !more
      ? "no run is left for it"
      : session.executor.wedged
        ? await recoverAfterHang(opts.driver, session, outcome, control).catch((err: Error) => err.message)
        : "the run broke";
    if (notKept === undefined) {
      progress.info(
        `[suite] ${r.name}: the hung drain was let go, the guest is kept for the scenarios after it`,
      );
      return false;
    }
    progress.info(
      `[suite] ${r.name}: the guest is rebooted for the scenarios after it (not kept: ${notKept})`,
    );
    await session.guest.dispose({ now: outcome.harnessFault !== undefined });
    return true;
  }
  return false;
}
