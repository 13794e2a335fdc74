import { existsSync, rmSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import type { Client } from "ssh2";
import { copyFileAtomic, writeFileAtomic } from "../../util/atomic-write.ts";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { resolveAccel } from "./accel.ts";
import { type Accel, type FabricNic, type GuestSpec, qemuArgv } from "./cmdline.ts";
import { ConsoleFollower } from "./console.ts";
import { freeLoopbackPort, isHostForwardFailure } from "./ports.ts";
import { describeExit, type QemuExit, QemuProcess } from "./process.ts";
import { QmpClient } from "./qmp.ts";
import { createRunDir, sweepStaleRunDirs } from "./rundir.ts";
import {
  connectWithRetry,
  copyFromGuest,
  copyToGuest,
  type ExecOptions,
  type ExecResult,
  type ExecStream,
  type ExecStreamOptions,
  execCommand,
  execStream,
  generateSshKeyPair,
  interactiveShell,
  type ShellIo,
  type SshKeyPair,
  type SshTarget,
} from "./ssh.ts";
import type { QemuInstall } from "./types.ts";

export const READY_MARKER = "HIL-GUEST-READY";
export const FAILED_MARKER = "HIL-GUEST-FAILED:";

export interface StartGuestOptions {
  qemu: QemuInstall;
  /** bzImage */
  kernel: string;
  initrd: string;
  /** default: HIL_ACCEL, else the cached KVM probe, else a probe boot */
  accel?: Accel;
  memoryMiB?: number;
  /** guest RAM shared with device servers (default true); false: they use DMA messages */
  sharedMemory?: boolean;
  cpus?: number;
  /** the virtio-net MAC (the erdma device binds to the netdev with the MAC it reports) */
  mac?: string;
  /** a second NIC on a network shared with another guest, with a static IPv4 (the fabric) */
  fabric?: FabricNic;
  /** names the guest in progress lines (default "guest") */
  name?: string;
  loglevel?: number;
  kernelArgs?: readonly string[];
  /** more QEMU arguments: -device/-object for the devices under test */
  extraQemuArgs?: readonly string[];
  /** the host port to forward to the guest's SSH, tried first (another is picked if it is taken) */
  sshPort?: number;
  /** QEMU start to a working SSH command; default 120 s under TCG, 60 s under KVM */
  bootTimeoutMs?: number;
  /**
   * a console silent this long before the ready marker is a stalled boot, and QEMU is started
   * once more (default 45 s under TCG, 30 s under KVM; 0: never)
   */
  stallMs?: number;
  /** copy the console log here when the guest is disposed of (or fails to boot) */
  keepConsole?: string;
  onConsoleLine?: (line: string) => void;
  /** called each time QEMU is started (for logs and for tests that check nothing is left) */
  onQemuStarted?: (info: { pid: number; workDir: string; sshPort: number }) => void;
}

export interface BootTimings {
  accel: Accel;
  /** QEMU started → the ready marker on the console */
  readyMarkerMs: number;
  /** QEMU started → the first SSH command returned */
  firstCommandMs: number;
  sshAttempts: number;
  /** QEMU starts needed (another one when the SSH port was taken meanwhile, or the boot stalled) */
  qemuStarts: number;
}

export interface ShutdownOptions {
  now?: boolean;
}

export interface Guest {
  readonly pid: number;
  readonly sshPort: number;
  readonly workDir: string;
  readonly timings: BootTimings;
  readonly keys: SshKeyPair;
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
  /** a command whose stdin is written and stdout read while it runs (execStream in ssh.ts) */
  execStream(command: string, opts?: ExecStreamOptions): Promise<ExecStream>;
  /** an interactive shell on a pty, on the given terminal (default: this process's stdio) */
  shell(io?: ShellIo): Promise<number>;
  copyTo(localPath: string, remotePath: string, opts?: { mode?: number }): Promise<void>;
  copyFrom(remotePath: string, localPath: string): Promise<void>;
  consoleLog(): string;
  qmp(): Promise<QmpClient>;
  readonly running: boolean;
  /** how QEMU ended, once it did */
  readonly qemuExit: QemuExit | undefined;
  /**
   * poweroff in the guest, then QMP quit, then SIGKILL; waits for QEMU to be gone. `now`: SIGKILL
   * at once (what it runs on died: nothing is left to shut down gracefully).
   */
  shutdown(opts?: ShutdownOptions): Promise<void>;
  /** shutdown (if needed), keep the console if asked, remove the run's temp dir */
  dispose(opts?: ShutdownOptions): Promise<void>;
}

const DEFAULT_MAC = "52:54:00:12:34:56";
const RUN_DIR_PREFIX = "hil-guest-";
const PORT_ATTEMPTS = 5;
/** a boot whose console went silent is retried this many times */
const STALL_RESTARTS = 1;
const CONSOLE_TAIL_LINES = 30;
const POWEROFF_WAIT_MS = 5000;

interface BootAttempt {
  qemuProcess: QemuProcess;
  sshPort: number;
}

class BootFailure extends Error {
  constructor(
    message: string,
    readonly hostForwardTaken = false,
    /** the console went silent before the ready marker: the last line it showed */
    readonly stalledAfter?: string,
  ) {
    super(message);
  }
}

function deadlineOf(timeoutMs: number | undefined): number | undefined {
  return timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
}

/** A command's options with what is left of its limit once connected (as given when that took no time). */
function within<O extends { timeoutMs?: number }>(opts: O, deadline: number | undefined): O {
  if (deadline === undefined || opts.timeoutMs === undefined) return opts;
  const left = deadline - Date.now();
  return left >= opts.timeoutMs - 100 ? opts : { ...opts, timeoutMs: Math.max(1, left) };
}

class RunningGuest implements Guest {
  private client: Client | undefined;
  private qmpClient: QmpClient | undefined;
  private disposed = false;
  /** aborted once QEMU is gone: nothing is left to connect to */
  private readonly gone = new AbortController();

  constructor(
    private readonly qemuProcess: QemuProcess,
    private readonly follower: ConsoleFollower,
    private readonly target: SshTarget,
    readonly workDir: string,
    readonly keys: SshKeyPair,
    readonly timings: BootTimings,
    private readonly keepConsole: string | undefined,
    private readonly unregisterDir: () => void,
    client: Client,
  ) {
    this.attach(client);
    void qemuProcess.exited.then(() => this.gone.abort());
  }

  get pid(): number {
    return this.qemuProcess.pid;
  }

  get sshPort(): number {
    return this.target.port;
  }

  get running(): boolean {
    return this.qemuProcess.running;
  }

  get qemuExit(): QemuExit | undefined {
    return this.qemuProcess.exit;
  }

  private attach(client: Client): void {
    this.client = client;
    client.once("close", () => {
      if (this.client === client) this.client = undefined;
    });
  }

  /** The open connection, or a new one by `deadline` (epoch ms; at most 30 s from now). */
  private async connection(deadline?: number): Promise<Client> {
    this.assertRunning();
    if (this.client) return this.client;
    const latest = Date.now() + 30_000;
    const { client } = await connectWithRetry(
      this.target,
      deadline === undefined ? latest : Math.min(latest, deadline),
      this.gone.signal,
    );
    this.attach(client);
    return client;
  }

  private assertRunning(): void {
    if (this.qemuProcess.running) return;
    throw new HilError(`the guest is gone: QEMU ${describeExit(this.qemuProcess.exit)}`, {
      detail: consoleTail(this.follower),
    });
  }

  /**
   * Turns an SSH-level failure into "the guest died" when that is what happened. With `deadline`
   * (epoch ms), a new connection must be made by then: a command's limit covers its connection.
   */
  private async guard<T>(fn: (client: Client) => Promise<T>, deadline?: number): Promise<T> {
    try {
      const client = await this.connection(deadline);
      return await fn(client).catch((err: Error) => {
        // a connection given up (ssh.ts openWithin) or lost before ssh2 said so: once, a new one
        if (err.message !== "Not connected" || this.client !== client) throw err;
        this.client = undefined;
        return this.connection(deadline).then(fn);
      });
    } catch (err) {
      if (err instanceof HilError) throw err;
      await this.qemuProcess.waitExit(200);
      this.assertRunning();
      throw new HilError(`SSH to the guest failed: ${(err as Error).message}`, { cause: err });
    }
  }

  exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const deadline = deadlineOf(opts.timeoutMs);
    return this.guard((c) => execCommand(c, fitsDropbear(command), within(opts, deadline)), deadline);
  }

  execStream(command: string, opts: ExecStreamOptions = {}): Promise<ExecStream> {
    const deadline = deadlineOf(opts.timeoutMs);
    return this.guard((c) => execStream(c, fitsDropbear(command), within(opts, deadline)), deadline);
  }

  shell(
    io: ShellIo = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
  ): Promise<number> {
    return this.guard((c) => interactiveShell(c, io));
  }

  copyTo(localPath: string, remotePath: string, opts: { mode?: number } = {}): Promise<void> {
    return this.guard((c) => copyToGuest(c, localPath, remotePath, opts.mode));
  }

  copyFrom(remotePath: string, localPath: string): Promise<void> {
    return this.guard((c) => copyFromGuest(c, remotePath, localPath));
  }

  consoleLog(): string {
    this.follower.poll();
    return this.follower.text();
  }

  async qmp(): Promise<QmpClient> {
    this.assertRunning();
    if (!this.qmpClient || this.qmpClient.isClosed) {
      this.qmpClient = await QmpClient.connect(join(this.workDir, "qmp.sock"), { timeoutMs: 5000 });
    }
    return this.qmpClient;
  }

  async shutdown(opts: ShutdownOptions = {}): Promise<void> {
    if (opts.now && this.qemuProcess.running) await this.qemuProcess.killAndWait();
    if (this.qemuProcess.running && this.client) {
      try {
        // The connection dies with the guest; the command never reports back.
        this.client.exec("poweroff -f", () => {});
        // A healthy guest is gone in well under a second; a hung kernel never powers off.
        await this.qemuProcess.waitExit(POWEROFF_WAIT_MS);
      } catch {
        // the connection was already broken: QMP next
      }
    }
    if (this.qemuProcess.running) {
      try {
        const qmp = await this.qmp();
        await qmp.quit();
      } catch {
        // fall through to SIGKILL
      }
      await this.qemuProcess.waitExit(10_000);
    }
    if (this.qemuProcess.running) await this.qemuProcess.killAndWait();
    this.client?.end();
    this.client = undefined;
    this.qmpClient?.close();
    this.qmpClient = undefined;
    this.follower.stop();
  }

  async dispose(opts: ShutdownOptions = {}): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.shutdown(opts);
    try {
      await keepConsoleCopy(this.workDir, this.keepConsole);
    } finally {
      await rm(this.workDir, { recursive: true, force: true });
      this.unregisterDir();
    }
  }
}

