/**
 * What went wrong under `hil boot`'s command, besides the command itself: the guest kernel
 * panicked (its panic is printed, from the console), QEMU died, or the device server died. Each
 * is one error instead of ssh's bare 255, or instead of the command's 0 when the device it talked
 * to was gone.
 */

import { describeExit } from "../../qemu/launch/process.ts";
import { HilError } from "../../util/errors.ts";
import type { BootedGuest } from "../boot.ts";
import { parseConsole } from "../console/parse.ts";
import { EXIT_FAILED, EXIT_NOT_JUDGED } from "../verdict.ts";

type Watched = Pick<BootedGuest, "pid" | "qemuExit" | "device" | "consoleLog">;

/** How long a guest whose command lost its connection gets to end (a panic prints, then QEMU ends). */
const SETTLE_MS = 10_000;

/** Waits for QEMU to end, up to SETTLE_MS: a command that lost its connection may be a panic in progress. */
export async function settle(guest: Watched): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  while (!guest.qemuExit && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}

export function bootTrouble(guest: Watched): HilError | undefined {
  const qemu = guest.qemuExit;
  // a guest that ended by itself first: its device server may end after it
  if (qemu && !qemu.signal && qemu.exitCode === 0) return guestEnded(guest);
  const device = guest.device;
  if (device?.exit) {
    const { code, signal } = device.exit;
    const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
    return new HilError(
      `the device server (pid ${device.pid}) ${how} while the command ran: the command's result says nothing of the driver`,
      { exitCode: EXIT_NOT_JUDGED },
    );
  }
  if (qemu)
    return new HilError(`QEMU (pid ${guest.pid}) ${describeExit(qemu)} while the command ran`, {
      exitCode: EXIT_NOT_JUDGED,
    });
  return undefined;
}

/** QEMU ended with status 0 under the command: a panic (printed) or a power-off. */
function guestEnded(guest: Watched): HilError {
  const events = parseConsole(guest.consoleLog());
  const crash = events.find((e) => e.kind === "panic" || e.kind === "oops");
  if (!crash)
    return new HilError(
      "the guest ended while the command ran (QEMU exited with status 0, no panic on the console)",
      {
        exitCode: EXIT_NOT_JUDGED,
      },
    );
  const cause = events.filter((e) => e.line < crash.line).at(-1);
  return new HilError(
    `the guest kernel ${crash.kind === "panic" ? "panicked" : "oopsed"} while the command ran: ${crash.text}`,
    {
      exitCode: EXIT_FAILED,
      detail: [
        ...(cause
          ? [`after: ${cause.kind}: ${cause.text}`, ...cause.trace.slice(0, 20).map((l) => `  ${l}`)]
          : []),
        ...crash.trace.slice(0, 20).map((l) => `  ${l}`),
      ].join("\n"),
    },
  );
}
