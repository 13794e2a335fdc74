/**
 * Matrix plans (fixtures/plans/*.yaml): kernels x drivers x device profiles x executors x
 * scenario selections, expanded to jobs with stable ids, and split into shards for CI systems
 * that run one shard a machine (GitHub Actions' matrix, GitLab's parallel, Kubernetes indexed
 * jobs); shards.ts deals the jobs to the shards.
 */
import { existsSync } from "node:fs";
import { basename, dirname, extname, resolve } from "node:path";
import { z } from "zod";
import { DEFAULT_PROFILE, listProfiles } from "../../../qemu/erdma/profile-file.ts";
import { HilError } from "../../../util/errors.ts";
import { hashParts } from "../../../util/hash.ts";
import { progress } from "../../../util/progress.ts";
import { type YamlProblem, YamlSource } from "../../../util/yaml-source.ts";
import { impliedProfile, takesProfile } from "../../backend/registry.ts";
import { DEBIAN_BASES, DEBIAN_IMAGES, isNamedKernel, isPrebuiltBase } from "../../kernel/base-spec.ts";
import { shippedFragments } from "../../kernel/kconfig.ts";
import { DRIVERS, EXECUTORS, ORACLE_PROFILES } from "../../scenario/schema.ts";
import { selectScenarios } from "../../scenario/select.ts";
import type { JobSpec } from "../job/job.ts";

const kernelEntry = z.union([
  z.string().min(1),
  z.strictObject({
    base: z.string().min(1),
    /** a patch series, relative to the plan file */
    series: z.string().min(1).optional(),
    /** Kconfig fragments, relative to the plan file, or shipped ones by name (smp) */
    configs: z.array(z.string().min(1)).min(1).optional(),
    /**
     * how long a job on this kernel takes against one on a kernel without a weight (1): shards are
     * dealt by these weights (a debug kernel's jobs take about three times as long)
     */
    weight: z.number().positive().max(100).optional(),
  }),
]);

const excludeEntry = z
  .strictObject({
    kernel: z.string().min(1).optional(),
    driver: z.enum(DRIVERS).optional(),
    device_profile: z.string().min(1).optional(),
    executor: z.enum(EXECUTORS).optional(),
    scenarios: z.string().min(1).optional(),
  })
  .refine((e) => Object.keys(e).length > 0, { message: "an exclude entry names at least one axis" });

const planSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]*$/, "lowercase letters, digits, dots and dashes")
    .optional(),
  description: z.string().min(1).optional(),
  kernels: z.array(kernelEntry).min(1),
  drivers: z.array(z.enum(DRIVERS)).min(1).default(["erdma"]),
  /** erdma device profiles (driver siw has none) */
  device_profiles: z.array(z.string().min(1)).min(1).default([DEFAULT_PROFILE]),
  executors: z.array(z.enum(EXECUTORS)).min(1).default(["kernel"]),
  /** scenario selections, one job each: names or globs (comma-separated in one entry), or paths */
  scenarios: z.array(z.string().min(1)).min(1),
  /** judge under these rule sets of the oracle only (hil run --rules) */
  rules: z.array(z.enum(ORACLE_PROFILES)).min(1).optional(),
  /** the old name of rules: still read, with a notice */
  oracle: z.array(z.enum(ORACLE_PROFILES)).min(1).optional(),
  /** combinations left out: an entry matches a job when every axis it names is equal */
  exclude: z.array(excludeEntry).min(1).optional(),
  /** an XPASS (a known bug's rule held: its record is stale) fails the job, as `hil run --strict` */
  strict: z.boolean().optional(),
});
export type PlanSpec = z.infer<typeof planSchema>;

export interface MatrixJob {
  /** stable, file-name safe: <kernel>.<driver>[.<profile>].<executor>.<scenarios> */
  id: string;
  spec: JobSpec;
  /** its kernel entry's weight (absent: 1): what shards are dealt by */
  weight?: number;
}

export interface MatrixPlan {
  name: string;
  file: string;
  /** the plan file's directory: the jobs' relative paths are relative to it */
  baseDir: string;
  /** every job, sorted by id */
  jobs: MatrixJob[];
  /** content key of the job list: shards of one plan carry the same one */
  hash: string;
  /** an XPASS fails a job */
  strict: boolean;
}

/** A file-name safe form: "*" reads "all", "," "+", anything else unsafe "_". */
export function slug(text: string): string {
  return (
    text
      .replace(/\*+/g, "all")
      .replace(/\s*,\s*/g, "+")
      .replace(/[^A-Za-z0-9.+-]+/g, "_")
      .replace(/^_+|_+$/g, "") || "_"
  );
}

function kernelLabel(spec: Pick<JobSpec, "kernel" | "series" | "configs">): string {
  const base = isNamedKernel(spec.kernel) ? spec.kernel.replace(":", "-") : basename(spec.kernel);
  const series = spec.series ? `+${basename(spec.series, extname(spec.series))}` : "";
  const configs = (spec.configs ?? []).map((c) => `+${basename(c, extname(c))}`).join("");
  return `${base}${series}${configs}`;
}

