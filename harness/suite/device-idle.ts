/**
 * What the device says of its idleness over its control channel (qemu/erdma/idle.ts): how long it
 * has been quiet and what it will still do by itself. The suite reads it to tell a hung drain
 * early (early-hang.ts), to stop waiting for completions that cannot come (the settle), and to end
 * a sleep once the device has done all it was given (`sleep: { ms, until: device_idle }`).
 */
import type { IdleReport } from "../../qemu/erdma/idle.ts";
import type { DeviceControl } from "./faults.ts";

/**
 * How long a device with nothing left to do must have been quiet for a sleep until it is idle to
 * end: its own work comes in jobs and timers (owed while queued or set), so a short pause only
 * covers the gap between a doorbell taken and its job queued.
 */
export const IDLE_QUIET_MS = 50;
/** How often a sleep until the device is idle asks it. */
const IDLE_POLL_MS = 20;

/** Whether the device will do nothing more by itself and has done nothing for `quietMs` at least. */
export function quietFor(r: IdleReport, quietMs: number): boolean {
  return r.owed.length === 0 && r.quietMs >= quietMs;
}

/** The device's idle report over its control channel; undefined when it cannot tell. */
export async function deviceIdle(control: DeviceControl): Promise<IdleReport | undefined> {
  const r = await control.control({ op: "idle" });
  if (!r.ok) return undefined;
  const idle = r.idle as Partial<IdleReport> | undefined;
  return typeof idle?.quietMs === "number" && Array.isArray(idle.owed) && Array.isArray(idle.held)
    ? { quietMs: idle.quietMs, owed: idle.owed.map(String), held: idle.held.map(String) }
    : undefined;
}

/**
 * Waits until the device is idle (quietFor IDLE_QUIET_MS), `ms` at most; the whole `ms` when it
 * cannot tell. Resolves with how long it waited and whether the device was idle then.
 */
export async function sleepUntilDeviceIdle(
  idle: () => Promise<IdleReport | undefined>,
  ms: number,
  now: () => number = Date.now,
  sleep: (ms: number) => Promise<void> = (t) => new Promise((r) => setTimeout(r, t)),
): Promise<{ waitedMs: number; idle: boolean }> {
  const start = now();
  for (;;) {
    const r = await idle().catch(() => undefined);
    const left = start + ms - now();
    if (r !== undefined && quietFor(r, IDLE_QUIET_MS)) return { waitedMs: now() - start, idle: true };
    if (left <= 0) return { waitedMs: now() - start, idle: false };
    await sleep(r === undefined ? left : Math.min(left, IDLE_POLL_MS));
  }
}
