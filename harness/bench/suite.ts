/**
 * The drain suite's own speed: runs `hil run` (the starter suite on one warm guest; any extra
 * arguments are passed on, e.g. --executor user) into a scratch run directory and prints scenarios
 * per second and how the wall time splits between building/booting, executing and judging.
 *
 *   node --import tsx harness/bench/suite.ts [-- hil run arguments...]
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readRunRecord } from "../rundir/read.ts";

const HIL = fileURLToPath(new URL("../../bin/hil", import.meta.url));

async function main(): Promise<void> {
  const extra = process.argv.slice(2).filter((a) => a !== "--");
  const dir = mkdtempSync(join(tmpdir(), "hil-bench-suite-"));
  try {
    const started = Date.now();
    const code = await new Promise<number>((resolve) => {
      const child = execFile(HIL, ["run", "--run-dir", dir, ...extra], { maxBuffer: 64 << 20 }, (err) =>
        resolve(err && typeof err.code === "number" ? err.code : 0),
      );
      child.stderr?.pipe(process.stderr);
    });
    const wall = Date.now() - started;
    const r = await readRunRecord(dir);
    const scenarios = r.scenarios ?? [];
    const { bootMs, runMs, judgeMs } = r.timings ?? { bootMs: 0, runMs: 0, judgeMs: 0 };
    const ran = scenarios.filter((s) => s.outcome === undefined).length;
    const other = Math.max(0, wall - bootMs - runMs - judgeMs);
    const pct = (ms: number) => `${((100 * ms) / wall).toFixed(1)}%`.padStart(7);
    const line = (label: string, ms: number) =>
      `${label.padEnd(36)}${(ms / 1000).toFixed(2).padStart(8)} s${pct(ms)}`;
    process.stdout.write(
      [
        `hil run ${extra.join(" ")} (Linux ${r.release}, ${r.executor} executor): exit ${code}`,
        `${ran} of ${scenarios.length} scenarios ran on ${r.boots} boot(s): ${(ran / (runMs / 1000)).toFixed(2)} scenarios/s executing, ${(ran / (wall / 1000)).toFixed(2)} scenarios/s overall`,
        "",
        line("wall (the whole command)", wall),
        line("boot (guest up, device probes)", bootMs),
        line("execution (scenarios in the guest)", runMs),
        line("judging (oracle)", judgeMs),
        line("the rest (cache checks, reporting)", other),
        "",
      ].join("\n"),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
