/**
 * Whether the machinery under a scenario died while it ran: the device server (any exit: it only
 * stops when the guest is disposed of) or QEMU killed by a signal or failing with a status. Such a
 * death is the harness's fault, never the driver's: the scenario is an ERROR naming the process, and
 * it is noticed from the process's exit within a poll interval, not from the executor's timeouts.
 * QEMU ending with status 0 is the guest's own doing (a panic with panic=-1 and -no-reboot), which
 * the console judges. A process that is stopped (SIGSTOP, SIGTSTP, a tracer: state T or t in
 * /proc/<pid>/stat, proc(5)) for a second is as good as dead to the scenario: nothing it serves
 * moves while it is stopped, and the executor would only find out from its own timeouts.
 */
import { readFileSync } from "node:fs";
import { describeExit } from "../../qemu/launch/process.ts";
import type { BootedGuest } from "../boot.ts";

const POLL_MS = 200;
/** How long a process must stay stopped to be called frozen (a job-control stop of the whole group ends sooner). */
export const STOPPED_FOR_MS = 1000;

type Watched = Pick<BootedGuest, "pid" | "qemuExit" | "device">;

/** A process's state letter (proc(5): R, S, D, T, t, Z, ...), or undefined when it is gone. */
export type StateOf = (pid: number) => string | undefined;

export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // the command name (field 2) is in parentheses and may hold spaces: field 3 follows it
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) || undefined;
  } catch {
    return undefined;
  }
}

/** What died under the guest, described; undefined while it all lives. */
export function harnessDeath(guest: Watched): string | undefined {
  const device = guest.device;
  if (device?.exit) {
    const { code, signal } = device.exit;
    const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
    return `the device server (pid ${device.pid}) ${how} while the scenario ran: a harness fault, not the driver's`;
  }
  const qemu = guest.qemuExit;
  if (qemu && (qemu.signal || qemu.exitCode !== 0))
    return `QEMU (pid ${guest.pid}) ${describeExit(qemu)} while the scenario ran: a harness fault, not the driver's`;
  return undefined;
}

/** The live processes under the guest that are stopped now, by name. */
function stoppedNow(guest: Watched, stateOf: StateOf): Array<{ name: string; pid: number }> {
  const out: Array<{ name: string; pid: number }> = [];
  if (guest.device && !guest.device.exit && /^[Tt]$/.test(stateOf(guest.device.pid) ?? ""))
    out.push({ name: "the device server", pid: guest.device.pid });
  if (!guest.qemuExit && /^[Tt]$/.test(stateOf(guest.pid) ?? "")) out.push({ name: "QEMU", pid: guest.pid });
  return out;
}

/**
 * A watch over the guest's processes: `died` resolves with harnessDeath's reason once one dies,
 * or with the reason one is frozen once it has stayed stopped for STOPPED_FOR_MS.
 */
export function watchHarness(
  guest: Watched,
  opts: { stateOf?: StateOf; stoppedForMs?: number } = {},
): { died: Promise<string>; stop(): void } {
  const stateOf = opts.stateOf ?? procState;
  const stoppedForMs = opts.stoppedForMs ?? STOPPED_FOR_MS;
  /** since when each process has been seen stopped, by pid */
  const stoppedSince = new Map<number, number>();
  let timer: NodeJS.Timeout | undefined;
  const died = new Promise<string>((resolve) => {
    const check = () => {
      const why = harnessDeath(guest);
      if (why) return resolve(why);
      const now = Date.now();
      const stopped = stoppedNow(guest, stateOf);
      for (const pid of [...stoppedSince.keys()])
        if (!stopped.some((s) => s.pid === pid)) stoppedSince.delete(pid);
      for (const s of stopped) {
        const since = stoppedSince.get(s.pid) ?? now;
        stoppedSince.set(s.pid, since);
        if (now - since >= stoppedForMs)
          return resolve(
            `${s.name} (pid ${s.pid}) was stopped (SIGSTOP or a tracer) for ${((now - since) / 1000).toFixed(1)} s while the scenario ran: a harness fault, not the driver's`,
          );
      }
      timer = setTimeout(check, POLL_MS);
    };
    check();
  });
  return {
    died,
    stop: () => clearTimeout(timer),
  };
}
