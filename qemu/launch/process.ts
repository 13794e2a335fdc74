import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { execa, type ResultPromise } from "execa";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";

const SETPRIV = "/usr/bin/setpriv";

export interface QemuExit {
  exitCode: number | undefined;
  signal: string | undefined;
}

/** A running QEMU: its pid, how it ended, and the last lines it printed on stdout/stderr. */
export class QemuProcess {
  readonly pid: number;
  readonly exited: Promise<QemuExit>;
  private exitInfo: QemuExit | undefined;
  private readonly output: string[] = [];
  private readonly unregister: () => void;

  private constructor(
    child: ResultPromise,
    readonly argv: readonly string[],
  ) {
    if (child.pid === undefined) throw new HilError(`cannot start QEMU (${child.spawnargs[0] ?? "?"})`);
    this.pid = child.pid;
    const pid = this.pid;
    this.unregister = onProcessExit(() => {
      if (!this.exitInfo) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    });
    const collect = (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) this.output.push(line);
      if (this.output.length > 200) this.output.splice(0, this.output.length - 200);
    };
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    this.exited = child.then((r) => {
      this.exitInfo = { exitCode: r.exitCode, signal: r.signal };
      this.unregister();
      return this.exitInfo;
    });
  }

  /**
   * Starts `binary argv` in `cwd` (a core dump, if any, lands there). QEMU is killed when this
   * process exits; through setpriv's parent-death signal even when this process is SIGKILLed.
   */
  static spawn(binary: string, argv: readonly string[], cwd: string): QemuProcess {
    const [file, args] = existsSync(SETPRIV)
      ? [SETPRIV, ["--pdeathsig", "KILL", "--", binary, ...argv]]
      : [binary, [...argv]];
    const child = execa(file, args, {
      cwd,
      reject: false,
      cleanup: true,
      stdin: "ignore",
      buffer: false,
      forceKillAfterDelay: 2000,
    });
    // A spawn failure (e.g. ENOENT) surfaces through `exited` with no exit code.
    child.catch(() => {});
    return new QemuProcess(child, argv);
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  get exit(): QemuExit | undefined {
    return this.exitInfo;
  }

  outputTail(n = 30): string[] {
    return this.output.slice(-n);
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (!this.running) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }

  /** Resolves true if QEMU exits within `ms`. */
  async waitExit(ms: number): Promise<boolean> {
    if (!this.running) return true;
    const timeout = sleep(ms, false, { ref: false });
    return Promise.race([this.exited.then(() => true), timeout]);
  }

  /** SIGKILL and wait for the exit to be reaped. */
  async killAndWait(): Promise<void> {
    this.kill("SIGKILL");
    await this.exited;
  }
}

export function describeExit(exit: QemuExit | undefined): string {
  if (!exit) return "is still running";
  if (exit.signal) return `was killed by ${exit.signal}`;
  return exit.exitCode === undefined ? "failed to start" : `exited with status ${exit.exitCode}`;
}
