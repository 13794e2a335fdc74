import { execa } from "execa";
import { HilError } from "./errors.ts";

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with every line the command prints (stdout and stderr interleaved as they arrive). */
  onLine?: (line: string) => void;
  /** Lines of output kept for the error message when the command fails. */
  tailLines?: number;
  input?: string | Uint8Array;
  timeoutMs?: number;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * Runs a command to completion. A non-zero exit becomes a HilError naming `what`, with the last
 * lines of output; the child is killed if this process exits first.
 */
export async function run(
  what: string,
  file: string,
  args: readonly string[],
  opts: RunOptions = {},
): Promise<RunResult> {
  const tail: string[] = [];
  const keep = opts.tailLines ?? 40;
  const onLine = (line: string) => {
    tail.push(line);
    if (tail.length > keep) tail.shift();
    opts.onLine?.(line);
  };
  const child = execa(file, [...args], {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: true,
    reject: false,
    cleanup: true,
    all: true,
    buffer: { stdout: true, stderr: true, all: false },
    stdin: opts.input === undefined ? "ignore" : "pipe",
    input: opts.input,
    timeout: opts.timeoutMs,
    lines: false,
  });
  if (child.all) {
    let pending = "";
    child.all.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const parts = pending.split(/\r?\n/);
      pending = parts.pop() ?? "";
      for (const p of parts) onLine(p);
    });
    child.all.on("end", () => {
      if (pending) onLine(pending);
    });
  }
  const result = await child;
  if (result.failed) {
    const why = result.timedOut
      ? `timed out after ${opts.timeoutMs} ms`
      : result.exitCode !== undefined
        ? `exited with status ${result.exitCode}`
        : result.signal
          ? `was killed by ${result.signal}`
          : (result.originalMessage ?? "failed to start");
    throw new HilError(`${what} failed: ${[file, ...args].join(" ")} ${why}`, {
      detail: tail.length ? `last output:\n${tail.join("\n")}` : undefined,
    });
  }
  return {
    stdout: String(result.stdout ?? ""),
    stderr: String(result.stderr ?? ""),
    exitCode: result.exitCode ?? 0,
  };
}

/** Runs a command and returns its exit code and output without throwing on failure. */
export async function probe(
  file: string,
  args: readonly string[],
  opts: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
) {
  const r = await execa(file, [...args], {
    reject: false,
    cleanup: true,
    cwd: opts.cwd,
    env: opts.env,
    timeout: opts.timeoutMs,
    stdin: "ignore",
  });
  return {
    exitCode: r.exitCode ?? -1,
    stdout: String(r.stdout ?? ""),
    stderr: String(r.stderr ?? ""),
    failed: r.failed,
  };
}
