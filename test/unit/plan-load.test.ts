// Matrix plan files (fixtures/plans): the shipped plans load; a plan expands to its cross product
// (siw without device profiles, exclusions applied) with stable, file-name safe ids; and for each
// kind of mistake one clear error naming the file, the line and the field.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import {
  expandPlan,
  JOB_AXES,
  jobAxes,
  jobId,
  loadPlan,
  parsePlan,
  renderJobList,
  slug,
} from "../../harness/workflows/matrix/plan.ts";
import type { HilError } from "../../util/errors.ts";
import { hilErrorOf } from "../support/hil-error.ts";
import { withStderr } from "../support/stderr.ts";

const PLANS = fileURLToPath(new URL("../../fixtures/plans/", import.meta.url));
const FILE = join(PLANS, "bad.yaml");

const GOOD = [
  "name: small",
  "kernels: [debian:6.1, debian:6.12]",
  "drivers: [erdma, siw]",
  "device_profiles: [erdma-reflush, erdma-2022]",
  "executors: [kernel, user]",
  "scenarios: [drain-qp-idle, 'post-*']",
];

const errorOf = (lines: readonly string[]) =>
  hilErrorOf(() => parsePlan(lines.join("\n"), FILE), "the plan loaded without an error");

t.test("the shipped plans load", async (t) => {
  const nightly = await loadPlan(join(PLANS, "nightly.yaml"));
  // 5 kernels (6.12 three times: + smp, + debug) x (erdma: 3 profiles + siw + rxe) x 2 executors x 3
  // selections, minus siw/user/faults and rxe/user/faults (5 each)
  t.equal(nightly.jobs.length, 5 * 5 * 2 * 3 - 10);
  t.equal(nightly.jobs.filter((j) => j.spec.driver === "rxe").length, 5 * 2 * 3 - 5, "rxe on every kernel");
  t.ok(
    nightly.jobs.some((j) => j.id.startsWith("debian-6.12+smp.") && j.spec.configs?.[0] === "smp"),
    "a job on the smp kernel, its fragment named as shipped",
  );
  t.ok(
    nightly.jobs.some((j) => j.id.startsWith("debian-6.12+debug.") && j.spec.configs?.[0] === "debug"),
    "a job on the debug kernel",
  );
  const tiny = await loadPlan(join(PLANS, "tiny.yaml"));
  t.same(
    tiny.jobs.map((j) => j.id),
    [
      "debian-6.12.erdma.erdma-ib-compliant.kernel.drain-qp-idle",
      "debian-6.12.erdma.erdma-reflush.kernel.drain-qp-idle",
    ],
  );
  const series = await loadPlan(join(PLANS, "series-check.yaml"));
  t.ok(
    series.jobs.some(
      (j) =>
        j.id.startsWith("debian-6.12+erdma-fail-post-in-error.") &&
        j.spec.series === "../series/erdma-fail-post-in-error.mbox",
    ),
    "a kernel with a series: its id names the series, its path stays relative to the plan",
  );
});

t.test("expansion: the cross product, siw without profiles, ids sorted and unique", async (t) => {
  const plan = await parsePlan(GOOD.join("\n"), FILE);
  // 2 kernels x (2 profiles + siw) x 2 executors x 2 selections
  t.equal(plan.jobs.length, 2 * 3 * 2 * 2);
  const ids = plan.jobs.map((j) => j.id);
  t.same(ids, [...ids].sort(), "sorted by id");
  t.equal(new Set(ids).size, ids.length, "unique");
  t.ok(
    ids.every((id) => /^[A-Za-z0-9.+_-]+$/.test(id)),
    "file-name safe",
  );
  t.ok(plan.jobs.filter((j) => j.spec.driver === "siw").every((j) => j.spec.deviceProfile === undefined));
  t.ok(ids.includes("debian-6.1.siw.user.post-all"));
  t.ok(ids.includes("debian-6.12.erdma.erdma-2022.kernel.drain-qp-idle"));
  const again = await parsePlan(GOOD.join("\n"), FILE);
  t.equal(again.hash, plan.hash, "the same plan, the same hash");
  const other = await parsePlan([...GOOD.slice(0, 5), "scenarios: [drain-qp-idle]"].join("\n"), FILE);
  t.not(other.hash, plan.hash, "another job list, another hash");
});

