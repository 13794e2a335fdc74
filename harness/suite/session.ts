/** A guest booted for the suite (its first boot running the probe stage) with its executor loaded, and its end. */
import { join } from "node:path";
import { traceFailureIn } from "../../qemu/device-server/trace-failure.ts";
import { progress } from "../../util/progress.ts";
import { backendOf } from "../backend/registry.ts";
import { type BootedGuest, bootPrepared, DEFAULT_GUEST_MAC } from "../boot.ts";
import type { ExecutorFactory, ScenarioExecutor } from "../executor/executor.ts";
import { guestShellOf } from "../executor/guest-shell.ts";
import { addSoftLink } from "../executor/soft-link.ts";
import { softLinkOf } from "../scenario/drivers.ts";
import { type CheckResult, PASSING_VERDICTS } from "../verdict.ts";
import { hwTraceFileFor } from "./hw-trace.ts";
import type { SuiteOptions } from "./options.ts";

/** A setup command's limit where its caller gives none (an exec's default is none). */
const SETUP_COMMAND_MS = 120_000;

export interface GuestSession {
  guest: BootedGuest;
  executor: ScenarioExecutor;
  /** this boot's hardware trace file */
  hwTraceFile?: string;
  /**
   * where the next scenario's console slice starts: after the last barrier mark; at a boot the
   * probe did not judge, 0, so the boot and the driver's load are judged with the first scenario
   */
  consoleAt: number;
  /** the barriers written so far (each scenario's has the next number) */
  barriers: number;
  /** where the last scenario's hardware trace slice ended (settled): the next one starts there */
  hwAt?: number;
}

export async function startSession(
  opts: SuiteOptions,
  factory: ExecutorFactory,
  boot: number,
): Promise<{ session?: GuestSession; probe?: CheckResult[] }> {
  const { device } = opts;
  const backend = backendOf(device);
  // this boot's hardware trace, beside the first boot's, where the device keeps one
  const first = backend.hwTrace?.keptIn(device);
  const hwTraceFile = first ? hwTraceFileFor(first, boot) : undefined;
  const guest = await (opts.boot ?? bootPrepared)(opts.prepared, {
    mac: opts.mac ?? DEFAULT_GUEST_MAC,
    keepConsole: join(opts.runDir, boot === 1 ? "console.log" : `console-${boot}.log`),
    ...(opts.onQemuStarted ? { onQemuStarted: opts.onQemuStarted } : {}),
    device: backend.boot(
      backend.hwTrace && hwTraceFile ? backend.hwTrace.keepIn(device, hwTraceFile) : device,
    ),
  });
  try {
    let probe: CheckResult[] | undefined;
    let probeFailed = false;
    // the probe's commands and the driver's load, one after another through one open shell
    const setup = guestShellOf(guest);
    const exec = (command: string, o?: { timeoutMs?: number }) =>
      setup ? setup.run(command, o?.timeoutMs ?? SETUP_COMMAND_MS) : guest.exec(command, o);
    try {
      if (boot === 1 && opts.probe) {
        probe = await opts.probe({ exec, consoleLog: () => guest.consoleLog() }, hwTraceFile);
        checkHwTrace(guest);
        probeFailed = probe.some((r) => !PASSING_VERDICTS.includes(r.verdict));
      }
      const link = softLinkOf(opts.driver);
      if (!probeFailed && link) await addSoftLink(guest, link);
      else if (!probeFailed) {
        const r = await exec("modprobe erdma", { timeoutMs: 60_000 });
        if (r.exitCode !== 0) throw new Error(`modprobe erdma failed: ${r.stderr.trim()}`);
      }
    } finally {
      await setup?.close();
    }
    if (probe && probeFailed) {
      await guest.dispose();
      return { probe };
    }
    return {
      ...(probe ? { probe } : {}),
      session: {
        guest,
        executor: await factory(guest, opts.prepared),
        ...(hwTraceFile ? { hwTraceFile } : {}),
        consoleAt: probe ? guest.consoleLog().length : 0,
        barriers: 0,
      },
    };
  } catch (err) {
    // the first failure is the one to tell (a full disk fails the console's copy too)
    await guest.dispose().catch(() => {});
    throw err;
  }
}

export async function closeSession(session: GuestSession): Promise<void> {
  await session.executor.close().catch((err: unknown) => {
    progress.info(`[suite] the executor did not close cleanly: ${(err as Error).message}`);
  });
  await session.guest.dispose();
}

/**
 * Throws when the device server could not write its hardware trace (a full disk: the errno error,
 * naming the file), which leaves the run without the device's side of what happened.
 */
export function checkHwTrace(guest: BootedGuest): void {
  const failed = guest.device ? traceFailureIn(guest.device.log) : undefined;
  if (failed)
    throw Object.assign(
      new Error(`the device server's hardware trace ${failed.file} stopped: ${failed.message}`),
      {
        code: failed.code,
        path: failed.file,
      },
    );
}
