// Sharding a plan for a CI matrix: --shard i/n parses strictly; shards are dealt by kernel (a
// kernel's jobs on one shard when there are no more shards than kernels, one kernel a shard when
// there are more), as even by job count as that allows, deterministic (the same shards whatever
// order the plan lists its axes in), disjoint, and together every job exactly once.
import t from "tap";
import {
  expandPlan,
  type MatrixJob,
  type PlanSpec,
  parseShard,
  planHash,
} from "../../harness/workflows/matrix/plan.ts";
import {
  dealShards,
  kernelCount,
  kernelKey,
  packGroups,
  shardJobs,
  shareShards,
} from "../../harness/workflows/matrix/shards.ts";
import { HilError } from "../../util/errors.ts";
import { thrownMessage } from "../support/unit-errors.ts";

const PLAN = {
  kernels: ["debian:6.1", "debian:6.12", "debian:7.2"],
  drivers: ["erdma", "siw"] as ("erdma" | "siw")[],
  device_profiles: ["erdma-reflush", "erdma-2022", "erdma-ib-compliant"],
  executors: ["kernel", "user"] as ("kernel" | "user")[],
  scenarios: ["drain-*", "post-*", "fault-*"],
};

/**
 * Five kernels of unequal job counts: 6.1 (user executor excluded) 9 jobs, 7.2 (siw excluded)
 * 12, and three builds of 6.12 (plain, + smp, + a series) 18 each: 75 jobs.
 */
const KERNELS: PlanSpec = {
  kernels: [
    "debian:6.1",
    "debian:6.12",
    { base: "debian:6.12", configs: ["smp"] },
    { base: "debian:6.12", series: "fix.mbox" },
    "debian:7.2",
  ],
  drivers: ["erdma", "siw"],
  device_profiles: ["erdma-reflush", "erdma-2022"],
  executors: ["kernel", "user"],
  scenarios: ["drain-*", "post-*", "fault-*"],
  exclude: [
    { kernel: "debian:6.1", executor: "user" },
    { kernel: "debian:7.2", driver: "siw" },
  ],
};

const ids = (js: MatrixJob[]) => js.map((j) => j.id);
const shardsOf = (jobs: MatrixJob[], n: number) =>
  Array.from({ length: n }, (_, i) => shardJobs(jobs, { index: i + 1, count: n }));

t.test("--shard i/n", async (t) => {
  t.same(parseShard("1/4"), { index: 1, count: 4 });
  t.same(parseShard(" 4/4 "), { index: 4, count: 4 });
  for (const bad of ["0/4", "5/4", "1/0", "a/b", "1", "1/2/3", "-1/2", ""])
    t.throws(() => parseShard(bad), HilError, `"${bad}" is refused`);
  t.match(
    thrownMessage(() => parseShard("3/2")),
    /expected i\/n with 1 <= i <= n/,
  );
});

t.test("every job in exactly one shard, for n = 1..jobs+1", async (t) => {
  for (const plan of [PLAN, KERNELS]) {
    const { jobs } = expandPlan(plan);
    for (const n of [1, 2, 3, 4, 5, 6, 7, 11, jobs.length, jobs.length + 1]) {
      const all = shardsOf(jobs, n)
        .flat()
        .map((j) => j.id);
      t.equal(all.length, jobs.length, `n=${n}: no job twice, none lost`);
      t.same(new Set(all), new Set(jobs.map((j) => j.id)), `n=${n}: the union is the plan`);
    }
    t.same(shardJobs(jobs, undefined), jobs, "no shard: the whole plan");
  }
});

t.test("a plan of several kernels: each shard builds the fewest kernels", async (t) => {
  const { jobs } = expandPlan(KERNELS);
  t.equal(jobs.length, 75);
  const sizeOf = new Map<string, number>();
  for (const j of jobs) sizeOf.set(kernelKey(j.spec), (sizeOf.get(kernelKey(j.spec)) ?? 0) + 1);
  t.same(
    [...sizeOf.values()].sort((a, b) => a - b),
    [9, 12, 18, 18, 18],
    "five kernels: 9, 12, 18, 18, 18 jobs",
  );

  for (let n = 1; n <= 5; n++) {
    const shards = shardsOf(jobs, n);
    const built = shards.map(kernelCount);
    t.equal(
      built.reduce((a, b) => a + b, 0),
      5,
      `n=${n}: each kernel built on one shard only (kernels a shard: ${built.join(",")})`,
    );
    t.ok(
      shards.every((s) => s.length > 0),
      `n=${n}: no shard idle`,
    );
  }
  // the job counts as even as whole kernels allow (the smallest largest shard, by exhaustive search)
  t.same(
    shardsOf(jobs, 1).map((s) => s.length),
    [75],
  );
  const sizes = (n: number) =>
    shardsOf(jobs, n)
      .map((s) => s.length)
      .sort((a, b) => a - b);
  t.same(sizes(2), [36, 39], "18+18 | 18+12+9");
  t.same(sizes(3), [18, 27, 30], "18 | 18+9 | 18+12");
  t.same(sizes(4), [18, 18, 18, 21], "the two smallest kernels share a shard");
  t.same(sizes(5), [9, 12, 18, 18, 18], "one kernel a shard");

  for (const n of [6, 8, 11, 75]) {
    const shards = shardsOf(jobs, n);
    t.ok(
      shards.every((s) => kernelCount(s) === 1),
      `n=${n}: more shards than kernels, each shard builds one kernel`,
    );
    t.ok(
      shards.every((s) => s.length > 0),
      `n=${n}: no shard idle`,
    );
  }
  // 8 shards: 3 spare go to the 18-job kernels (9 a shard), the 12 and 9 keep one each
  t.same(
    shardsOf(jobs, 8)
      .map((s) => s.length)
      .sort((a, b) => a - b),
    [9, 9, 9, 9, 9, 9, 9, 12],
  );
});

