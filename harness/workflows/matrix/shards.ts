/**
 * Shards of a plan for CI systems that run one shard a machine: the jobs are dealt by kernel, so
 * the jobs that boot one kernel (base, series, config fragments) run on as few machines as can be
 * and each machine builds only the kernels of its own jobs. Deterministic: the same job list gives
 * the same shards whatever order the plan lists its axes in, and every job is in exactly one shard.
 */
import type { JobSpec } from "../job/job.ts";
import type { MatrixJob, Shard } from "./plan.ts";

/** The kernel a job boots: jobs with the same one share its build. */
export function kernelKey(spec: Pick<JobSpec, "kernel" | "series" | "configs">): string {
  return JSON.stringify([spec.kernel, spec.series ?? "", spec.configs ?? []]);
}

/** How many kernels these jobs boot (a shard of them builds that many). */
export function kernelCount(jobs: readonly MatrixJob[]): number {
  return new Set(jobs.map((j) => kernelKey(j.spec))).size;
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Search nodes spent looking for a better packing than the greedy one (a plan has few kernels). */
const PACK_SEARCH_NODES = 200_000;

/**
 * Whole groups of these sizes on `count` shards (count <= groups), every shard given at least one,
 * with the largest shard as small as can be: the greedy packing (largest group first to the
 * emptiest shard, the lowest index on a tie), then a depth-first search for a packing with a
 * smaller largest shard, bounded by PACK_SEARCH_NODES. Returns the shard (0-based) of each group.
 */
export function packGroups(sizes: readonly number[], count: number): number[] {
  const order = sizes.map((_, k) => k).sort((a, b) => (sizes[b] ?? 0) - (sizes[a] ?? 0) || a - b);
  const load = Array.from({ length: count }, () => 0);
  let best = sizes.map(() => 0);
  for (const k of order) {
    const shard = load.indexOf(Math.min(...load));
    best[k] = shard;
    load[shard] = (load[shard] ?? 0) + (sizes[k] ?? 0);
  }
  let bestMax = Math.max(...load);
  const total = sizes.reduce((a, b) => a + b, 0);
  // whole-number sizes (job counts) pack into a whole-number largest shard
  const even = sizes.every(Number.isInteger) ? Math.ceil(total / count) : total / count;
  const floor = Math.max(even, ...sizes);
  if (bestMax === floor) return best;

  load.fill(0);
  const assign = sizes.map(() => -1);
  let nodes = 0;
  const search = (depth: number, empty: number): void => {
    if (++nodes > PACK_SEARCH_NODES || bestMax === floor) return;
    if (depth === order.length) {
      bestMax = Math.max(...load);
      best = [...assign];
      return;
    }
    const k = order[depth] as number;
    const size = sizes[k] ?? 0;
    const tried = new Set<number>();
    for (let s = 0; s < count; s++) {
      const l = load[s] ?? 0;
      // shards with the same load are alike for what is left; every shard must end up with a group
      if (tried.has(l) || l + size >= bestMax || (l > 0 && order.length - depth - 1 < empty)) continue;
      tried.add(l);
      load[s] = l + size;
      assign[k] = s;
      search(depth + 1, l === 0 ? empty - 1 : empty);
      load[s] = l;
    }
  };
  search(0, count);
  return best;
}

/**
 * How many shards each group gets when there are more shards than groups: one each, then each spare
 * shard to the group with the most work per shard (jobs per shard times the group's job weight; the
 * first on a tie), never more shards than jobs.
 */
export function shareShards(
  sizes: readonly number[],
  count: number,
  jobWeights?: readonly number[],
): number[] {
  const shares = sizes.map(() => 1);
  const perShard = (k: number) => Math.ceil((sizes[k] ?? 0) / (shares[k] ?? 1)) * (jobWeights?.[k] ?? 1);
  for (let spare = count - sizes.length; spare > 0; spare--) {
    let pick = -1;
    sizes.forEach((size, k) => {
      if ((shares[k] ?? 1) < size && (pick < 0 || perShard(k) > perShard(pick))) pick = k;
    });
    if (pick < 0) break;
    shares[pick] = (shares[pick] ?? 1) + 1;
  }
  return shares;
}

/**
 * Deals the jobs to `count` shards; returns job id -> shard (1..count). A kernel's jobs are its
 * group, groups in kernel order and jobs in id order. With no more shards than kernels, whole
 * groups go to shards (packGroups): each kernel is built on one shard only, every shard gets one,
 * and the shards' work (jobs, each counted by its weight: 1 unless its kernel entry gives one) is
 * as even as whole groups allow. With more shards than kernels, each shard builds one kernel: a
 * group gets shards in proportion to its work (shareShards) and its jobs are dealt round-robin
 * among them.
 */
export function dealShards(jobs: readonly MatrixJob[], count: number): Map<string, number> {
  const groups = new Map<string, MatrixJob[]>();
  for (const j of [...jobs].sort((a, b) => byText(a.id, b.id))) {
    const key = kernelKey(j.spec);
    groups.set(key, [...(groups.get(key) ?? []), j]);
  }
  const groupJobs = [...groups.entries()].sort(([a], [b]) => byText(a, b)).map(([, group]) => group);
  const ordered = groupJobs.map((group) => group.map((j) => j.id));
  const work = groupJobs.map((group) => group.reduce((n, j) => n + (j.weight ?? 1), 0));
  const owner = new Map<string, number>();
  if (count <= ordered.length) {
    const shardOf = packGroups(work, count);
    ordered.forEach((ids, k) => {
      for (const id of ids) owner.set(id, (shardOf[k] ?? 0) + 1);
    });
    return owner;
  }
  const shares = shareShards(
    ordered.map((ids) => ids.length),
    count,
    groupJobs.map((group) => Math.max(...group.map((j) => j.weight ?? 1))),
  );
  let first = 1;
  ordered.forEach((ids, k) => {
    const n = shares[k] ?? 1;
    ids.forEach((id, i) => {
      owner.set(id, first + (i % n));
    });
    first += n;
  });
  return owner;
}

/** The jobs of shard i/n (dealShards), in the order given. */
export function shardJobs<T extends MatrixJob>(jobs: readonly T[], shard: Shard | undefined): T[] {
  if (!shard) return [...jobs];
  const owner = dealShards(jobs, shard.count);
  return jobs.filter((j) => owner.get(j.id) === shard.index);
}