function consoleTail(follower: ConsoleFollower): string {
  follower.poll();
  const lines = follower.tail(CONSOLE_TAIL_LINES);
  return lines.length ? `last console lines:\n${lines.join("\n")}` : "the console stayed silent";
}

/** The console log kept whole (an empty one when QEMU never wrote it); a write that fails throws. */
async function keepConsoleCopy(workDir: string, keepConsole: string | undefined): Promise<void> {
  if (!keepConsole) return;
  await makeDir(dirname(keepConsole));
  const source = join(workDir, "console.log");
  if (existsSync(source)) await copyFileAtomic(source, keepConsole);
  else await writeFileAtomic(keepConsole, "");
}

function defaultBootTimeout(accel: Accel): number {
  return accel === "kvm" ? 60_000 : 120_000;
}

function defaultStall(accel: Accel): number {
  return accel === "kvm" ? 30_000 : 45_000;
}

/** Rejects when the console has been silent for stallMs (checked each second); stop() ends it. */
function stallWatch(
  follower: ConsoleFollower,
  stallMs: number,
): { promise: Promise<never>; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    if (stallMs <= 0) return;
    timer = setInterval(() => {
      follower.poll();
      const silentMs = Date.now() - follower.lastOutputAt;
      if (silentMs < stallMs) return;
      const last = follower.tail(1)[0]?.trim() || "(nothing)";
      reject(
        new BootFailure(
          `the console stalled for ${Math.round(silentMs / 1000)} s after: ${last}`,
          false,
          last,
        ),
      );
    }, 1000);
    timer.unref();
  });
  promise.catch(() => {});
  return { promise, stop: () => clearInterval(timer) };
}

