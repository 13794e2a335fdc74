/**
 * One emulated erdma device for one guest: a device server process (qemu/vfio-user/main.ts
 * --device erdma) started before QEMU with the guest NIC's MAC, its socket in a temp dir of its
 * own, and the QEMU arguments that attach it. `stop()` ends the process and removes the dir; a
 * signal or exit of this process does the same, so no path leaves a server, socket or dir behind.
 */
import { rmSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { onProcessExit } from "../../harness/util/cleanup.ts";
import { vfioUserPciArgs } from "../launch/cmdline.ts";
import { createRunDir, sweepStaleRunDirs } from "../launch/rundir.ts";
import { startServerProcess } from "../vfio-user/process.ts";
import { DEFAULT_PROFILE, loadProfile } from "./profile-file.ts";

const DIR_PREFIX = "hil-erdma-";
/** the QEMU device id */
export const ERDMA_QEMU_ID = "erdma0";

export interface ErdmaAttachOptions {
  /** the guest NIC's MAC */
  mac: string;
  /** profile name (fixtures/profiles) or file; default erdma-reflush */
  profile?: string;
  /** write the hardware trace (JSON lines) here; the file is truncated first */
  traceFile?: string;
  /** each warning line the server prints */
  onWarning?: (line: string) => void;
}

export interface AttachedErdma {
  readonly pid: number;
  readonly socketPath: string;
  readonly profile: string;
  readonly traceFile: string | undefined;
  /** what the server printed on stderr */
  readonly log: readonly string[];
  /** -device arguments for QEMU */
  readonly qemuArgs: string[];
  /** how the server ended, once it did */
  readonly exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** stops the server (SIGTERM, then SIGKILL) and removes its dir; safe to call twice */
  stop(): Promise<void>;
}

/** Starts the device server; resolves once it listens. Throws HilError (nothing left) otherwise. */
export async function startErdma(opts: ErdmaAttachOptions): Promise<AttachedErdma> {
  const profile = opts.profile ?? DEFAULT_PROFILE;
  loadProfile(profile); // a bad profile is the user's error: say so before anything starts
  sweepStaleRunDirs(DIR_PREFIX);
  const dir = await createRunDir(DIR_PREFIX);
  let pid: number | undefined;
  const unregister = onProcessExit(() => {
    if (pid !== undefined) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const cleanDir = async () => {
    await rm(dir, { recursive: true, force: true });
    unregister();
  };
  const socketPath = join(dir, "erdma.sock");
  try {
    if (opts.traceFile) await writeFile(opts.traceFile, "");
    const server = await startServerProcess({
      socketPath,
      device: "erdma",
      mac: opts.mac,
      profile,
      traceFile: opts.traceFile,
      onStderr: (line) => {
        if (/\bwarn\b/.test(line)) opts.onWarning?.(line);
      },
    });
    pid = server.pid;
    let stopped: Promise<void> | undefined;
    return {
      pid: server.pid,
      socketPath,
      profile,
      traceFile: opts.traceFile,
      log: server.stderr,
      qemuArgs: vfioUserPciArgs(socketPath, ERDMA_QEMU_ID),
      get exit() {
        return server.exit;
      },
      stop() {
        stopped ??= (async () => {
          try {
            await server.stop();
          } finally {
            await cleanDir();
          }
        })();
        return stopped;
      },
    };
  } catch (err) {
    await cleanDir();
    throw err;
  }
}