t.test("exclude drops the matching cells", async (t) => {
  const plan = await parsePlan(
    [
      ...GOOD,
      "exclude:",
      "  - { driver: siw, executor: user }",
      "  - { kernel: debian:6.1, device_profile: erdma-2022 }",
    ].join("\n"),
    FILE,
  );
  t.equal(plan.jobs.length, 24 - 4 - 4);
  t.notOk(plan.jobs.some((j) => j.spec.driver === "siw" && j.spec.executor === "user"));
  t.notOk(plan.jobs.some((j) => j.spec.kernel === "debian:6.1" && j.spec.deviceProfile === "erdma-2022"));
});

t.test("ids: slugs, and a hash suffix only when two cells slug alike", async (t) => {
  t.equal(slug("drain-*,post-*"), "drain-all+post-all");
  t.equal(slug("../cases/scenarios/x.yaml"), ".._cases_scenarios_x.yaml");
  t.equal(
    jobId({ kernel: "debian:6.12", driver: "siw", executor: "user", scenarios: "drain-qp-idle" }),
    "debian-6.12.siw.user.drain-qp-idle",
  );
  const { jobs } = expandPlan({
    kernels: ["debian:6.12"],
    drivers: ["siw"],
    device_profiles: ["erdma-reflush"],
    executors: ["kernel"],
    scenarios: ["drain-q?-idle", "drain-q_-idle"],
  });
  t.equal(jobs.length, 2);
  t.not(jobs[0]?.id, jobs[1]?.id);
  t.ok(
    jobs.every((j) => /^debian-6\.12\.siw\.kernel\.drain-q_-idle\.[0-9a-f]{8}$/.test(j.id)),
    jobs.map((j) => j.id).join(" "),
  );
});

t.test("each mistake is one error with file:line:col and the field", async (t) => {
  const cases: Array<{ lines: string[]; where: RegExp; message: RegExp }> = [
    {
      lines: GOOD.map((l, i) => (i === 1 ? "kernels: [debian:5.10]" : l)),
      where: /bad\.yaml:2:11$/,
      message: /^kernels\[0\]: unknown Debian base debian:5\.10/,
    },
    {
      lines: GOOD.map((l, i) => (i === 3 ? "device_profiles: [erdma-1999]" : l)),
      where: /bad\.yaml:4:19$/,
      message: /^device_profiles\[0\]: no device profile "erdma-1999"/,
    },
    {
      lines: GOOD.map((l, i) => (i === 4 ? "executors: [kernel, gpu]" : l)),
      where: /bad\.yaml:5:21$/,
      message: /^executors\[1\]: /,
    },
    {
      lines: GOOD.map((l, i) => (i === 5 ? "scenarios: [nothing-like-this]" : l)),
      where: /bad\.yaml:6:13$/,
      message: /^scenarios\[0\]: .*no scenario matches "nothing-like-this"/,
    },
    { lines: [...GOOD, "colour: blue"], where: /bad\.yaml:7:1$/, message: /^colour: unknown field$/ },
    { lines: GOOD.filter((l) => !l.startsWith("kernels")), where: /bad\.yaml:1:1$/, message: /^kernels: / },
    {
      lines: [...GOOD, "exclude:", "  - { driver: siw, executor: gpu }"],
      where: /bad\.yaml:8:\d+$/,
      message: /^exclude\[0\]\.executor: /,
    },
    {
      lines: [...GOOD, "exclude:", "  - { kernel: debian:7.2 }"],
      where: /bad\.yaml:8:5$/,
      message: /^exclude\[0\]: matches no job of the plan$/,
    },
    {
      lines: [...GOOD, "exclude:", "  - {}"],
      where: /bad\.yaml:8:5$/,
      message: /^exclude\[0\]: an exclude entry names at least one axis/,
    },
    {
      lines: GOOD.map((l, i) =>
        i === 1 ? "kernels: [{ base: debian:6.12, series: ../series/none.mbox }]" : l,
      ),
      where: /bad\.yaml:2:\d+$/,
      message: /^kernels\[0\]\.series: no such series/,
    },
    {
      lines: GOOD.map((l, i) => (i === 5 ? "scenarios: [drain-qp-idle, drain-qp-idle]" : l)),
      where: /bad\.yaml:6:1$/,
      message: /^scenarios: a scenario selection is listed twice/,
    },
    {
      lines: ["kernels: [debian:6.12", "scenarios: [x]"],
      where: /bad\.yaml:\d+:\d+$/,
      message: /^\(yaml\): /,
    },
  ];
  for (const c of cases) {
    const err = await errorOf(c.lines);
    t.match(err.where, c.where, `${c.message}: where ${err.where}`);
    t.match(err.message, c.message, err.format());
    t.equal(err.exitCode, 2);
  }
  const missing = await loadPlan(join(PLANS, "no-such-plan.yaml")).catch((e: unknown) => e);
  t.match((missing as HilError).format(), /no-such-plan\.yaml: cannot read the plan file/);
});