/** Waits for the ready marker, then for a working SSH command; throws BootFailure otherwise. */
async function awaitBoot(
  attempt: BootAttempt,
  follower: ConsoleFollower,
  target: SshTarget,
  deadline: number,
  started: number,
  stallMs: number,
): Promise<{ client: Client; readyMarkerMs: number; firstCommandMs: number; sshAttempts: number }> {
  const { qemuProcess } = attempt;
  const ready = follower.waitFor(new RegExp(READY_MARKER));
  const stall = stallWatch(follower, stallMs);
  const failed = follower.waitFor(new RegExp(`${FAILED_MARKER}\\s*(.*)`));
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const giveUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BootFailure("timeout")), Math.max(0, deadline - Date.now()));
    failed.promise.then((m) => reject(new BootFailure(`guest init failed: ${m.match[1] ?? ""}`)));
    qemuProcess.exited.then(() => {
      follower.poll();
      const said = qemuProcess.outputTail(CONSOLE_TAIL_LINES).join("\n");
      reject(new BootFailure(`QEMU ${describeExit(qemuProcess.exit)}`, isHostForwardFailure(said)));
    });
  });
  giveUp.catch(() => abort.abort());
  try {
    await Promise.race([ready.promise, giveUp, stall.promise]);
    stall.stop();
    const readyMarkerMs = Date.now() - started;
    const connected = await Promise.race([connectWithRetry(target, deadline, abort.signal), giveUp]);
    const check = await Promise.race([execCommand(connected.client, "true", { timeoutMs: 30_000 }), giveUp]);
    if (check.exitCode !== 0)
      throw new BootFailure(`the first SSH command exited with status ${check.exitCode}`);
    return {
      client: connected.client,
      readyMarkerMs,
      firstCommandMs: Date.now() - started,
      sshAttempts: connected.attempts,
    };
  } catch (err) {
    if (err instanceof BootFailure) throw err;
    throw new BootFailure(err instanceof Error ? err.message : String(err));
  } finally {
    clearTimeout(timer);
    stall.stop();
    ready.cancel();
    failed.cancel();
    abort.abort();
  }
}