t.test("packGroups finds the most even packing of whole groups", async (t) => {
  // greedy largest-first gives 7/5 here; the best is 6/6
  const shard = packGroups([3, 3, 2, 2, 2], 2);
  const loads = [0, 0];
  [3, 3, 2, 2, 2].forEach((s, k) => {
    loads[shard[k] ?? 0] = (loads[shard[k] ?? 0] ?? 0) + s;
  });
  t.same(loads, [6, 6]);
  // against every packing of small cases (a fixed pseudo-random sequence)
  let seed = 7;
  const rand = (m: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return 1 + (seed % m);
  };
  for (let trial = 0; trial < 60; trial++) {
    const k = 2 + (trial % 5);
    const sizes = Array.from({ length: k }, () => rand(20));
    for (let n = 1; n <= k; n++) {
      const got = packGroups(sizes, n);
      const load = Array.from({ length: n }, () => 0);
      sizes.forEach((s, g) => {
        load[got[g] ?? 0] = (load[got[g] ?? 0] ?? 0) + s;
      });
      let best = Number.POSITIVE_INFINITY;
      for (let code = 0; code < n ** k; code++) {
        const l = Array.from({ length: n }, () => 0);
        let c = code;
        for (const s of sizes) {
          l[c % n] = (l[c % n] ?? 0) + s;
          c = Math.floor(c / n);
        }
        if (l.every((x) => x > 0)) best = Math.min(best, Math.max(...l));
      }
      if (Math.max(...load) !== best || load.some((x) => x === 0))
        t.fail(`sizes ${sizes} on ${n}: got ${load}, best max ${best}`);
    }
  }
  t.pass("60 random cases: as even as the best packing, no shard empty");
});

t.test("shareShards: spare shards to the kernels with the most jobs a shard", async (t) => {
  t.same(shareShards([90, 2], 4), [3, 1], "90 jobs on 3 shards (30 each), 2 on one");
  t.same(shareShards([1, 1], 5), [1, 1], "never more shards than jobs");
  t.same(shareShards([18, 18, 12], 5), [2, 2, 1]);
});

t.test("deterministic: the same shards from a reordered plan", async (t) => {
  for (const plan of [PLAN, KERNELS]) {
    const a = expandPlan(plan).jobs;
    const b = expandPlan({
      ...plan,
      kernels: [...plan.kernels].reverse(),
      drivers: [...(plan.drivers ?? [])].reverse(),
      device_profiles: [...(plan.device_profiles ?? [])].reverse(),
      scenarios: [...plan.scenarios].reverse(),
    }).jobs;
    for (const n of [2, 3, 4, 7])
      for (let i = 1; i <= n; i++)
        t.same(
          ids(shardJobs(b, { index: i, count: n })),
          ids(shardJobs(a, { index: i, count: n })),
          `shard ${i}/${n}`,
        );
    t.same(dealShards(a, 3), dealShards(a, 3), "twice the same");
  }
});

t.test("a kernel's weight deals its jobs as that many jobs each", async (t) => {
  // three kernels of 6 jobs each; the debug one's jobs take three times as long
  const plan = (debugWeight?: number): MatrixJob[] =>
    expandPlan({
      kernels: [
        "debian:6.1",
        "debian:6.12",
        { base: "debian:6.12", configs: ["debug"], ...(debugWeight ? { weight: debugWeight } : {}) },
      ],
      drivers: ["erdma"],
      device_profiles: ["erdma-reflush"],
      executors: ["kernel", "user"],
      scenarios: ["drain-*", "post-*", "fault-*"],
    }).jobs;
  const kernelsOf = (shard: MatrixJob[]) => [...new Set(shard.map((j) => kernelKey(j.spec)))].length;
  const debugShard = (jobs: MatrixJob[], n: number) =>
    shardsOf(jobs, n).map((s) => s.filter((j) => j.spec.configs?.includes("debug")).length);

  const counted = shardsOf(plan(), 2).map((s) => s.length);
  t.same([...counted].sort(), [12, 6], "by count: two kernels on one shard");
  t.same(debugShard(plan(), 2).sort(), [0, 6]);
  const weighted = shardsOf(plan(3), 2);
  const alone = weighted.find((s) => s.some((j) => j.spec.configs?.includes("debug")));
  t.equal(alone?.length, 6, "weight 3: the debug kernel's 6 jobs (18 units) have a shard of their own");
  t.equal(kernelsOf(alone ?? []), 1);
  t.ok(
    plan(3).every((j) => (j.spec.configs?.includes("debug") ? j.weight === 3 : j.weight === undefined)),
    "each job carries its kernel's weight",
  );
  // 5 shards for 3 kernels: by count each kernel gets the spare alike; weighted, debug takes both
  t.same(debugShard(plan(3), 5).filter((n) => n > 0).length, 3, "the heavy kernel gets the spare shards");
  t.not(planHash(plan(3)), planHash(plan()), "a weight changes the plan's hash: its shards are not joined");
  t.same(shareShards([6, 6], 4, [1, 3]), [1, 3]);
});
