// Every file a user writes has limits that keep a mistake from exhausting the machine: each is one
// clear error naming the file (and the line where a line decides it) and the limit, reached without
// reading or expanding what is over it.
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { readFragment } from "../../harness/kernel/kconfig.ts";
import { loadSeries } from "../../harness/kernel/series.ts";
import { loadScenarioFile, parseScenario } from "../../harness/scenario/load.ts";
import { MAX_POSTED_WRS, MAX_STEPS, MAX_WAIT_MS } from "../../harness/scenario/size-limits.ts";
import { loadPlan, MAX_PLAN_JOBS } from "../../harness/workflows/matrix/plan.ts";
import { loadProfile } from "../../qemu/erdma/profile-file.ts";
import { HilError } from "../../util/errors.ts";
import { readUserFile, USER_FILE_LIMITS } from "../../util/user-file.ts";
import { hilErrorOf } from "../support/hil-error.ts";

const dir = mkdtempSync(join(tmpdir(), "hil-limits-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function errorOf(fn: () => unknown): HilError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HilError) return err;
    throw err;
  }
  throw new Error("no error");
}

const asyncErrorOf = (fn: () => Promise<unknown>) => hilErrorOf(fn, "no error");

/** A file of `bytes` bytes that takes no disk (a hole): its size alone must refuse it. */
function sparse(name: string, bytes: number): string {
  const file = join(dir, name);
  closeSync(openSync(file, "w"));
  truncateSync(file, bytes);
  return file;
}

const HEAD = ["description: limits", "covers: [9]", "drivers: [siw]", "steps:"];

t.test("a scenario of a million steps is refused by its size, before it is parsed", async (t) => {
  const file = join(dir, "million.yaml");
  writeFileSync(file, [...HEAD, ...Array.from({ length: 1_000_000 }, () => "  - sleep: 1")].join("\n"));
  const err = await asyncErrorOf(() => loadScenarioFile(file));
  t.equal(err.where, file);
  t.match(err.message, /^the scenario file is 1[0-9]\.\d MiB; a scenario may be at most 256 KiB$/);
});

t.test("a file whose size stat cannot tell is read no further than the limit", async (t) => {
  const err = errorOf(() => readUserFile("/dev/zero", "scenario"));
  t.equal(err.where, "/dev/zero");
  t.equal(err.message, "the scenario file is more than 256 KiB; a scenario may be at most 256 KiB");
  t.equal(readUserFile("/dev/null", "scenario").length, 0, "an empty device reads as empty");
});

t.test("a scenario with too many steps names the steps line and the limit", async (t) => {
  const text = [...HEAD, ...Array.from({ length: MAX_STEPS + 1 }, () => "  - sleep: 1")].join("\n");
  const err = errorOf(() => parseScenario(text, "many.yaml"));
  t.equal(err.where, "many.yaml:4:1");
  t.equal(err.message, `steps: ${MAX_STEPS + 1} steps; a scenario may have at most ${MAX_STEPS}`);
  t.doesNotThrow(() =>
    parseScenario(
      [...HEAD, ...Array.from({ length: MAX_STEPS }, () => "  - sleep: 1")].join("\n"),
      "ok.yaml",
    ),
  );
});

t.test("the posts of a scenario are bounded in sum, at the step that passes the bound", async (t) => {
  const steps = Math.ceil((MAX_POSTED_WRS + 1) / 4096);
  const lines = [
    ...HEAD.slice(0, 3),
    "qp: { sq: 4096, rq: 4096, cq_depth: 65536 }",
    "steps:",
    ...Array.from({ length: steps }, () => "  - post_recv: { count: 4096 }"),
  ];
  const err = errorOf(() => parseScenario(lines.join("\n"), "posts.yaml"));
  t.equal(err.where, `posts.yaml:${5 + steps}:5`, "the last step's line");
  t.equal(
    err.message,
    `steps[${steps - 1}]: the post steps up to here post ${steps * 4096} WRs; a scenario may post at most ${MAX_POSTED_WRS}`,
  );
});

