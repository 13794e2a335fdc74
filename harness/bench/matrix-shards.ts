/**
 * How a plan's night falls with machines, on paper from one run of it: reads a matrix directory
 * (`hil matrix --out`, or `hil merge --out` of its shards), takes each job's wall and suite time, and
 * prints for each shard count the slowest shard (the night), every shard's time, the machine time
 * and the kernel builds, with the kernels built as the run met them and with every kernel cached.
 *
 *   node --import tsx harness/bench/matrix-shards.ts <matrix dir> [--shards 1,2,4,8]
 */
import { parseArgs } from "node:util";
import { HilError, isHilError } from "../../util/errors.ts";
import { loadMatrixDir } from "../workflows/matrix/matrix-dir.ts";
import { estimateShards, kernelCosts, type TimedJob } from "../workflows/matrix/shard-estimate.ts";
import { kernelCount } from "../workflows/matrix/shards.ts";

const minutes = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;

function shardCounts(text: string): number[] {
  const counts = text.split(",").map((s) => Number(s.trim()));
  if (counts.some((n) => !Number.isInteger(n) || n < 1))
    throw new HilError(`--shards ${text}: a comma-separated list of whole numbers >= 1`);
  return counts;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { shards: { type: "string", default: "1,2,4,8" } },
  });
  const dir = positionals[0];
  if (!dir || positionals.length > 1)
    throw new HilError("usage: matrix-shards.ts <matrix dir> [--shards 1,2,4,8]");
  const counts = shardCounts(values.shards as string);
  const matrix = await loadMatrixDir(dir);
  const jobs: TimedJob[] = [];
  for (const { entry, run } of matrix.jobs) {
    if (!run) continue;
    const t = run.record.timings;
    jobs.push({
      id: entry.id,
      spec: entry.spec,
      wallMs: entry.wallMs,
      ...(t ? { suiteMs: t.bootMs + t.runMs + t.judgeMs } : {}),
    });
  }
  const missing = matrix.jobs.length - jobs.length;
  const builds = [...kernelCosts(jobs).values()];
  const lines = [
    `${matrix.index.plan.name}: ${jobs.length} job(s) timed${missing ? `, ${missing} missing (left out)` : ""}, ${kernelCount(jobs)} kernel group(s), ${builds.length} kernel(s) built`,
    `run's machine time ${minutes(jobs.reduce((n, j) => n + j.wallMs, 0))}; kernel builds met in it ${minutes(builds.reduce((n, b) => n + b.buildMs, 0))}`,
    "",
    "| machines | night (slowest shard) | speed-up | machine time | builds | each shard | night, kernels cached |",
    "|---|---|---|---|---|---|---|",
  ];
  const one = estimateShards(jobs, 1).wallMs;
  for (const n of counts) {
    const e = estimateShards(jobs, n);
    const warm = estimateShards(jobs, n, true);
    lines.push(
      `| ${n} | ${minutes(e.wallMs)} | ${(one / e.wallMs).toFixed(2)}x | ${minutes(e.machineMs)} | ${e.builds} | ${e.shardMs.map((ms) => (ms / 60_000).toFixed(1)).join(" / ")} | ${minutes(warm.wallMs)} |`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((err) => {
  process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
  process.exit(1);
});
