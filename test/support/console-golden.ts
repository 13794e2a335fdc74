/**
 * The console parser's golden files: test/fixtures/console/<name>.log is a real captured console
 * log (its first line says how it was captured), <name>.expected.json what the parser must return
 * for it. test/unit/console-golden.test.ts compares the two; this module computes the parse in the
 * stored form and (run by hand) writes it:
 *
 *   node --import tsx test/support/console-golden.ts <name>.log...
 *
 * writes <name>.expected.json next to each log from what the parser returns today. Read the result
 * before committing it: the test only guards what was reviewed here. The capture tool
 * (test/support/console-capture.ts) writes it for a new capture the same way.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type ConsoleEventKind,
  type ConsoleProcess,
  parseBlockedTasks,
  parseConsole,
  type StackFrame,
} from "../../harness/console/parse.ts";
import { HilError } from "../../util/errors.ts";
import { runAsMain } from "./run-main.ts";

export const GOLDEN_DIR = fileURLToPath(new URL("../fixtures/console/", import.meta.url));
const LOG = ".log";
const EXPECTED = ".expected.json";
/** A golden log's first line: how it was captured (written by the capture tool's fixtureHeader). */
export const REAL_HEADER = /^# REAL console log \([\w.-]+\): \S/;

/** A parsed frame written back as the trace shows it: `[? ]fn+0xoff/0xsize [module]`. */
export function renderFrame(f: StackFrame): string {
  const mod = f.module ? ` [${f.module}]` : "";
  return `${f.reliable ? "" : "? "}${f.fn}+0x${f.offset.toString(16)}/0x${f.size.toString(16)}${mod}`;
}

export interface GoldenEvent {
  kind: ConsoleEventKind;
  line: number;
  endLine: number;
  text: string;
  process?: ConsoleProcess;
  at?: string;
  rip?: string;
  message?: string;
  /** the Call Trace lines as the parser kept them */
  trace: string[];
  /** the frames parsed from them, rendered back (a mis-parsed offset or module shows here) */
  frames: string[];
  /** a KASAN or KFENCE report's allocation and free stacks */
  memoryStacks?: Array<{ title: string; trace: string[] }>;
}

export interface GoldenBlockedTask {
  line: number;
  process: ConsoleProcess;
  state: string;
  trace: string[];
  frames: string[];
}

export interface ConsoleGolden {
  events: GoldenEvent[];
  blockedTasks: GoldenBlockedTask[];
}

/** What the parser returns for a log, in the form the .expected.json files hold. */
export function goldenOf(log: string): ConsoleGolden {
  // the members in reading order: what and where first, the stack last
  const golden: ConsoleGolden = {
    events: parseConsole(log).map((e) => ({
      kind: e.kind,
      line: e.line,
      endLine: e.endLine,
      text: e.text,
      process: e.process,
      at: e.at,
      rip: e.rip,
      message: e.message,
      trace: e.trace,
      frames: e.frames.map(renderFrame),
      memoryStacks: e.memoryStacks,
    })),
    blockedTasks: parseBlockedTasks(log).map((b) => ({
      line: b.line,
      process: b.process,
      state: b.state,
      trace: b.trace,
      frames: b.frames.map(renderFrame),
    })),
  };
  // as JSON has it: no undefined members
  return JSON.parse(JSON.stringify(golden)) as ConsoleGolden;
}

export function expectedPathOf(logPath: string): string {
  if (!logPath.endsWith(LOG)) throw new HilError(`not a console log (no ${LOG} suffix): ${logPath}`);
  return `${logPath.slice(0, -LOG.length)}${EXPECTED}`;
}

export interface GoldenFolder {
  /** names (without suffix) that have both files */
  pairs: string[];
  /** logs without an expected file */
  logsWithoutExpected: string[];
  /** expected files without a log */
  expectedWithoutLog: string[];
  /** files that are neither */
  strays: string[];
}

/** The golden folder's contents, paired by name. */
export function listGolden(dir = GOLDEN_DIR): GoldenFolder {
  const files = readdirSync(dir);
  const logs = new Set(files.filter((f) => f.endsWith(LOG)).map((f) => f.slice(0, -LOG.length)));
  const expected = new Set(
    files.filter((f) => f.endsWith(EXPECTED)).map((f) => f.slice(0, -EXPECTED.length)),
  );
  return {
    pairs: [...logs].filter((n) => expected.has(n)).sort(),
    logsWithoutExpected: [...logs].filter((n) => !expected.has(n)).sort(),
    expectedWithoutLog: [...expected].filter((n) => !logs.has(n)).sort(),
    strays: files.filter((f) => !f.endsWith(LOG) && !f.endsWith(EXPECTED)).sort(),
  };
}

export function readGolden(name: string, dir = GOLDEN_DIR): { log: string; expected: ConsoleGolden } {
  const log = readFileSync(join(dir, `${name}${LOG}`), "utf8");
  const path = join(dir, `${name}${EXPECTED}`);
  try {
    return { log, expected: JSON.parse(readFileSync(path, "utf8")) as ConsoleGolden };
  } catch (err) {
    throw new HilError(`the expected parse is not valid JSON: ${(err as Error).message}`, { where: path });
  }
}

/** Writes <name>.expected.json next to a log from what the parser returns for it. */
export function writeExpected(logPath: string): { path: string; golden: ConsoleGolden } {
  const log = readFileSync(logPath, "utf8");
  if (!REAL_HEADER.test(log.split("\n")[0] ?? ""))
    throw new HilError(
      "the first line does not say how the log was captured (# REAL console log (...): ...)",
      {
        where: `${logPath}:1`,
      },
    );
  const out = expectedPathOf(logPath);
  const golden = goldenOf(log);
  // JSON.stringify's layout is one `biome check` accepts as it is
  writeFileSync(out, `${JSON.stringify(golden, null, 2)}\n`);
  return { path: out, golden };
}

/** One line per event and blocked task: what a reviewer checks before committing the expected file. */
export function summarize(g: ConsoleGolden): string {
  const events = g.events.map(
    (e) =>
      `${e.kind} (lines ${e.line}-${e.endLine}): ${e.text}${e.process ? ` [${e.process.comm}:${e.process.pid}]` : ""} ${e.frames.length} frames`,
  );
  const tasks = g.blockedTasks.map(
    (b) =>
      `blocked task (line ${b.line}): ${b.process.comm}:${b.process.pid} ${b.state} ${b.frames.length} frames`,
  );
  return [...events, ...tasks].join("\n");
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv.some((a) => a.startsWith("-"))) {
    process.stderr.write("usage: console-golden.ts <name>.log...  (writes <name>.expected.json)\n");
    return 2;
  }
  for (const logPath of argv) {
    const { path, golden } = writeExpected(logPath);
    process.stdout.write(`${basename(path)}:\n${summarize(golden) || "(no events)"}\n`);
  }
  return 0;
}

runAsMain(import.meta.url, main, 2);
