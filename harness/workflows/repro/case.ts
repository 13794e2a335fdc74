/**
 * Known-bug cases (fixtures/cases/<name>.yaml): a statement of the bug and where it was
 * reported, what to run (kernel base and series, driver, device profile, executor, scenarios) and
 * the verdicts that show it (per scenario, oracle profile and rule). Verdicts are the oracle's own:
 * repro judges without the scenarios' known_bugs/expect_fail records, so a case says FAIL where
 * `hil run` would say XFAIL.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { listProfiles } from "../../../qemu/erdma/profile-file.ts";
import { HilError } from "../../../util/errors.ts";
import { compilesAsRegExp } from "../../../util/reg-exp.ts";
import { type YamlProblem, YamlSource } from "../../../util/yaml-source.ts";
import { takesProfile } from "../../backend/registry.ts";
import { DEBIAN_BASES } from "../../kernel/base-spec.ts";
import { profilesOnDriver } from "../../scenario/drivers.ts";
import { ULP_RULES } from "../../scenario/known-bug.ts";
import { DRIVERS, EXECUTORS, ORACLE_PROFILES, type Scenario } from "../../scenario/schema.ts";
import { selectScenarios } from "../../scenario/select.ts";
import { VERDICTS } from "../../verdict.ts";
import type { JobSpec } from "../job/job.ts";

export const CASE_DIR = fileURLToPath(new URL("../../../fixtures/cases/", import.meta.url));

const RULE_IDS = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "hang", "console", ...ULP_RULES] as const;
const verdict = z.enum(VERDICTS);

const expectationSchema = z.strictObject({
  scenario: z.string().min(1),
  /** the oracle profiles this verdict is for (default: every profile the scenario is judged under) */
  profiles: z.array(z.enum(ORACLE_PROFILES)).min(1).optional(),
  /** the scenario's verdict under each of those profiles */
  verdict,
  /** rule verdicts under each of those profiles: { 9: FAIL, hang: FAIL } */
  rules: z
    .record(z.string(), verdict)
    .optional()
    .superRefine((rules, ctx) => {
      for (const k of Object.keys(rules ?? {}))
        if (!(RULE_IDS as readonly string[]).includes(k))
          ctx.addIssue({
            code: "custom",
            path: [k],
            message: `not a rule (${RULE_IDS.join(", ")})`,
          });
    }),
  /** a regular expression one line of the evidence of the FAILing rules (above) must match */
  evidence: z.string().min(1).refine(compilesAsRegExp, { message: "not a regular expression" }).optional(),
});
export type Expectation = z.infer<typeof expectationSchema>;

const caseSchema = z.strictObject({
  /** one line: what the bug is */
  bug: z
    .string()
    .min(1)
    .refine((s) => !s.trim().includes("\n"), { message: "one line" }),
  /** where it was reported or fixed: a URL, or file:function in the kernel */
  reference: z
    .string()
    .regex(
      /^(https?:\/\/\S+|[\w.+/-]+\.[a-z]+:[A-Za-z_]\w*(\(\))?)$/,
      "a URL or file:function (drivers/infiniband/core/verbs.c:__ib_drain_sq)",
    ),
  /** more references and context */
  notes: z.string().min(1).optional(),
  kernel: z.string().min(1),
  /** a patch series (mbox or directory), relative to the case file */
  series: z.string().min(1).optional(),
  driver: z.enum(DRIVERS).default("erdma"),
  /** the emulated erdma device's profile (driver erdma only; default erdma-reflush) */
  device_profile: z.string().min(1).optional(),
  executor: z.enum(EXECUTORS).default("kernel"),
  /** scenario names (fixtures/scenarios) or paths relative to the case file */
  scenarios: z.array(z.string().min(1)).min(1),
  /** judge under these oracle profiles only (default: each scenario's own) */
  oracle: z.array(z.enum(ORACLE_PROFILES)).min(1).optional(),
  expect: z.array(expectationSchema).min(1),
});
export type CaseSpec = z.infer<typeof caseSchema>;

export interface ReproCase extends CaseSpec {
  name: string;
  file: string;
  /** the job it runs (paths relative to the case file's directory) */
  job: JobSpec;
  baseDir: string;
  /** the scenarios, loaded */
  loaded: Scenario[];
}

