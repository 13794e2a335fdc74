/**
 * Runs a device server as its own process (qemu/device-server/main.ts) beside QEMU: started, waited
 * for until it listens, stopped with SIGTERM (SIGKILL after a grace period), never left behind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { HilError } from "../../util/errors.ts";
import { nodeArgsFor } from "../../util/package.ts";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

export interface ServerProcessOptions {
  socketPath: string;
  device?: string;
  /** erdma: the guest NIC's MAC (required for erdma) */
  mac?: string;
  /** erdma: a profile name (fixtures/profiles) or file */
  profile?: string;
  /** append the JSON-lines hardware trace to this file */
  traceFile?: string;
  dmaTimeoutMs?: number;
  /** erdma: open the control channel (faults, state) on this socket */
  controlPath?: string;
  /** each line the server prints on stderr (warnings) */
  onStderr?: (line: string) => void;
  startTimeoutMs?: number;
}

/** One of several devices served by one process. */
export interface ServedDevice {
  socketPath: string;
  /** erdma: the guest NIC's MAC (required for erdma) */
  mac?: string;
  /** erdma: a profile name (fixtures/profiles) or file; give one for every device or for none */
  profile?: string;
  /** this device's own trace file; give one for every device or for none */
  traceFile?: string;
}

/**
 * Several devices of one kind in one process, each on its own socket. erdma devices served
 * together share one fabric: their QPs reach each other (qemu/device-server/main.ts).
 */
export interface DevicesProcessOptions {
  device?: string;
  devices: readonly ServedDevice[];
  /** one trace file for every device's lines (each line names its device in `dev`) */
  traceFile?: string;
  dmaTimeoutMs?: number;
  /** erdma: open the control channel (faults, state) on this socket */
  controlPath?: string;
  /** erdma: the verilated queue engine's shared library (qemu/erdma/rtl) */
  queueEngine?: string;
  onStderr?: (line: string) => void;
  startTimeoutMs?: number;
}

export interface ServerProcess {
  readonly pid: number;
  /** the first device's socket */
  readonly socketPath: string;
  /** every device's socket, in the order given */
  readonly socketPaths: readonly string[];
  /** exit code or signal once it exited, else undefined */
  readonly exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** stderr lines so far */
  readonly stderr: string[];
  /** SIGTERM, wait (SIGKILL after 5 s); resolves with how it ended */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();
let exitHook = false;

function killAllOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const c of live) c.kill("SIGKILL");
  });
}

/** One option per device when they differ, once when all agree, not at all when none has one. */
function perDeviceOption(flag: string, values: readonly (string | undefined)[]): string[] {
  const given = values.filter((v): v is string => v !== undefined);
  if (given.length === 0) return [];
  if (given.length === values.length && given.every((v) => v === given[0])) return [flag, given[0] as string];
  if (given.length !== values.length)
    throw new HilError(`${flag}: give it for every device served by one process, or for none`, {
      detail: values.map((v, i) => `device ${i + 1}: ${v ?? "(none)"}`).join("\n"),
    });
  return given.flatMap((v) => [flag, v]);
}

/** The arguments of qemu/device-server/main.ts for these devices (after `node --import tsx main.ts`). */
export function serverArgs(opts: DevicesProcessOptions): string[] {
  if (opts.devices.length === 0) throw new HilError("a device server needs at least one device");
  if (opts.traceFile && opts.devices.some((d) => d.traceFile))
    throw new HilError("a trace file for all devices and one per device: pick one");
  const args = ["--device", opts.device ?? "hil-testdev"];
  for (const d of opts.devices) args.push("--socket-path", d.socketPath);
  for (const d of opts.devices) if (d.mac) args.push("--mac", d.mac);
  args.push(
    ...perDeviceOption(
      "--profile",
      opts.devices.map((d) => d.profile),
    ),
  );
  if (opts.traceFile) args.push("--trace", opts.traceFile);
  else
    args.push(
      ...perDeviceOption(
        "--trace",
        opts.devices.map((d) => d.traceFile),
      ),
    );
  if (opts.dmaTimeoutMs !== undefined) args.push("--dma-timeout-ms", String(opts.dmaTimeoutMs));
  if (opts.controlPath !== undefined) args.push("--control", opts.controlPath);
  if (opts.queueEngine !== undefined) args.push("--queue-engine", opts.queueEngine);
  // a server must not outlive us, even if we are killed without a chance to stop it
  args.push("--exit-with-parent");
  return args;
}

/** One device in its own server process. */
export function startServerProcess(opts: ServerProcessOptions): Promise<ServerProcess> {
  const { socketPath, mac, profile, traceFile, ...rest } = opts;
  return startDevicesProcess({ ...rest, devices: [{ socketPath, mac, profile }], traceFile });
}

/** Several devices in one server process; resolves once every socket listens. */
export async function startDevicesProcess(opts: DevicesProcessOptions): Promise<ServerProcess> {
  killAllOnExit();
  // the bundled server when hil runs from its bundle; else through tsx as this package resolves it
  // (a bare `--import tsx` would be looked up from the working directory)
  const args = [...nodeArgsFor(MAIN, "device-server.mjs"), ...serverArgs(opts)];
  const socketPaths = opts.devices.map((d) => d.socketPath);
  const where = socketPaths.join(", ");
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  live.add(child);
  const stderr: string[] = [];
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      live.delete(child);
      resolve(exit);
    });
  });
  let pending = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const l of lines) {
      stderr.push(l);
      opts.onStderr?.(l);
    }
  });
  const listening = new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const said = new Set(out.split("\n").filter((l) => l.startsWith("listening ")));
      if (socketPaths.every((p) => said.has(`listening ${p}`))) resolve();
    });
    exited.then((e) =>
      reject(
        new HilError(`vfio-user server exited before listening (${e.code ?? e.signal})`, {
          where,
          detail: stderr.slice(-20).join("\n"),
        }),
      ),
    );
  });
  // a server that dies is reported at once (exited above); this only bounds a live one that is slow
  // to start, as node and tsx are on a machine busy building kernels (30 s was seen to run out)
  const timeoutMs = opts.startTimeoutMs ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new HilError(`vfio-user server did not listen within ${timeoutMs} ms`, { where })),
      timeoutMs,
    );
  });
  const stop = async () => {
    if (!exit) {
      child.kill("SIGTERM");
      const grace = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(grace);
    }
    // a killed server had no chance to remove its sockets
    if (exit?.signal) for (const p of socketPaths) if (existsSync(p)) rmSync(p, { force: true });
    return exit as { code: number | null; signal: NodeJS.Signals | null };
  };
  try {
    await Promise.race([listening, timeout]);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return {
    pid: child.pid as number,
    socketPath: socketPaths[0] as string,
    socketPaths,
    get exit() {
      return exit;
    },
    stderr,
    stop,
  };
}