/**
 * Boots a guest and returns once a command runs over SSH. On any failure QEMU is killed, the run's
 * temp dir removed, and a HilError carries the console's last lines.
 */
export async function startGuest(opts: StartGuestOptions): Promise<Guest> {
  const accel =
    opts.accel ?? (await resolveAccel(opts.qemu, { kernel: opts.kernel, initrd: opts.initrd })).accel;
  const bootTimeoutMs = opts.bootTimeoutMs ?? defaultBootTimeout(accel);
  const stallMs = opts.stallMs ?? defaultStall(accel);
  sweepStaleRunDirs(RUN_DIR_PREFIX);
  const workDir = await createRunDir(RUN_DIR_PREFIX);
  const unregisterDir = onProcessExit(() => rmSync(workDir, { recursive: true, force: true }));
  const consoleLog = join(workDir, "console.log");
  const keys = generateSshKeyPair(`hil@${hostname()}`);
  await writeFile(join(workDir, "id_ed25519"), keys.privateKey, { mode: 0o600 });
  await writeFile(join(workDir, "id_ed25519.pub"), `${keys.publicKey}\n`);

  const step = progress.step(`[${opts.name ?? "guest"}] booting (${accel})`);
  let follower = new ConsoleFollower(consoleLog);
  let qemuProcess: QemuProcess | undefined;
  let lastFailure: BootFailure | undefined;
  const started = Date.now();
  const deadline = started + bootTimeoutMs;
  let stalls = 0;
  try {
    for (let start = 1; start <= PORT_ATTEMPTS; start++) {
      const sshPort = start === 1 && opts.sshPort ? opts.sshPort : await freeLoopbackPort();
      const spec: GuestSpec = {
        accel,
        memoryMiB: opts.memoryMiB ?? 1024,
        sharedMemory: opts.sharedMemory,
        cpus: opts.cpus ?? 2,
        kernel: opts.kernel,
        initrd: opts.initrd,
        authorizedKey: keys.publicKey,
        loglevel: opts.loglevel ?? 7,
        kernelArgs: opts.kernelArgs,
        consoleLog,
        qmpSocket: join(workDir, "qmp.sock"),
        network: { sshPort, mac: opts.mac ?? DEFAULT_MAC },
        fabric: opts.fabric,
        firmwareDirs: opts.qemu.firmwareDirs,
        extraArgs: opts.extraQemuArgs,
      };
      const argv = qemuArgv(spec);
      await rm(consoleLog, { force: true });
      follower = new ConsoleFollower(consoleLog);
      if (opts.onConsoleLine) follower.onLine(opts.onConsoleLine);
      follower.start();
      const qemuStarted = Date.now();
      qemuProcess = QemuProcess.spawn(opts.qemu.binary, argv, workDir);
      opts.onQemuStarted?.({ pid: qemuProcess.pid, workDir, sshPort });
      const target: SshTarget = {
        host: "127.0.0.1",
        port: sshPort,
        username: "root",
        privateKey: keys.privateKey,
      };
      try {
        const booted = await awaitBoot(
          { qemuProcess, sshPort },
          follower,
          target,
          deadline,
          qemuStarted,
          stallMs,
        );
        const timings: BootTimings = {
          accel,
          readyMarkerMs: booted.readyMarkerMs,
          firstCommandMs: booted.firstCommandMs,
          sshAttempts: booted.sshAttempts,
          qemuStarts: start,
        };
        step.succeed(`SSH on 127.0.0.1:${sshPort} after ${(booted.firstCommandMs / 1000).toFixed(1)} s`);
        return new RunningGuest(
          qemuProcess,
          follower,
          target,
          workDir,
          keys,
          timings,
          opts.keepConsole,
          unregisterDir,
          booted.client,
        );
      } catch (err) {
        lastFailure = err as BootFailure;
        await qemuProcess.killAndWait();
        follower.stop();
        if (lastFailure.stalledAfter !== undefined && stalls < STALL_RESTARTS && Date.now() < deadline) {
          stalls++;
          progress.info(`[${opts.name ?? "guest"}] ${lastFailure.message}; starting QEMU again`);
          continue;
        }
        if (!lastFailure.hostForwardTaken) break;
      }
    }
    throw bootError(lastFailure, follower, qemuProcess, bootTimeoutMs);
  } catch (err) {
    step.fail();
    if (qemuProcess?.running) await qemuProcess.killAndWait();
    follower.stop();
    await keepConsoleCopy(workDir, opts.keepConsole).catch(() => {});
    await rm(workDir, { recursive: true, force: true });
    unregisterDir();
    throw err;
  }
}