/** The case file a name (fixtures/cases/<name>.yaml) or a path means. */
export function caseFile(nameOrPath: string, dir = CASE_DIR): string {
  if (nameOrPath.includes("/") || /\.ya?ml$/.test(nameOrPath)) return resolve(nameOrPath);
  return join(dir, `${nameOrPath}.yaml`);
}

/** The names of the cases in fixtures/cases. */
export function listCases(dir = CASE_DIR): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f) && statSync(join(dir, f)).isFile())
      .map((f) => basename(f, extname(f)))
      .sort();
  } catch {
    return [];
  }
}

function isKernelBase(kernel: string): boolean {
  return kernel in DEBIAN_BASES || !kernel.startsWith("debian:");
}

/** Parses and checks a case: the schema, then the names it refers to (profiles, scenarios, files). */
export async function parseCase(text: string | YamlSource, file: string): Promise<ReproCase> {
  const src = typeof text === "string" ? YamlSource.parse(text, file) : text;
  const spec = src.check(caseSchema);
  const baseDir = dirname(resolve(file));
  const problems: YamlProblem[] = [];
  if (!isKernelBase(spec.kernel))
    problems.push(src.problem(["kernel"], `unknown Debian base (${Object.keys(DEBIAN_BASES).join(", ")})`));
  else if (!spec.kernel.startsWith("debian:") && !existsSync(resolve(baseDir, spec.kernel)))
    problems.push(src.problem(["kernel"], `no such kernel source ${resolve(baseDir, spec.kernel)}`));
  if (spec.series && !existsSync(resolve(baseDir, spec.series)))
    problems.push(src.problem(["series"], `no such series ${resolve(baseDir, spec.series)}`));
  if (spec.device_profile && !takesProfile(spec.driver))
    problems.push(src.problem(["device_profile"], `driver ${spec.driver} attaches no erdma device`));
  const known = listProfiles();
  if (spec.device_profile && !spec.device_profile.includes("/") && !known.includes(spec.device_profile))
    problems.push(
      src.problem(["device_profile"], `no device profile "${spec.device_profile}" (${known.join(", ")})`),
    );
  const loaded: Scenario[] = [];
  for (const [i, pattern] of spec.scenarios.entries()) {
    try {
      for (const s of await selectScenarios(pattern.includes("/") ? resolve(baseDir, pattern) : pattern))
        if (!loaded.some((x) => x.name === s.name)) loaded.push(s);
    } catch (err) {
      problems.push(src.problem(["scenarios", i], err instanceof HilError ? err.format() : String(err)));
    }
  }
  if (problems.length === 0)
    for (const [i, e] of spec.expect.entries()) {
      const s = loaded.find((x) => x.name === e.scenario);
      if (!s) {
        problems.push(
          src.problem(
            ["expect", i, "scenario"],
            `"${e.scenario}" is not among the case's scenarios (${loaded.map((x) => x.name).join(", ")})`,
          ),
        );
        continue;
      }
      const own = profilesOnDriver(s.profiles, spec.driver);
      const judged = spec.oracle ? own.filter((p) => spec.oracle?.includes(p)) : own;
      for (const [k, p] of (e.profiles ?? []).entries())
        if (!judged.includes(p))
          problems.push(
            src.problem(
              ["expect", i, "profiles", k],
              `${e.scenario} is not judged under ${p} here (${judged.join(", ")})`,
            ),
          );
    }
  src.rejectAny(problems);
  const name = basename(file, extname(file));
  const job: JobSpec = {
    kernel: spec.kernel,
    ...(spec.series ? { series: spec.series } : {}),
    driver: spec.driver,
    executor: spec.executor,
    ...(takesProfile(spec.driver) && spec.device_profile ? { deviceProfile: spec.device_profile } : {}),
    scenarios: spec.scenarios.join(","),
    ...(spec.oracle ? { oracle: spec.oracle } : {}),
  };
  return { ...spec, name, file, job, baseDir, loaded };
}

export async function loadCase(nameOrPath: string, dir = CASE_DIR): Promise<ReproCase> {
  const file = caseFile(nameOrPath, dir);
  if (!existsSync(file)) {
    const known = listCases(dir);
    throw new HilError(`no such case`, {
      where: file,
      detail: known.length ? `cases in ${dir}: ${known.join(", ")}` : undefined,
    });
  }
  return parseCase(YamlSource.read(file, "case"), file);
}
