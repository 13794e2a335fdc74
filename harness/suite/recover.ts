/**
 * A guest kept after a hang instead of rebooted. A drain's hang leaves the executor's worker
 * asleep in the drain; once its evidence is taken and judged, the device can let it go: it flushes
 * what its QPs in ERROR hold up to their doorbells (control op "release", qemu/erdma/release.ts),
 * the marker completes and the drain returns (ib_drain_qp's second marker, the RQ's, is let go
 * the same way when it waits in turn). The executor then destroys every object (reset) and
 * the device must hold no QP. The recovery's console lines and hardware events belong to neither
 * scenario: the console is cut at a barrier after it and the next hardware-trace slice starts after
 * it. Whenever a part of this does not hold, the guest is rebooted as before.
 */
import type { Observation } from "../protocol/observations.ts";
import type { DeviceControl } from "./faults.ts";
import { settledSize } from "./hw-trace.ts";
import { closeConsoleSlice, type ObservedOutcome } from "./observe.ts";
import type { GuestSession } from "./session.ts";

/** How long the released drain (each of its markers let go in turn) may take to return. */
export const RECOVER_MS = 5000;

/** Why the guest cannot be kept after this outcome, before anything is tried; undefined: try. */
export function keepable(
  driver: string,
  session: GuestSession,
  outcome: ObservedOutcome,
  control: DeviceControl | undefined,
): string | undefined {
  if (driver !== "erdma") return `the ${driver} driver's drain is not the device's to let go`;
  if (!control) return "the device has no control channel to let the drain go";
  if (!session.executor.recover) return "the executor cannot be taken back into use";
  if (outcome.harnessFault !== undefined || outcome.error !== undefined || outcome.wedged)
    return "the run broke, not only a drain";
  if (!session.executor.wedged) return "nothing is stuck";
  const stuck = outcome.stuck;
  if (stuck.length !== 1 || stuck[0]?.op !== "drain") return "the stuck command is not one drain";
  return undefined;
}

/**
 * Lets the hung drain go and takes the guest back into use; why not, when it could not (the guest
 * is then rebooted).
 */
export async function recoverAfterHang(
  driver: string,
  session: GuestSession,
  outcome: ObservedOutcome,
  control: DeviceControl | undefined,
): Promise<string | undefined> {
  const not = keepable(driver, session, outcome, control);
  if (not !== undefined || !control || !session.executor.recover) return not;
  const release = async () => {
    const released = await control.control({ op: "release" });
    if (!released.ok) throw new Error(`the device did not let its QPs go: ${released.error}`);
  };
  // the barrier the console slice after the recovery starts behind, written with the reset
  const barrier = session.barriers + 1;
  const why = await session.executor.recover(release, RECOVER_MS, barrier);
  if (why !== undefined) return why;
  const snap = await control.control({ op: "snapshot" });
  const qps = snap.ok ? (snap.state as { qps?: unknown } | null)?.qps : undefined;
  if (!Array.isArray(qps)) return "the device's state could not be read after the reset";
  if (qps.length > 0) return `the device still holds ${qps.length} QP(s) after the reset`;
  const cut: Observation[] = [];
  await closeConsoleSlice(session, session.consoleAt, cut, true, false);
  const notSeen = cut.find((o) => o.ev === "console-cut");
  if (notSeen) return `no console barrier after the recovery: ${notSeen.reason}`;
  if (session.hwTraceFile) session.hwAt = await settledSize(session.hwTraceFile);
  return undefined;
}
