/**
 * Whether the machinery under a scenario died while it ran: the device server (any exit: it only
 * stops when the guest is disposed of) or QEMU killed by a signal or failing with a status. Such a
 * death is the harness's fault, never the driver's: the scenario is an ERROR naming the process, and
 * it is noticed from the process's exit within a poll interval, not from the executor's timeouts.
 * QEMU ending with status 0 is the guest's own doing (a panic with panic=-1 and -no-reboot), which
 * the console judges.
 */
import { describeExit } from "../../qemu/launch/process.ts";
import type { BootedGuest } from "../boot.ts";

const POLL_MS = 200;

type Watched = Pick<BootedGuest, "pid" | "qemuExit" | "device">;

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

/** A watch over the guest's processes: `died` resolves with harnessDeath's reason once one dies. */
export function watchHarness(guest: Watched): { died: Promise<string>; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const died = new Promise<string>((resolve) => {
    const check = () => {
      const why = harnessDeath(guest);
      if (why) resolve(why);
      else timer = setTimeout(check, POLL_MS);
    };
    check();
  });
  return {
    died,
    stop: () => clearTimeout(timer),
  };
}