export function jobId(spec: JobSpec): string {
  return [
    kernelLabel(spec),
    spec.driver,
    ...[impliedProfile(spec.driver, spec.deviceProfile)].filter((p) => p !== undefined),
    spec.executor,
    spec.scenarios,
  ]
    .map(slug)
    .join(".");
}

type KernelEntry = z.infer<typeof kernelEntry>;

function kernelOf(k: KernelEntry): Pick<JobSpec, "kernel" | "series" | "configs"> {
  if (typeof k === "string") return { kernel: k };
  return {
    kernel: k.base,
    ...(k.series ? { series: k.series } : {}),
    ...(k.configs ? { configs: k.configs } : {}),
  };
}

function excluded(spec: JobSpec, exclude: PlanSpec["exclude"]): number {
  return (exclude ?? []).findIndex(
    (e) =>
      (e.kernel === undefined || e.kernel === spec.kernel) &&
      (e.driver === undefined || e.driver === spec.driver) &&
      (e.device_profile === undefined || e.device_profile === spec.deviceProfile) &&
      (e.executor === undefined || e.executor === spec.executor) &&
      (e.scenarios === undefined || e.scenarios === spec.scenarios),
  );
}

/** The jobs of a plan (after exclusions), sorted by id; ids made unique if two cells slug alike. */
export function expandPlan(plan: PlanSpec): { jobs: MatrixJob[]; excludeHits: number[] } {
  const excludeHits = (plan.exclude ?? []).map(() => 0);
  const rules = plan.rules ?? plan.oracle;
  const specs: JobSpec[] = [];
  const weights: (number | undefined)[] = [];
  for (const k of plan.kernels)
    for (const driver of plan.drivers)
      for (const profile of takesProfile(driver) ? plan.device_profiles : [undefined])
        for (const executor of plan.executors)
          for (const scenarios of plan.scenarios) {
            const spec: JobSpec = {
              ...kernelOf(k),
              driver,
              executor,
              ...(profile ? { deviceProfile: profile } : {}),
              scenarios,
              ...(rules ? { oracle: rules } : {}),
            };
            const hit = excluded(spec, plan.exclude);
            if (hit >= 0) excludeHits[hit] = (excludeHits[hit] ?? 0) + 1;
            else {
              specs.push(spec);
              weights.push(typeof k === "string" ? undefined : k.weight);
            }
          }
  const ids = specs.map(jobId);
  const jobs = specs.map((spec, i): MatrixJob => {
    const id = ids[i] as string;
    const clash = ids.indexOf(id) !== ids.lastIndexOf(id);
    const weight = weights[i];
    return {
      id: clash ? `${id}.${hashParts([JSON.stringify(spec)]).slice(0, 8)}` : id,
      spec,
      ...(weight !== undefined && weight !== 1 ? { weight } : {}),
    };
  });
  jobs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { jobs, excludeHits };
}

export function planHash(jobs: readonly MatrixJob[]): string {
  // a weight deals the shards differently: shards of plans that differ in it must not be joined
  return hashParts([
    "matrix-plan",
    ...jobs.map((j) => `${j.id}\n${JSON.stringify(j.spec)}${j.weight ? `\n${j.weight}` : ""}`),
  ]);
}

export interface Shard {
  index: number;
  count: number;
}

/** Each axis of a job by its plan key; a key JobSpec gains must be named here. */
const AXIS_NAMES: { [K in keyof Required<JobSpec>]: string } = {
  kernel: "kernel",
  series: "series",
  configs: "configs",
  driver: "driver",
  deviceProfile: "device_profile",
  executor: "executor",
  scenarios: "scenarios",
  oracle: "rules",
};

/** The axes of a job by their plan keys, in the order jobAxes gives them. */
export const JOB_AXES: readonly string[] = Object.values(AXIS_NAMES);

/** Every axis of a job, by its plan key, "-" where the job has none (siw has no device profile). */
export function jobAxes(spec: JobSpec): Array<[string, string]> {
  return (Object.keys(AXIS_NAMES) as Array<keyof JobSpec>).map((k) => {
    const v = k === "deviceProfile" ? impliedProfile(spec.driver, spec.deviceProfile) : spec[k];
    return [AXIS_NAMES[k], v === undefined ? "-" : Array.isArray(v) ? v.join(",") : String(v)];
  });
}

/** `hil matrix --list`: a header, then a line per job, its id and every axis, tab-separated. */
export function renderJobList(jobs: readonly MatrixJob[]): string {
  const header = ["job", ...JOB_AXES];
  const rows = jobs.map((j) => [j.id, ...jobAxes(j.spec).map(([, v]) => v)]);
  return [header, ...rows].map((r) => `${r.join("\t")}\n`).join("");
}

