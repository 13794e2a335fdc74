/** One scenario run on a session's guest, with what the harness saw meanwhile: faults armed, the console's slice, a death. */
import type { BootedGuest } from "../boot.ts";
import type { ExecutorOutcome } from "../executor/executor.ts";
import type { FaultObservation, Observation } from "../protocol/observations.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { deviceIdle, sleepUntilDeviceIdle } from "./device-idle.ts";
import { deviceHangDeps, deviceQuietNow, watchForHang } from "./early-hang.ts";
import { armFault, controlOf } from "./faults.ts";
import { examineSilentGuest, freezeEvent } from "./freeze.ts";
import { harnessDeath, watchHarness } from "./harness-watch.ts";
import { consoleObservations } from "./judge-run.ts";
import type { GuestSession } from "./session.ts";
import { runUlp, ulpWorkload } from "./ulp-run.ts";

/** How long the console may take to show a scenario's barrier mark. */
const BARRIER_WAIT_MS = 5000;

/** The end of the console line that shows barrier `id` (searched from `from`), once it shows. */
async function barrierEnd(guest: BootedGuest, id: number, from: number): Promise<number | undefined> {
  const mark = new RegExp(`hil-mark ${id}\\b[^\\n]*\\n`, "g");
  const deadline = Date.now() + BARRIER_WAIT_MS;
  for (;;) {
    mark.lastIndex = from;
    const m = mark.exec(guest.consoleLog());
    if (m) return m.index + m[0].length;
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface ObservedOutcome extends ExecutorOutcome {
  observations: Observation[];
  /** a ULP step is stuck: the guest is rebooted for the next scenario */
  wedged?: boolean;
  durationMs: number;
  /** the device server or QEMU died while the scenario ran (harness-watch.ts): why */
  harnessFault?: string;
}

/**
 * Runs the scenario (its fault steps armed on the device) and adds what the console showed
 * meanwhile, and the faults armed, to what the executor saw. If the device server or QEMU dies
 * meanwhile, the executor is not waited for: the outcome names the dead process.
 */
export async function observeScenario(
  session: GuestSession,
  compiled: CompiledScenario,
  opts: { earlyHang?: boolean } = {},
): Promise<ObservedOutcome> {
  const started = Date.now();
  const consoleFrom = session.consoleAt;
  const control = controlOf(session.guest.device);
  const faults: FaultObservation[] = [];
  const watch = watchHarness(session.guest);
  const ulp = ulpWorkload(compiled);
  const hangWatch =
    opts.earlyHang && !ulp && control && session.executor.hangProbe
      ? watchForHang(deviceHangDeps(control, session.executor.hangProbe))
      : undefined;
  // as for a hang: where the device is the only actor left and can tell (one guest, on erdma)
  const deviceQuiet =
    opts.earlyHang && control
      ? {
          deviceQuiet: deviceQuietNow(control),
          sleepUntilDeviceIdle: async (ms: number) => {
            await sleepUntilDeviceIdle(() => deviceIdle(control), ms);
          },
        }
      : {};
  // the next console barrier, written by the executor in its last round trip when it can
  const barrier = session.barriers + 1;
  let outcome: ExecutorOutcome & { observations?: Observation[]; wedged?: boolean };
  let harnessFault: string | undefined;
  try {
    const run = ulp
      ? runUlp(session.guest, compiled, barrier)
      : session.executor.runScenario(
          compiled,
          control
            ? {
                barrier,
                ...deviceQuiet,
                fault: async (step, records) => {
                  const armed = await armFault(control, step, compiled, records);
                  faults.push({
                    ev: "fault",
                    step: step.index,
                    kind: step.fault?.kind ?? "?",
                    spec: armed.spec,
                    ...(armed.target ? { wr: armed.target } : {}),
                  });
                },
              }
            : { barrier },
        );
    // settles once the guest is disposed of, after a death; nothing waits for it then
    run.catch(() => {});
    const died = watch.died.then((why) => ({ died: why }));
    const first = await Promise.race([run, died]);
    harnessFault = "died" in first ? first.died : harnessDeath(session.guest);
    outcome = "died" in first ? { records: [], stuck: [], sent: [], error: first.died } : first;
  } catch (err) {
    harnessFault = harnessDeath(session.guest);
    outcome = {
      records: [],
      stuck: [],
      sent: [],
      error: harnessFault ?? (err instanceof Error ? err.message : String(err)),
    };
  } finally {
    watch.stop();
    hangWatch?.stop();
  }
  const declared = await hangWatch?.declared;
  if (declared)
    outcome = {
      ...outcome,
      stuck: outcome.stuck.map((s) => (s.op === declared.command.op ? { ...s, declared: declared.why } : s)),
    };
  // the executor lost a guest whose QEMU still runs: frozen (an NMI takes its stack), or not
  const silent =
    !harnessFault && outcome.error !== undefined ? await examineSilentGuest(session.guest) : undefined;
  if (silent?.kind === "not-judged") outcome = { ...outcome, error: `${outcome.error}; ${silent.reason}` };
  const observations: Observation[] = [...outcome.stuck, ...faults, ...(outcome.observations ?? [])];
  if (harnessFault) {
    session.consoleAt = session.guest.consoleLog().length;
    return {
      ...outcome,
      error: harnessFault,
      observations,
      durationMs: Date.now() - started,
      harnessFault,
    };
  }
  const consoleTo = await closeConsoleSlice(
    session,
    consoleFrom,
    observations,
    outcome.barrier === true,
    outcome.wedged === true,
  );
  observations.push(...consoleObservations(session.guest.consoleLog().slice(consoleFrom, consoleTo)));
  if (silent?.kind === "frozen") {
    const e = freezeEvent(silent);
    observations.push({ ev: "console", kind: e.kind, text: e.text, trace: e.trace });
  }
  return { ...outcome, observations, durationMs: Date.now() - started };
}

/**
 * The end of the scenario's console slice: the executor writes a numbered mark to the kernel log
 * and the slice ends with the console line that shows it, so a late WARN is the scenario's that
 * caused it, not the next one's. A mark that never shows is a console-cut observation (the console
 * rule cannot vouch for the slice); a stuck executor writes none (the guest is rebooted). `written`:
 * the executor wrote it with the teardown (StepwiseHooks.barrier).
 */
export async function closeConsoleSlice(
  session: GuestSession,
  from: number,
  observations: Observation[],
  written: boolean,
  wedged: boolean,
): Promise<number> {
  const { executor, guest } = session;
  if (wedged || executor.wedged || (!written && !executor.barrier)) {
    session.consoleAt = guest.consoleLog().length;
    return session.consoleAt;
  }
  const id = ++session.barriers;
  let end: number | undefined;
  let why = `the kernel log did not show barrier mark ${id} within ${BARRIER_WAIT_MS} ms`;
  try {
    if (!written) await executor.barrier?.(id);
    end = await barrierEnd(guest, id, from);
  } catch (err) {
    why = `the barrier mark could not be written: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (end === undefined) observations.push({ ev: "console-cut", reason: why });
  session.consoleAt = end ?? guest.consoleLog().length;
  return session.consoleAt;
}
