/**
 * Emulated erdma devices for guests: a device server process (qemu/device-server/main.ts --device
 * erdma) started before QEMU with each guest NIC's MAC, its sockets in a temp dir of its own, and
 * the QEMU arguments that attach them. startErdma: one device for one guest. startErdmaFabric:
 * several devices in one process on one fabric, one per guest, so QPs in different guests reach
 * each other. `stop()` ends the process and removes the dir; a signal or exit of this process does
 * the same, so no path leaves a server, socket or dir behind. externalErdma: a device server
 * someone else runs, attached by its socket and left alone.
 */
import { rmSync, type Stats, statSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import type { ControlReply } from "../erdma/control.ts";
import { DEFAULT_PROFILE, loadProfile } from "../erdma/profile-file.ts";
import { vfioUserPciArgs } from "../launch/cmdline.ts";
import { createRunDir, sweepStaleRunDirs } from "../launch/rundir.ts";
import { controlRequest } from "./control-socket.ts";
import { type ServerProcess, startDevicesProcess } from "./process.ts";

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
  /** the verilated queue engine's shared library (qemu/erdma/rtl/build.ts); default: the TypeScript engine */
  queueEngine?: string;
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
  /** the server's control socket (control-socket.ts) */
  readonly controlPath: string;
  /** one control request (arm or clear a fault, read state); the device name may be left out */
  control(req: Record<string, unknown>): Promise<ControlReply>;
  /** stops the server (SIGTERM, then SIGKILL) and removes its dir; safe to call twice */
  stop(): Promise<void>;
}

/**
 * An erdma device behind a vfio-user server someone else started (an RTL co-simulation, a bridge
 * to an FPGA board, another model): QEMU connects to its socket; hil neither starts nor stops it,
 * has no control channel to it (no faults) and no hardware trace of it.
 */
export interface ExternalErdma {
  /** the server's socket, absolute */
  readonly socketPath: string;
  /** -device arguments for QEMU */
  readonly qemuArgs: string[];
}

/** sun_path holds 108 bytes with the terminating NUL */
const MAX_SOCKET_PATH = 107;

function fileKind(info: Stats): string {
  if (info.isFile()) return "a regular file";
  if (info.isDirectory()) return "a directory";
  if (info.isFIFO()) return "a FIFO";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device node";
  return "not a socket";
}

/**
 * The external device server listening on `socketPath`, checked (without connecting: a server may
 * take one client only): the path must be a UNIX socket QEMU can name. Throws HilError naming it.
 */
export function externalErdma(socketPath: string): ExternalErdma {
  const path = resolve(socketPath);
  const needs = "--device-socket needs the UNIX socket an external vfio-user device server listens on";
  let info: Stats;
  try {
    info = statSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const what = code === "ENOENT" ? "no such file" : `cannot be looked at (${code ?? String(err)})`;
    throw new HilError(`${what}: ${needs} (start the server first)`, { where: path, cause: err });
  }
  if (!info.isSocket())
    throw new HilError(`is ${fileKind(info)}, not a UNIX socket: ${needs}`, { where: path });
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH)
    throw new HilError(
      `the socket path is ${Buffer.byteLength(path)} bytes long, a UNIX socket path at most ${MAX_SOCKET_PATH}: give a shorter one (a symlink to it will do)`,
      { where: path },
    );
  return { socketPath: path, qemuArgs: vfioUserPciArgs(path, ERDMA_QEMU_ID) };
}

export interface ErdmaFabricDevice {
  /** the MAC of the guest NIC on the fabric network */
  mac: string;
  /** profile name (fixtures/profiles) or file; default erdma-reflush */
  profile?: string;
  /** write this device's hardware trace (JSON lines) here; the file is truncated first */
  traceFile?: string;
}

export interface ErdmaFabricOptions {
  /** each warning line the server prints */
  onWarning?: (line: string) => void;
  /** the verilated queue engine's shared library; default: the TypeScript engine */
  queueEngine?: string;
}

/** One device of a fabric: what its guest's QEMU needs. */
export interface FabricErdma {
  /** the device's name in the server's log and trace lines (`dev`): erdma0, erdma1, ... */
  readonly name: string;
  readonly mac: string;
  readonly socketPath: string;
  readonly profile: string;
  readonly traceFile: string | undefined;
  /** -device arguments for this device's guest */
  readonly qemuArgs: string[];
}

