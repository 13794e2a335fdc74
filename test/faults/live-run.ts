/**
 * A `hil run` the campaign makes a fault in while it runs: started as a user would (bin/hil, an
 * isolated TMPDIR, its own process group, as a shell job), watched until its scenario runs, then
 * hurt from outside: a process of it signalled, or the guest reached over SSH as hil reaches it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Test } from "tap";
import { connectOnce } from "../../qemu/launch/ssh.ts";
import { HIL_BIN, hil, type Isolation, processesUsing, REPO_ROOT } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";
import type { FaultRow } from "./table.ts";

/** A short scenario: receives posted, a pause the fault lands in, then a drain. */
export function pausedScenario(pauseMs: number): string {
  return `description: receives posted, a long pause (a fault is made in it), then a drain
covers: [9]
drivers: [erdma]
steps:
  - post_recv: { count: 4 }
  - sleep: ${pauseMs}
  - drain: { which: qp }
`;
}

export interface RunExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** epoch ms */
  at: number;
}

export interface LiveRun {
  child: ChildProcess;
  pid: number;
  output(): string;
  exited: Promise<RunExit>;
}

/** Starts `hil <args>` in its own process group (as a shell starts a job) with the isolated TMPDIR. */
export function startHil(args: readonly string[], iso: Isolation, env: NodeJS.ProcessEnv = {}): LiveRun {
  const child = spawn(HIL_BIN, [...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...iso.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const onData = (b: Buffer) => {
    output += b.toString();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<RunExit>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  if (child.pid === undefined) throw new Error(`cannot start ${HIL_BIN}`);
  return { child, pid: child.pid, output: () => output, exited };
}

/**
 * Resolves once the run's scenario runs (its QP is connected: the probes' QPs never reach RTS) and
 * `settleMs` more have passed, so a fault lands inside the scenario; rejects if hil ends first.
 */
export function scenarioRunning(run: LiveRun, runDir: string, settleMs = 1500): Promise<void> {
  const hwTrace = join(runDir, "hw-trace.jsonl");
  return new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      if (!existsSync(hwTrace) || !/"object":"qp"[^\n]*"to":"RTS"/.test(readFileSync(hwTrace, "utf8")))
        return;
      clearInterval(poll);
      setTimeout(resolve, settleMs);
    }, 100);
    void run.exited.then((e) => {
      clearInterval(poll);
      reject(
        new Error(`hil ended (${e.code ?? e.signal}) before its scenario ran:\n${run.output().slice(-4000)}`),
      );
    });
  });
}

/** The pid of the live process under `tmp` whose program matches (QEMU: /qemu-system/, the device server: /node$/). */
export function pidUnder(tmp: string, program: RegExp): number | undefined {
  const line = processesUsing(tmp).find((p) => program.test(p.split(" ")[1] ?? ""));
  return line ? Number(line.split(" ")[0]) : undefined;
}

/** Waits up to `ms` for no process to use `tmp`; what still does then. */
export async function processesGoneFrom(tmp: string, ms = 10_000): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = processesUsing(tmp);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Runs `command` in the run's guest over SSH, as hil reaches it: the port QEMU forwards (its
 * hostfwd) and the key hil made for this guest (id_ed25519 in the guest's work dir, beside the QMP
 * socket). Does not wait for the command to end (a command that stops the SSH server or the kernel
 * never answers): resolves once it was sent and `waitMs` have passed.
 */
export async function sendToGuest(tmp: string, command: string, waitMs = 2000): Promise<void> {
  const qemu = pidUnder(tmp, /qemu-system/);
  if (qemu === undefined) throw new Error(`no QEMU runs under ${tmp}`);
  const argv = readFileSync(`/proc/${qemu}/cmdline`, "utf8").split("\0");
  const port = Number(/hostfwd=tcp:127\.0\.0\.1:(\d+)-:22/.exec(argv.join(" "))?.[1]);
  const qmp = argv.map((a) => /(?:path=|unix:)([^,]+\/qmp\.sock)/.exec(a)?.[1]).find((p) => p);
  if (!port || !qmp) throw new Error(`QEMU's SSH port or QMP socket not found in: ${argv.join(" ")}`);
  const client = await connectOnce(
    {
      host: "127.0.0.1",
      port,
      username: "root",
      privateKey: readFileSync(join(dirname(qmp), "id_ed25519"), "utf8"),
    },
    20_000,
  );
  try {
    await new Promise<void>((resolve, reject) =>
      client.exec(command, (err) => (err ? reject(err) : resolve())),
    );
    await new Promise((r) => setTimeout(r, waitMs));
  } finally {
    client.end();
    client.destroy();
  }
}

/** The run most faults are made in: `hil run` on debian:6.12, judged under the linux rules. */
export const RUN_612_LINUX = ["run", "--kernel", "debian:6.12", "--rules", "linux"] as const;

/** Starts `hil <args> --run-dir <dir>` (startHil), killed when `t` ends; resolves once its scenario runs. */
export async function startRunningScenario(
  t: Test,
  args: readonly string[],
  dir: string,
  iso: Isolation,
): Promise<LiveRun> {
  const run = startHil([...args, "--run-dir", dir], iso);
  t.teardown(() => void run.child.kill("SIGKILL"));
  await scenarioRunning(run, dir);
  return run;
}

/**
 * The run after a fault, `hil <args> --run-dir <dir>` of drain-qp-idle, which must pass under
 * linux; its time, exit status and verdict go into `row`.
 */
export async function nextRunPasses(
  t: Test,
  row: FaultRow,
  args: readonly string[],
  dir: string,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const started = Date.now();
  const r = await hil([...args, "--run-dir", dir], env);
  row.ms = Date.now() - started;
  row.exit = String(r.exitCode);
  t.equal(r.exitCode, 0, r.stderr.slice(-3000));
  const s = scenarioOf(dir, "drain-qp-idle");
  row.verdict = verdictsOf(s).join(", ");
  t.same(verdictsOf(s), ["linux PASS"]);
}
