/**
 * What a night of a plan takes on N machines, worked out from one run's per-job times: the jobs
 * dealt as `hil matrix --shard i/N` deals them (dealShards), each shard's time the sum of its jobs'
 * time plus one build of each kernel it boots. A job's preparation (its record's prepareMs: the
 * kernel, image and module made or found in the cache) is where the first job of a kernel pays the
 * kernel's build, so a kernel's build is its largest preparation less its usual one (the median).
 * A kernel split over several shards is built on each of them.
 */

import { median } from "../../../util/median.ts";
import { withDriverFragment } from "../../scenario/drivers.ts";
import type { JobSpec } from "../job/job.ts";
import type { MatrixJob } from "./plan.ts";
import { dealShards, kernelKey } from "./shards.ts";

export interface TimedJob extends MatrixJob {
  wallMs: number;
  /** the part of wallMs spent making the guest's kernel, image and module ready; absent: none known */
  prepareMs?: number;
}

export interface ShardEstimate {
  shards: number;
  /** each shard's time, shard 1 first */
  shardMs: number[];
  /** the night: the slowest shard */
  wallMs: number;
  /** every shard's time added up: the machine time the night costs */
  machineMs: number;
  /** kernel builds the shards do between them (a kernel split over k shards counts k) */
  builds: number;
}

/** The kernel a job actually boots: its configs with the fragment its driver needs (rxe). */
function builtKernelKey(spec: JobSpec): string {
  return kernelKey({ ...spec, configs: withDriverFragment(spec.configs ?? [], spec.driver) });
}

/** Each built kernel's build time (its largest preparation less the median one) and usual preparation. */
export function kernelCosts(jobs: readonly TimedJob[]): Map<string, { buildMs: number; prepMs: number }> {
  const preps = new Map<string, number[]>();
  for (const j of jobs) {
    const key = builtKernelKey(j.spec);
    preps.set(key, [...(preps.get(key) ?? []), Math.min(j.prepareMs ?? 0, j.wallMs)]);
  }
  const costs = new Map<string, { buildMs: number; prepMs: number }>();
  for (const [key, ms] of preps) {
    const prepMs = median(ms);
    costs.set(key, { buildMs: Math.max(...ms) - prepMs, prepMs });
  }
  return costs;
}

/** The night on `count` machines; `warm`: the runners have every kernel cached (no build). */
export function estimateShards(jobs: readonly TimedJob[], count: number, warm = false): ShardEstimate {
  const costs = kernelCosts(jobs);
  const owner = dealShards(jobs, count);
  const shardMs = Array.from({ length: count }, () => 0);
  const built = Array.from({ length: count }, () => new Set<string>());
  for (const j of jobs) {
    const s = (owner.get(j.id) ?? 1) - 1;
    const key = builtKernelKey(j.spec);
    const cost = costs.get(key) ?? { buildMs: 0, prepMs: 0 };
    shardMs[s] = (shardMs[s] ?? 0) + j.wallMs - Math.min(j.prepareMs ?? 0, j.wallMs) + cost.prepMs;
    if (!warm && !built[s]?.has(key)) {
      built[s]?.add(key);
      shardMs[s] = (shardMs[s] ?? 0) + cost.buildMs;
    }
  }
  return {
    shards: count,
    shardMs,
    wallMs: Math.max(...shardMs),
    machineMs: shardMs.reduce((a, b) => a + b, 0),
    builds: warm ? 0 : built.reduce((n, b) => n + b.size, 0),
  };
}

/**
 * A weight for each kernel group (kernelKey) from the run's job times: the group's median job time
 * over the median of the groups' medians, to the nearest half (at least a half): what a plan's
 * kernel entry can give as `weight` so that shards are dealt by time rather than by count.
 */
export function suggestedWeights(jobs: readonly TimedJob[]): Map<string, number> {
  const times = new Map<string, number[]>();
  for (const j of jobs)
    times.set(kernelKey(j.spec), [...(times.get(kernelKey(j.spec)) ?? []), j.wallMs - (j.prepareMs ?? 0)]);
  const medians = new Map([...times].map(([key, ms]) => [key, median(ms)]));
  const reference = median([...medians.values()]);
  return new Map(
    [...medians].map(([key, m]) => [
      key,
      reference > 0 ? Math.max(0.5, Math.round((2 * m) / reference) / 2) : 1,
    ]),
  );
}
