// The night of a plan on N machines worked out from one run's job times: shards dealt as
// `hil matrix --shard` deals them, each kernel's build paid once per shard that boots it (its
// largest preparation less the median), rxe jobs counted on the kernel with rxe's fragment.
import t from "tap";
import type { JobSpec } from "../../harness/workflows/job/job.ts";
import {
  estimateShards,
  kernelCosts,
  suggestedWeights,
  type TimedJob,
} from "../../harness/workflows/matrix/shard-estimate.ts";

const MIN = 60_000;

function job(
  id: string,
  kernel: string,
  driver: JobSpec["driver"],
  wallMs: number,
  suiteMs: number,
): TimedJob {
  return {
    id,
    spec: { kernel, driver, executor: "kernel", scenarios: id },
    wallMs,
    prepareMs: wallMs - suiteMs,
  };
}

// two kernels; 6.1's first job built it (10 min before its suite), the others took 0.5 min to start
const JOBS: TimedJob[] = [
  job("a1", "debian:6.1", "erdma", 12 * MIN, 2 * MIN),
  job("a2", "debian:6.1", "erdma", 2.5 * MIN, 2 * MIN),
  job("a3", "debian:6.1", "erdma", 2.5 * MIN, 2 * MIN),
  job("b1", "debian:6.12", "erdma", 1.5 * MIN, 1 * MIN),
  job("b2", "debian:6.12", "erdma", 1.5 * MIN, 1 * MIN),
];

t.test("a kernel's build is its largest preparation less the median one", async (t) => {
  const costs = kernelCosts(JOBS);
  t.equal(costs.size, 2);
  t.same(
    [...costs.values()],
    [
      { buildMs: 9.5 * MIN, prepMs: 0.5 * MIN },
      { buildMs: 0, prepMs: 0.5 * MIN },
    ],
  );
});

t.test("one machine runs every job and builds every kernel once", async (t) => {
  const one = estimateShards(JOBS, 1);
  const total = JOBS.reduce((n, j) => n + j.wallMs, 0);
  t.equal(one.wallMs, total, "the same as the run's machine time");
  t.equal(one.builds, 2);
});

t.test("two machines: a kernel each, the night is the slower one", async (t) => {
  const two = estimateShards(JOBS, 2);
  t.same(
    [...two.shardMs].sort((a, b) => a - b),
    [3 * MIN, 17 * MIN],
  );
  t.equal(two.wallMs, 17 * MIN);
  t.equal(two.machineMs, 20 * MIN);
  const warm = estimateShards(JOBS, 2, true);
  t.equal(warm.wallMs, 7.5 * MIN, "kernels cached: the build is gone");
  t.equal(warm.builds, 0);
});

t.test("more machines than kernels: a split kernel is built on each of its shards", async (t) => {
  const four = estimateShards(JOBS, 4);
  t.equal(four.builds, 4, "6.1 on three shards, 6.12 on one");
  t.ok(
    four.machineMs > estimateShards(JOBS, 1).machineMs + 18 * MIN,
    "two more builds of 6.1 cost machine time",
  );
});

t.test("rxe jobs boot a kernel of their own: built apart from erdma's on the same base", async (t) => {
  const jobs = [
    ...JOBS,
    job("r1", "debian:6.12", "rxe", 6 * MIN, 1 * MIN),
    job("r2", "debian:6.12", "rxe", 1.5 * MIN, 1 * MIN),
  ];
  t.equal(kernelCosts(jobs).size, 3);
  t.equal(estimateShards(jobs, 1).builds, 3);
});

t.test("weights from the job times: each kernel's median job against the median kernel's", async (t) => {
  const jobs = [
    job("a1", "debian:6.1", "erdma", 1 * MIN, 1 * MIN),
    job("a2", "debian:6.1", "erdma", 1 * MIN, 1 * MIN),
    job("b1", "debian:6.12", "erdma", 1.2 * MIN, 1.2 * MIN),
    job("c1", "debian:7.2", "erdma", 3.1 * MIN, 3.1 * MIN),
  ];
  t.same([...suggestedWeights(jobs).values()], [1, 1, 2.5], "7.2's jobs take 2.5 times the median kernel's");
  const weighted = jobs.map((j) => ({ ...j, weight: j.spec.kernel === "debian:7.2" ? 2.5 : 1 }));
  t.ok(
    estimateShards(weighted, 2).wallMs <= estimateShards(jobs, 2).wallMs,
    "dealt by weight, the night is no longer than dealt by count",
  );
});