t.test("the waits a scenario asks for are bounded in sum", async (t) => {
  const n = Math.floor(MAX_WAIT_MS / 600_000) + 1;
  const lines = [...HEAD, ...Array.from({ length: n }, () => "  - sleep: 600000")];
  const err = errorOf(() => parseScenario(lines.join("\n"), "waits.yaml"));
  t.equal(err.where, `waits.yaml:${4 + n}:5`);
  t.match(
    err.message,
    new RegExp(
      `^steps\\[${n - 1}\\]: the sleeps and poll waits up to here add up to ${n * 600_000} ms; a scenario may wait at most ${MAX_WAIT_MS} ms$`,
    ),
  );
});

t.test("a plan is bounded in jobs before it is expanded", async (t) => {
  const file = join(dir, "huge-plan.yaml");
  const many = (prefix: string, n: number) =>
    `[${Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(", ")}]`;
  writeFileSync(
    file,
    [
      "kernels: [debian:6.12]",
      "drivers: [erdma]",
      `device_profiles: ${many("p", 100)}`,
      "executors: [kernel, user]",
      `scenarios: ${many("s", 100)}`,
    ].join("\n"),
  );
  const err = await asyncErrorOf(() => loadPlan(file));
  t.equal(err.where, `${file}:1:1`);
  t.equal(
    err.message,
    `(file): kernels x drivers x device_profiles x executors x scenarios = 1 x 1 x 100 x 2 x 100 = 20000 jobs; a plan may have at most ${MAX_PLAN_JOBS}`,
  );
  const big = sparse("big-plan.yaml", USER_FILE_LIMITS.plan + 1);
  t.equal(
    (await asyncErrorOf(() => loadPlan(big))).message,
    "the plan file is 256 KiB; a plan may be at most 256 KiB",
  );
});

t.test("device profiles: the file size and the depth of extends are bounded", async (t) => {
  const big = sparse("big-profile.json", 300 * 1024);
  t.equal(
    errorOf(() => loadProfile(big)).message,
    "the device profile file is 300 KiB; a device profile may be at most 256 KiB",
  );
  for (let i = 0; i <= 20; i++)
    writeFileSync(
      join(dir, `chain${i}.json`),
      JSON.stringify({ name: `chain${i}`, extends: i === 20 ? "erdma-reflush" : `chain${i + 1}` }),
    );
  const err = errorOf(() => loadProfile(join(dir, "chain0.json")));
  t.equal(err.message, "extends: a profile may extend at most 16 others in a chain");
  t.match(err.where, /chain15\.json$/);
  t.match(err.detail, /^chain0 -> chain1 -> .* -> chain16$/);
  t.equal(loadProfile(join(dir, "chain10.json")).caps.maxCqeLog2, 16, "a chain of 11 loads");
});

t.test("a series and a config fragment are bounded in size", async (t) => {
  const mbox = sparse("huge.mbox", USER_FILE_LIMITS.series + 1);
  t.equal(
    errorOf(() => loadSeries(mbox)).message,
    "the series file is 64 MiB; a series may be at most 64 MiB",
  );
  const series = join(dir, "series-dir");
  rmSync(series, { recursive: true, force: true });
  mkdirSync(series);
  renameSync(sparse("0001-a.patch", 40 * 1024 * 1024), join(series, "0001-a.patch"));
  renameSync(sparse("0002-b.patch", 40 * 1024 * 1024), join(series, "0002-b.patch"));
  const err = errorOf(() => loadSeries(series));
  t.equal(err.where, series);
  t.equal(err.message, "the series is 80 MiB; a series may be at most 64 MiB");
  const fragment = sparse("huge.config", 2 * 1024 * 1024);
  const f = errorOf(() => readFragment(fragment));
  t.equal(f.where, fragment);
  t.equal(f.message, "the config fragment file is 2 MiB; a config fragment may be at most 1 MiB");
});