/** "i/n" (1 <= i <= n) as a shard; anything else is a clear error. */
export function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || index < 1 || index > count)
    throw new HilError(`--shard ${text}: expected i/n with 1 <= i <= n (e.g. 1/4)`);
  return { index, count };
}

/** Far more jobs than a night of CI can run; a bound that keeps a mistaken plan from taking the machine. */
export const MAX_PLAN_JOBS = 2000;

/** Parses and checks a plan: the schema, then the profiles, files and scenario selections it names. */
export async function parsePlan(text: string | YamlSource, file: string): Promise<MatrixPlan> {
  const src = typeof text === "string" ? YamlSource.parse(text, file) : text;
  const plan = src.check(planSchema);
  const axes = [plan.kernels, plan.drivers, plan.device_profiles, plan.executors, plan.scenarios];
  const most = axes.reduce((n, axis) => n * axis.length, 1);
  if (most > MAX_PLAN_JOBS)
    src.reject([
      src.problem(
        [],
        `kernels x drivers x device_profiles x executors x scenarios = ${axes.map((a) => a.length).join(" x ")} = ${most} jobs; a plan may have at most ${MAX_PLAN_JOBS}`,
      ),
    ]);
  const baseDir = dirname(resolve(file));
  const problems: YamlProblem[] = [];
  if (plan.oracle) {
    if (plan.rules) problems.push(src.problem(["oracle"], "the old name of rules: give rules alone"));
    else {
      const at = src.position(["oracle"]);
      progress.info(
        `hil: notice: ${file}:${at.line}:${at.col}: oracle: now called rules (the old name still works)`,
      );
    }
  }
  plan.kernels.forEach((k, i) => {
    const spec = kernelOf(k);
    const at = typeof k === "string" ? ["kernels", i] : ["kernels", i, "base"];
    if (spec.kernel.startsWith("debian:") && !(spec.kernel in DEBIAN_BASES))
      problems.push(
        src.problem(at, `unknown Debian base ${spec.kernel} (${Object.keys(DEBIAN_BASES).join(", ")})`),
      );
    else if (isPrebuiltBase(spec.kernel) && !(spec.kernel in DEBIAN_IMAGES))
      problems.push(
        src.problem(
          at,
          `unknown Debian kernel image ${spec.kernel} (${Object.keys(DEBIAN_IMAGES).join(", ")})`,
        ),
      );
    else if (!isNamedKernel(spec.kernel) && !existsSync(resolve(baseDir, spec.kernel)))
      problems.push(src.problem(at, `no such kernel source ${resolve(baseDir, spec.kernel)}`));
    if (spec.series && !existsSync(resolve(baseDir, spec.series)))
      problems.push(src.problem(["kernels", i, "series"], `no such series ${resolve(baseDir, spec.series)}`));
    (spec.configs ?? []).forEach((c, j) => {
      const shipped = !c.includes("/") && shippedFragments().includes(c.replace(/\.config$/, ""));
      if (!existsSync(resolve(baseDir, c)) && !shipped)
        problems.push(
          src.problem(
            ["kernels", i, "configs", j],
            `no such config fragment ${resolve(baseDir, c)} (nor one shipped in guest/kconfig: ${shippedFragments().join(", ")})`,
          ),
        );
    });
  });
  const known = listProfiles();
  plan.device_profiles.forEach((p, i) => {
    if (!p.includes("/") && !known.includes(p))
      problems.push(src.problem(["device_profiles", i], `no device profile "${p}" (${known.join(", ")})`));
  });
  for (const [i, pattern] of plan.scenarios.entries()) {
    const abs = pattern
      .split(",")
      .map((p) => p.trim())
      .map((p) => (p.includes("/") ? resolve(baseDir, p) : p))
      .join(",");
    try {
      await selectScenarios(abs);
    } catch (err) {
      problems.push(src.problem(["scenarios", i], err instanceof HilError ? err.format() : String(err)));
    }
  }
  if (new Set(plan.scenarios).size !== plan.scenarios.length)
    problems.push(src.problem(["scenarios"], "a scenario selection is listed twice"));
  const { jobs, excludeHits } = expandPlan(plan);
  excludeHits.forEach((n, i) => {
    if (n === 0) problems.push(src.problem(["exclude", i], "matches no job of the plan"));
  });
  if (problems.length === 0 && jobs.length === 0)
    problems.push(src.problem(["exclude"], "every job of the plan is excluded"));
  src.rejectAny(problems);
  return {
    name: plan.name ?? basename(file, extname(file)),
    file: resolve(file),
    baseDir,
    jobs,
    hash: planHash(jobs),
    strict: plan.strict === true,
  };
}

export async function loadPlan(file: string): Promise<MatrixPlan> {
  const src = YamlSource.read(file, "plan");
  return parsePlan(src, file);
}
