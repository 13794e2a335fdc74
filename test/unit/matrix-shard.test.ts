// Sharding a plan for a CI matrix: --shard i/n parses strictly; shards are deterministic (the
// same plan gives the same shards, whatever order the plan lists its axes in), disjoint, cover
// every job exactly once, and are balanced within one job.
import t from "tap";
import { expandPlan, type MatrixJob, parseShard, shardJobs } from "../../harness/workflows/matrix-plan.ts";
import { HilError } from "../../util/errors.ts";

const PLAN = {
  kernels: ["debian:6.1", "debian:6.12", "debian:7.2"],
  drivers: ["erdma", "siw"] as ("erdma" | "siw")[],
  device_profiles: ["erdma-reflush", "erdma-2022", "erdma-ib-compliant"],
  executors: ["kernel", "user"] as ("kernel" | "user")[],
  scenarios: ["drain-*", "post-*", "fault-*"],
};

t.test("--shard i/n", async (t) => {
  t.same(parseShard("1/4"), { index: 1, count: 4 });
  t.same(parseShard(" 4/4 "), { index: 4, count: 4 });
  for (const bad of ["0/4", "5/4", "1/0", "a/b", "1", "1/2/3", "-1/2", ""])
    t.throws(() => parseShard(bad), HilError, `"${bad}" is refused`);
  t.match(
    (() => {
      try {
        parseShard("3/2");
      } catch (e) {
        return (e as Error).message;
      }
    })(),
    /expected i\/n with 1 <= i <= n/,
  );
});

t.test("every job in exactly one shard, for n = 1..jobs+1", async (t) => {
  const { jobs } = expandPlan(PLAN);
  t.equal(jobs.length, 3 * 4 * 2 * 3);
  for (const n of [1, 2, 3, 5, 7, jobs.length, jobs.length + 1]) {
    const shards = Array.from({ length: n }, (_, i) => shardJobs(jobs, { index: i + 1, count: n }));
    const all = shards.flat().map((j) => j.id);
    t.equal(all.length, jobs.length, `n=${n}: no job twice, none lost`);
    t.same(new Set(all), new Set(jobs.map((j) => j.id)), `n=${n}: the union is the plan`);
    const sizes = shards.map((s) => s.length);
    t.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `n=${n}: balanced (${sizes.join(",")})`);
  }
  t.same(shardJobs(jobs, undefined), jobs, "no shard: the whole plan");
});

t.test("deterministic: the same shards from a reordered plan", async (t) => {
  const a = expandPlan(PLAN).jobs;
  const b = expandPlan({
    ...PLAN,
    kernels: [...PLAN.kernels].reverse(),
    drivers: [...PLAN.drivers].reverse(),
    device_profiles: [...PLAN.device_profiles].reverse(),
    scenarios: [...PLAN.scenarios].reverse(),
  }).jobs;
  const ids = (js: MatrixJob[]) => js.map((j) => j.id);
  for (let i = 1; i <= 4; i++)
    t.same(
      ids(shardJobs(b, { index: i, count: 4 })),
      ids(shardJobs(a, { index: i, count: 4 })),
      `shard ${i}/4`,
    );
  t.same(
    ids(shardJobs(a, { index: 2, count: 3 })),
    ids(shardJobs(a, { index: 2, count: 3 })),
    "twice the same",
  );
  t.same(
    ids(shardJobs(a, { index: 1, count: 2 })).slice(0, 2),
    [ids(a)[0], ids(a)[2]],
    "round-robin over the sorted ids",
  );
});