function bootError(
  failure: BootFailure | undefined,
  follower: ConsoleFollower,
  qemuProcess: QemuProcess | undefined,
  bootTimeoutMs: number,
): HilError {
  const why =
    !failure || failure.message === "timeout"
      ? `within ${Math.round(bootTimeoutMs / 1000)} s`
      : failure.hostForwardTaken
        ? `: no free port for SSH forwarding after ${PORT_ATTEMPTS} tries`
        : `: ${failure.message}`;
  const said = qemuProcess?.outputTail(10) ?? [];
  const detail = [consoleTail(follower), said.length ? `QEMU said:\n${said.join("\n")}` : ""]
    .filter(Boolean)
    .join("\n");
  return new HilError(`the guest never reached SSH ${why}`.replace(" :", ":"), { detail });
}

/**
 * The guest's SSH server (dropbear) refuses an exec request longer than its MAX_CMD_LEN, 9000
 * bytes (dropbear's sysoptions.h), with only "Unable to exec"; this says so before it is sent.
 * The wrapper that reports the exit status and tags the command's processes adds about 100 bytes:
 * 8850 leaves room for it.
 */
export const GUEST_COMMAND_MAX_BYTES = 8850;

export function fitsDropbear(command: string): string {
  const bytes = Buffer.byteLength(command);
  if (bytes > GUEST_COMMAND_MAX_BYTES)
    throw new HilError(
      `the guest command is ${bytes} bytes: the guest's SSH server (dropbear) runs at most ${GUEST_COMMAND_MAX_BYTES} (its MAX_CMD_LEN, 9000, less the wrapper that reports the exit status); copy a script into the guest and run that`,
      { detail: `${command.slice(0, 200)}...` },
    );
  return command;
}
