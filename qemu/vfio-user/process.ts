/**
 * Runs a device server as its own process (qemu/vfio-user/main.ts) beside QEMU: started, waited
 * for until it listens, stopped with SIGTERM (SIGKILL after a grace period), never left behind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { HilError } from "../../harness/util/errors.ts";

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
  /** each line the server prints on stderr (warnings) */
  onStderr?: (line: string) => void;
  startTimeoutMs?: number;
}

export interface ServerProcess {
  readonly pid: number;
  readonly socketPath: string;
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

export async function startServerProcess(opts: ServerProcessOptions): Promise<ServerProcess> {
  killAllOnExit();
  const args = [
    "--import",
    "tsx",
    MAIN,
    "--socket-path",
    opts.socketPath,
    "--device",
    opts.device ?? "hil-testdev",
  ];
  if (opts.mac) args.push("--mac", opts.mac);
  if (opts.profile) args.push("--profile", opts.profile);
  if (opts.traceFile) args.push("--trace", opts.traceFile);
  if (opts.dmaTimeoutMs !== undefined) args.push("--dma-timeout-ms", String(opts.dmaTimeoutMs));
  // a server must not outlive us, even if we are killed without a chance to stop it
  args.push("--exit-with-parent");
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
      if (out.includes(`listening ${opts.socketPath}`)) resolve();
    });
    exited.then((e) =>
      reject(
        new HilError(`vfio-user server exited before listening (${e.code ?? e.signal})`, {
          where: opts.socketPath,
          detail: stderr.slice(-20).join("\n"),
        }),
      ),
    );
  });
  const timeoutMs = opts.startTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HilError(`vfio-user server did not listen within ${timeoutMs} ms`, { where: opts.socketPath }),
        ),
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
    if (existsSync(opts.socketPath) && exit?.signal) rmSync(opts.socketPath, { force: true });
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
    socketPath: opts.socketPath,
    get exit() {
      return exit;
    },
    stderr,
    stop,
  };
}