/** Devices served by one process on one fabric. */
export interface AttachedErdmaFabric {
  readonly pid: number;
  readonly devices: readonly FabricErdma[];
  /** what the server printed on stderr */
  readonly log: readonly string[];
  readonly exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** the server's control socket (control-socket.ts) */
  readonly controlPath: string;
  /** one control request; name the device (`device: "erdma0"`) */
  control(req: Record<string, unknown>): Promise<ControlReply>;
  /** stops the server (SIGTERM, then SIGKILL) and removes its dir; safe to call twice */
  stop(): Promise<void>;
}

interface RunningServer {
  server: ServerProcess;
  dir: string;
  controlPath: string;
  /** stops the server and removes the dir, once */
  stop(): Promise<void>;
}

/**
 * Starts a server for `devices` (socket i is `<dir>/<socketName(i)>`) in a fresh run dir. Throws
 * HilError with nothing left behind if it does not listen.
 */
async function startInRunDir(
  devices: readonly ErdmaFabricDevice[],
  socketName: (i: number) => string,
  onWarning: ((line: string) => void) | undefined,
  queueEngine?: string,
): Promise<RunningServer> {
  for (const d of devices) loadProfile(d.profile ?? DEFAULT_PROFILE); // the user's error: say so before anything starts
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
  try {
    for (const d of devices) if (d.traceFile) await writeFile(d.traceFile, "");
    const controlPath = join(dir, "control.sock");
    const server = await startDevicesProcess({
      device: "erdma",
      controlPath,
      ...(queueEngine ? { queueEngine } : {}),
      devices: devices.map((d, i) => ({
        socketPath: join(dir, socketName(i)),
        mac: d.mac,
        profile: d.profile ?? DEFAULT_PROFILE,
        traceFile: d.traceFile,
      })),
      onStderr: (line) => {
        if (/\bwarn\b/.test(line)) onWarning?.(line);
      },
    });
    pid = server.pid;
    let stopped: Promise<void> | undefined;
    return {
      server,
      dir,
      controlPath,
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

/** Starts the device server; resolves once it listens. Throws HilError (nothing left) otherwise. */
export async function startErdma(opts: ErdmaAttachOptions): Promise<AttachedErdma> {
  const profile = opts.profile ?? DEFAULT_PROFILE;
  const running = await startInRunDir(
    [{ mac: opts.mac, profile, traceFile: opts.traceFile }],
    () => "erdma.sock",
    opts.onWarning,
    opts.queueEngine,
  );
  const { server } = running;
  return {
    pid: server.pid,
    socketPath: server.socketPath,
    profile,
    traceFile: opts.traceFile,
    log: server.stderr,
    qemuArgs: vfioUserPciArgs(server.socketPath, ERDMA_QEMU_ID),
    get exit() {
      return server.exit;
    },
    controlPath: running.controlPath,
    control: (req) => controlRequest(running.controlPath, req),
    stop: () => running.stop(),
  };
}

/**
 * Starts one server process for several erdma devices on one fabric (device i is `erdma<i>`,
 * for guest i); resolves once every socket listens. Throws HilError (nothing left) otherwise.
 */
export async function startErdmaFabric(
  devices: readonly ErdmaFabricDevice[],
  opts: ErdmaFabricOptions = {},
): Promise<AttachedErdmaFabric> {
  if (devices.length < 2) throw new HilError(`a fabric joins at least 2 devices (got ${devices.length})`);
  const macs = devices.map((d) => d.mac.toLowerCase());
  const twice = macs.find((m, i) => macs.indexOf(m) !== i);
  if (twice) throw new HilError(`two devices on one fabric have the MAC ${twice}: each needs its own`);
  const running = await startInRunDir(devices, (i) => `erdma${i}.sock`, opts.onWarning, opts.queueEngine);
  const { server } = running;
  return {
    pid: server.pid,
    devices: devices.map((d, i) => {
      const socketPath = server.socketPaths[i] as string;
      return {
        name: `erdma${i}`,
        mac: d.mac,
        socketPath,
        profile: d.profile ?? DEFAULT_PROFILE,
        traceFile: d.traceFile,
        // each guest has one erdma device: its QEMU id is the same in every guest
        qemuArgs: vfioUserPciArgs(socketPath, ERDMA_QEMU_ID),
      };
    }),
    log: server.stderr,
    get exit() {
      return server.exit;
    },
    controlPath: running.controlPath,
    control: (req) => controlRequest(running.controlPath, req),
    stop: () => running.stop(),
  };
}