t.test(
  "rules: the oracle's rule sets of every job; oracle, its old name, still works with a notice",
  async (t) => {
    await withStderr(async (notices) => {
      const rules = await parsePlan([...GOOD, "rules: [linux, ib]"].join("\n"), FILE);
      t.ok(rules.jobs.every((j) => j.spec.oracle?.join() === "linux,ib"));
      t.same(notices, [], "no notice for the new name");
      const old = await parsePlan([...GOOD, "oracle: [linux, ib]"].join("\n"), FILE);
      t.same(
        old.jobs.map((j) => j.spec),
        rules.jobs.map((j) => j.spec),
        "the same jobs",
      );
      t.equal(old.hash, rules.hash, "the same plan");
      t.same(notices, [`hil: notice: ${FILE}:7:1: oracle: now called rules (the old name still works)\n`]);
    });
    const both = await errorOf([...GOOD, "rules: [linux]", "oracle: [ib]"]);
    t.equal(both.format(), `${FILE}:8:1: oracle: the old name of rules: give rules alone`);
    const bad = await errorOf([...GOOD, "rules: [rocev2]"]);
    t.match(bad.format(), new RegExp(`^${FILE}:7:\\d+: rules\\[0\\]: `));
  },
);

t.test("--list: every axis of each job, the config fragments and the rules too", async (t) => {
  const plan = await parsePlan(
    [
      "kernels: [debian:6.1, { base: debian:6.12, configs: [smp] }, { base: debian:6.12, series: ../series/hello-printk.mbox }]",
      "drivers: [erdma, siw]",
      "device_profiles: [erdma-2022]",
      "scenarios: [drain-qp-idle]",
      "rules: [linux]",
    ].join("\n"),
    FILE,
  );
  const [header, ...rows] = renderJobList(plan.jobs)
    .trimEnd()
    .split("\n")
    .map((l) => l.split("\t"));
  t.same(header, ["job", ...JOB_AXES]);
  t.same(JOB_AXES, [
    "kernel",
    "series",
    "configs",
    "driver",
    "device_profile",
    "executor",
    "scenarios",
    "rules",
  ]);
  t.equal(rows.length, plan.jobs.length);
  const cell = (row: string[] | undefined, axis: string) => row?.[header?.indexOf(axis) ?? -1];
  const smp = rows.find((r) => r[0]?.startsWith("debian-6.12+smp.erdma"));
  t.equal(cell(smp, "configs"), "smp", "the config axis is shown");
  t.equal(cell(smp, "device_profile"), "erdma-2022");
  t.equal(cell(smp, "rules"), "linux");
  t.equal(cell(smp, "series"), "-");
  const series = rows.find((r) => r[0]?.startsWith("debian-6.12+hello-printk.siw"));
  t.equal(cell(series, "series"), "../series/hello-printk.mbox");
  t.equal(cell(series, "device_profile"), "-", "siw has no device profile");
  for (const [i, job] of plan.jobs.entries())
    for (const [axis, value] of jobAxes(job.spec)) t.equal(cell(rows[i], axis), value, `${job.id} ${axis}`);
});

t.test("a kernel entry's weight: a positive number, carried by its jobs", async (t) => {
  const plan = (weight: string) =>
    parsePlan(
      [
        `kernels: [debian:6.1, { base: debian:6.12, configs: [debug], weight: ${weight} }]`,
        "scenarios: [drain-qp-idle]",
      ].join("\n"),
      FILE,
    );
  const jobs = (await plan("3")).jobs;
  t.same(
    jobs.map((j) => [j.spec.kernel, j.spec.configs ?? [], j.weight]),
    [
      ["debian:6.1", [], undefined],
      ["debian:6.12", ["debug"], 3],
    ],
  );
  const zero = await hilErrorOf(() => plan("0"), "weight 0 was taken");
  t.match(zero.format(), /kernels\[1\]/, "the entry is named");
});
