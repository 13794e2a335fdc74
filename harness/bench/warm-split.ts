/**
 * Where a warm `hil run` spends its wall time, seen from outside: the command is run into a
 * scratch run directory (extra arguments are passed on), each progress line on its stderr is
 * stamped with the time since the start, and the run record adds what the lines cannot say (each
 * scenario's time on its guest). Prints the phases in order: start-up and the cache checks up to
 * the suite, the device servers, each guest's boot, the probe stage and the scenarios up to the
 * suite's end, and the end (verdicts, the table); then the scenarios' time on their guests and
 * the longest of them.
 *
 *   node --import tsx harness/bench/warm-split.ts [-- hil run arguments...]
 *
 * The phases come from progress lines: `[suite] ... ...` (the suite starts), `[device] ...: server
 * pid` (a device server listens), `[guest] booting (...): SSH on ... after` (a guest answers), the
 * suite's last line and `[run] run directory`. Without a line a phase is "-".
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { packagePath } from "../../util/package.ts";
import { readRunRecord } from "../rundir/read.ts";

export interface StampedLine {
  ms: number;
  text: string;
}

/** The phase boundaries found in a run's stamped progress lines (ms since the start). */
export interface WarmPhases {
  suiteStart?: number;
  devicesUp: number[];
  guestsUp: number[];
  suiteEnd?: number;
  runDir?: number;
  exit: number;
}

export function phasesOf(lines: readonly StampedLine[], exitMs: number): WarmPhases {
  const first = (re: RegExp) => lines.find((l) => re.test(l.text))?.ms;
  const all = (re: RegExp) => lines.filter((l) => re.test(l.text)).map((l) => l.ms);
  return {
    ...optional("suiteStart", first(/^\[suite\] .* \.\.\.$/)),
    devicesUp: all(/^\[device\] .*: server pid \d+/),
    guestsUp: all(/^\[guest\] booting \(.*\): SSH on /),
    ...optional("suiteEnd", first(/^\[suite\] .*: \d+ (scenario|run)\(s\).* boot\(s\) in /)),
    ...optional("runDir", first(/^\[run\] run directory: /)),
    exit: exitMs,
  };
}

function optional<K extends string>(key: K, value: number | undefined): { [k in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [k in K]?: number };
}

/** The phases as rows: what, from, to (ms), in order. */
export function phaseRows(p: WarmPhases): { what: string; from?: number; to?: number }[] {
  const lastDevice = p.devicesUp.length ? Math.max(...p.devicesUp) : undefined;
  const firstGuest = p.guestsUp.length ? Math.min(...p.guestsUp) : undefined;
  const lastGuest = p.guestsUp.length ? Math.max(...p.guestsUp) : undefined;
  return [
    { what: "start-up, cache checks, scenario selection", from: 0, ...optional("to", p.suiteStart) },
    { what: "device servers started", ...optional("from", p.suiteStart), ...optional("to", lastDevice) },
    {
      what: "guest boot (QEMU start to first SSH command)",
      ...optional("from", lastDevice),
      ...optional("to", firstGuest),
    },
    {
      what: "  the other guests' boots (meanwhile, the first one works)",
      ...optional("from", firstGuest),
      ...optional("to", lastGuest),
    },
    {
      what: "probe stage, executor load, scenarios",
      ...optional("from", firstGuest),
      ...optional("to", p.suiteEnd),
    },
    { what: "verdicts, report, exit", ...optional("from", p.suiteEnd), to: p.exit },
  ];
}

function stampedRun(
  args: readonly string[],
): Promise<{ lines: StampedLine[]; exitMs: number; code: number }> {
  const started = Date.now();
  const child = spawn(packagePath("bin", "hil"), [...args], { stdio: ["ignore", "ignore", "pipe"] });
  const lines: StampedLine[] = [];
  let partial = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    for (const text of parts) lines.push({ ms: Date.now() - started, text });
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ lines, exitMs: Date.now() - started, code: code ?? -1 }));
  });
}

const s = (ms: number | undefined) => (ms === undefined ? "     -" : (ms / 1000).toFixed(2).padStart(6));

async function main(): Promise<void> {
  const extra = process.argv.slice(2).filter((a) => a !== "--");
  const dir = mkdtempSync(join(tmpdir(), "hil-bench-warm-"));
  try {
    const run = await stampedRun(["run", "--run-dir", join(dir, "run"), ...extra]);
    const phases = phasesOf(run.lines, run.exitMs);
    const record = await readRunRecord(join(dir, "run"));
    const scenarios = (record.scenarios ?? []).filter((x) => x.durationMs !== undefined);
    const inGuest = scenarios.reduce((sum, x) => sum + (x.durationMs ?? 0), 0);
    const longest = [...scenarios].sort((a, b) => (b.durationMs ?? 0) - (a.durationMs ?? 0)).slice(0, 6);
    const lines = [
      `hil run ${extra.join(" ")}: exit ${run.code}, ${s(run.exitMs).trim()} s wall, ${record.boots ?? 0} boot(s)`,
      "",
      `${"phase".padEnd(62)}  from     to  length (s)`,
      ...phaseRows(phases).map(
        (r) =>
          `${r.what.padEnd(62)}${s(r.from)} ${s(r.to)} ${r.from !== undefined && r.to !== undefined ? s(r.to - r.from) : s(undefined)}`,
      ),
      "",
      `scenarios on their guests (observe to verdict), summed over the guests: ${s(inGuest).trim()} s for ${scenarios.length}`,
      `the longest: ${longest.map((x) => `${x.name} ${s(x.durationMs).trim()}`).join(", ")}`,
      `the record's own split (summed over guests): boot+probe ${s(record.timings?.bootMs).trim()} s, execution ${s(record.timings?.runMs).trim()} s, judging ${s(record.timings?.judgeMs).trim()} s`,
      "",
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// run as a script, not when a test imports phasesOf
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
