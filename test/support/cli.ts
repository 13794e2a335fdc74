import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import type { Test } from "tap";
import { processExists } from "./guest.ts";

export const HIL_BIN = fileURLToPath(new URL("../../bin/hil", import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `hil` command as a user would. */
export async function hil(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  opts: { timeoutMs?: number } = {},
): Promise<CliResult> {
  const r = await execa(HIL_BIN, [...args], {
    reject: false,
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stripFinalNewline: false,
    // a command that builds a kernel nothing cached: minutes, tens of them on 2 busy cores
    timeout: opts.timeoutMs ?? 30 * 60_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** A private TMPDIR for one test's hil runs, so what they leave behind is told apart from what
 * other work on the machine (another test file, another guest) has running or on disk. */
export interface Isolation {
  tmp: string;
  env: NodeJS.ProcessEnv;
}

const isolations: string[] = [];
// what the runs leave there once checked (tsx's cache above all) goes when the test file ends
process.on("exit", () => {
  for (const dir of isolations) rmSync(dir, { recursive: true, force: true });
});

export function isolate(): Isolation {
  const tmp = mkdtempSync(join(tmpdir(), "hil-test-"));
  isolations.push(tmp);
  return { tmp, env: { TMPDIR: tmp } };
}

/** TMPDIR points at a private dir (isolate()) while `t` runs, so what its guest leaves is told apart
 * from what other work on the machine has there. */
export function isolatedTmp(t: Test): Isolation {
  const iso = isolate();
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = iso.tmp;
  t.teardown(() => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  });
  return iso;
}

/** One hil run in a test: its result, its run dir, and how long the command took. */
export interface HilRun {
  r: CliResult;
  dir: string;
  ms: number;
}

/**
 * An isolated TMPDIR (isolate()) and the test's fresh testdir (`root`, holding `fixture`), for a
 * test that writes its inputs there first or runs hil more than once: `run(name, args)` runs
 * `hil <args> --run-dir <root>/<name>`.
 */
export function hilRuns(
  t: Test,
  fixture: Parameters<Test["testdir"]>[0] = {},
): { iso: Isolation; root: string; run: (name: string, args: readonly string[]) => Promise<HilRun> } {
  const iso = isolate();
  const root = t.testdir(fixture);
  return {
    iso,
    root,
    run: async (name, args) => {
      const dir = join(root, name);
      const started = Date.now();
      const r = await hil([...args, "--run-dir", dir], iso.env);
      return { r, dir, ms: Date.now() - started };
    },
  };
}

/**
 * Runs `hil <args> --run-dir <dir>` isolated (isolate()), `dir` a "run" folder under the test's
 * fresh testdir, for a test that then reads the run dir and checks what the run left behind.
 */
export async function hilWithRunDir(
  args: readonly string[],
  t: Test,
): Promise<{ iso: Isolation; dir: string; r: CliResult }> {
  const { iso, run } = hilRuns(t);
  const { dir, r } = await run("run", args);
  return { iso, dir, r };
}

/** fixtures/scenarios/<name>.yaml as it is written, for a test that runs a changed copy of it. */
export function fixtureScenario(name: string): string {
  return readFileSync(join(REPO_ROOT, "fixtures/scenarios", `${name}.yaml`), "utf8");
}

/** Live processes (QEMU, device servers) whose command line names a file under `dir`. */
export function processesUsing(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (cmdline.includes(`${dir}/`) && processExists(Number(name)))
        found.push(`${name} ${cmdline.split("\0").slice(0, 3).join(" ")}`);
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

/** What an isolated run left: processes using its TMPDIR and entries in it (tsx's own cache aside). */
export function leftovers(iso: Isolation): { processes: string[]; entries: string[] } {
  return {
    processes: processesUsing(iso.tmp),
    entries: readdirSync(iso.tmp).filter((n) => !n.startsWith("tsx-")),
  };
}

/** A test that ran hil under `iso` left no QEMU, no device server and no temp dir behind; its temp dir goes. */
export function expectNothingLeft(t: Test, iso: Isolation): void {
  const left = leftovers(iso);
  t.same(left.processes, [], "no QEMU or device server left running");
  t.same(left.entries, [], "no temp dir left");
  rmSync(iso.tmp, { recursive: true, force: true });
}
