/**
 * How a plan's night falls with machines, on paper from one run of it: reads a matrix directory
 * (`hil matrix --out`, or `hil merge --out` of its shards), takes each job's wall and suite time, and
 * prints for each shard count the slowest shard (the night), every shard's time, the machine time
 * and the kernel builds, with the kernels built as the run met them and with every kernel cached;
 * then the kernel weights the job times suggest and the same table with shards dealt by them.
 *
 *   node --import tsx harness/bench/matrix-shards.ts <matrix dir> [--shards 1,2,4,8]
 */
import { parseArgs } from "node:util";
import { HilError, isHilError } from "../../util/errors.ts";
import { loadMatrixDir } from "../workflows/matrix/matrix-dir.ts";
import {
  estimateShards,
  kernelCosts,
  suggestedWeights,
  type TimedJob,
} from "../workflows/matrix/shard-estimate.ts";
import { kernelCount, kernelKey } from "../workflows/matrix/shards.ts";

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
  const planWeight = new Map(matrix.index.plan.jobs.map((j) => [j.id, j.weight]));
  const jobs: TimedJob[] = [];
  for (const { entry, run } of matrix.jobs) {
    if (!run) continue;
    const weight = planWeight.get(entry.id);
    jobs.push({
      id: entry.id,
      spec: entry.spec,
      ...(weight ? { weight } : {}),
      wallMs: entry.wallMs,
      ...(run.record.prepareMs !== undefined ? { prepareMs: run.record.prepareMs } : {}),
    });
  }
  const missing = matrix.jobs.length - jobs.length;
  const builds = [...kernelCosts(jobs).values()];
  const lines = [
    `${matrix.index.plan.name}: ${jobs.length} job(s) timed${missing ? `, ${missing} missing (left out)` : ""}, ${kernelCount(jobs)} kernel group(s), ${builds.length} kernel(s) built`,
    `run's machine time ${minutes(jobs.reduce((n, j) => n + j.wallMs, 0))}; kernel builds met in it ${minutes(builds.reduce((n, b) => n + b.buildMs, 0))}`,
  ];
  const table = (timed: readonly TimedJob[]) => {
    const rows = [
      "| machines | night (slowest shard) | speed-up | machine time | builds | each shard | night, kernels cached |",
      "|---|---|---|---|---|---|---|",
    ];
    const one = estimateShards(timed, 1).wallMs;
    for (const n of counts) {
      const e = estimateShards(timed, n);
      const warm = estimateShards(timed, n, true);
      rows.push(
        `| ${n} | ${minutes(e.wallMs)} | ${(one / e.wallMs).toFixed(2)}x | ${minutes(e.machineMs)} | ${e.builds} | ${e.shardMs.map((ms) => (ms / 60_000).toFixed(1)).join(" / ")} | ${minutes(warm.wallMs)} |`,
      );
    }
    return rows;
  };
  const weights = suggestedWeights(jobs);
  const weighted = jobs.map((j) => ({ ...j, weight: weights.get(kernelKey(j.spec)) ?? 1 }));
  lines.push(
    "",
    "Shards dealt as the plan deals them:",
    ...table(jobs),
    "",
    "Kernel weights the job times suggest (a kernel entry's `weight:` in the plan):",
    ...[...weights].map(([key, w]) => `  ${key}: ${w}`),
    "",
    "Shards dealt by those weights:",
    ...table(weighted),
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((err) => {
  process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
  process.exit(1);
});
