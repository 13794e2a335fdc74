/**
 * A hung drain told before its watchdog runs out. A drain waits for its marker's completion, and
 * on the emulated erdma device only the device writes one. When the device has been quiet for the
 * settle time with nothing it will still do by itself (no job queued, no timer a fault set:
 * qemu/erdma/idle.ts) while it holds work requests it does not work on (a QP in ERROR past its
 * flush, a stalled queue), and the executor has been inside a drain at least as long, asleep, the
 * marker can only come if the guest touches the device again; the guest's only actor, the
 * executor's worker, is the one waiting. The device is asked once more after the guest answered:
 * it must have stayed quiet from before the question to after the answer (a REFLUSH the driver's
 * delayed work sends late would show). Then the executor's wait is cut (HangProbe.cut) and the
 * watchdog's evidence path runs as if its time had run out: the worker's stack, sysrq-w.
 *
 * Only where the device can tell (the control channel answers "idle"), for one guest on its
 * device (a peer guest may still send), on erdma (siw has no device model), and only for drains:
 * everything else keeps its watchdog.
 */
import type { IdleReport } from "../../qemu/erdma/idle.ts";
import type { HangProbe, RunningCommand } from "../executor/executor.ts";
import { deviceIdle, quietFor } from "./device-idle.ts";
import type { DeviceControl } from "./faults.ts";

export { quietFor };

/**
 * How long the device must have been quiet, and the drain running, before the hang is certain.
 * The driver's late device work is its reflush: 100 us after a post or the ERR transition
 * (drivers/infiniband/hw/erdma/erdma_qp.c erdma_post_send/erdma_post_recv and
 * erdma_modify_qp_internal, mod_delayed_work(..., usecs_to_jiffies(100)), Linux 6.12), one 4 ms
 * jiffy at the guest's HZ 250; a variant delaying it 20 ms (fixtures/mutants/
 * benign-reflush-delayed-20ms.mbox) must pass. What the guest does late is what the host lets it:
 * measured on this machine under a load average of 13-15 (2 cores, TCG; 369 drains that returned,
 * default suite and the no-reflush-after-post mutant), the longest drain took 484 ms in all
 * (median 206 ms), and the longest the guest left the device alone in the middle of one operation
 * was 526 ms (a post_recv of two WRs, its two doorbells 526 ms apart). A second is twice that.
 */
export const SETTLE_MS = 1000;
/** How often the device is asked (a control request to the device server each time). */
export const POLL_MS = 250;
/** After the guest said it is in a drain: how long the device must stay quiet still. */
export const CONFIRM_MS = 200;

/** The executor commands whose hang the device can vouch for: they wait for the device alone. */
const DEVICE_WAITS = new Set(["drain"]);

export interface HangDeclared {
  command: RunningCommand;
  /** why it was certain, in words (the stuck observation's `declared`) */
  why: string;
}

export interface EarlyHangDeps {
  /** the device's idle report; undefined when it cannot tell (the watch then ends) */
  idle(): Promise<IdleReport | undefined>;
  probe: HangProbe;
  sleep(ms: number): Promise<void>;
  now(): number;
}

/** Whether the executor's command is one to declare hung now: a drain, asleep, running for the settle time. */
export function waitsOnDevice(c: RunningCommand | undefined, settleMs: number): boolean {
  return c !== undefined && DEVICE_WAITS.has(c.op) && c.ms >= settleMs && /^[DS]\b/.test(c.state);
}

/** Two estimates of when the device went quiet, from two questions: the same moment, give or take a round trip. */
function sameMoment(a: number, b: number | undefined): boolean {
  return b !== undefined && Math.abs(a - b) < 20;
}

/**
 * Watches until stop() or until a hang is declared (its command cut); `declared` settles then
 * (undefined when stopped, or when the device cannot tell). A failing guest or device question
 * ends the watch quietly: the watchdog is still there.
 */
export function watchForHang(
  deps: EarlyHangDeps,
  settleMs = SETTLE_MS,
): { declared: Promise<HangDeclared | undefined>; stop(): void } {
  let stopped = false;
  let onStop = () => {};
  const stoppedNow = new Promise<void>((resolve) => {
    onStop = resolve;
  });
  const pause = (ms: number) => Promise.race([deps.sleep(ms), stoppedNow]);
  /** the cut under way: once it is, stopping waits for it */
  let cutting: Promise<HangDeclared> | undefined;
  /** when the quiet period began that the guest said it ran no drain in (a drain touches the device) */
  let noDrainIn: number | undefined;
  const loop = async (): Promise<HangDeclared | undefined> => {
    // the executor's first round trip opens meanwhile: the guest is not asked while it does
    await pause(settleMs);
    while (!stopped) {
      const asked = deps.now();
      const first = await deps.idle();
      if (!first || stopped) return undefined;
      const quietSince = asked - first.quietMs;
      // nothing held: a drain, if one runs, waits for no work of the device's
      if (!quietFor(first, settleMs) || first.held.length === 0 || sameMoment(quietSince, noDrainIn)) {
        await pause(first.owed.length > 0 ? POLL_MS : Math.max(POLL_MS, settleMs - first.quietMs));
        continue;
      }
      const command = await deps.probe.running();
      if (stopped) return undefined;
      if (command === undefined || !waitsOnDevice(command, settleMs)) {
        // a drain starting later touches the device (its ERR transition, its marker's doorbell)
        if (command === undefined || !DEVICE_WAITS.has(command.op)) noDrainIn = quietSince;
        await pause(POLL_MS);
        continue;
      }
      await pause(CONFIRM_MS);
      if (stopped) return undefined;
      const again = await deps.idle();
      if (!again || stopped) return undefined;
      // quiet since before the first question: nothing happened while the guest answered
      if (!quietFor(again, deps.now() - asked)) continue;
      const why = `the device had been idle for ${Math.round(again.quietMs)} ms with nothing in flight (no doorbell or command to process, no timer set), holding ${first.held.join("; ")}, while ${command.op} waited (harness/suite/early-hang.ts)`;
      cutting = deps.probe.cut(command.id).then(() => ({ command, why }));
      return cutting;
    }
    return undefined;
  };
  const watched = loop().catch(() => undefined);
  return {
    declared: Promise.race([watched, stoppedNow.then(() => cutting?.catch(() => undefined))]),
    stop() {
      stopped = true;
      onStop();
    },
  };
}

/**
 * For the settle (executor/stepwise.ts): whether the device has been quiet for SETTLE_MS with
 * nothing it will still do by itself. A completion still owed then comes only if the guest touches
 * the device again, as a hung drain's marker does (the same bound, for the same reason).
 */
export function deviceQuietNow(control: DeviceControl): { ms: number; now(): Promise<boolean> } {
  return {
    ms: SETTLE_MS,
    async now() {
      const r = await deviceIdle(control);
      return r !== undefined && quietFor(r, SETTLE_MS);
    },
  };
}

/** The deps on a real device (its control channel's "idle") and executor. */
export function deviceHangDeps(control: DeviceControl, probe: HangProbe): EarlyHangDeps {
  return {
    idle: () => deviceIdle(control),
    probe,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    now: Date.now,
  };
}
