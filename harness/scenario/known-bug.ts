/**
 * Known driver bugs: what a record says (where the bug applies, which rules it breaks, what its
 * failure looks like, where the defect is) and the shared records of fixtures/known-bugs.yaml that
 * scenarios name by id, so a bug that many scenarios hit (a provider that fails every post in
 * ERROR) is written once.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { globToRegExp } from "../../util/glob.ts";
import { compilesAsRegExp } from "../../util/reg-exp.ts";
import { YamlSource } from "../../util/yaml-source.ts";
import { DRIVERS, EXECUTORS, ORACLE_PROFILES } from "./axes.ts";

export const KNOWN_BUGS_FILE = fileURLToPath(new URL("../../fixtures/known-bugs.yaml", import.meta.url));

/**
 * A rule of the README's What is judged (1-9) the oracle judges. Rule 8 (receives keep working in SQ Error) is not
 * one: SQE exists for UD/UC QPs only, and every QP here is RC, which goes from a send error to
 * ERROR (IBTA Vol 1 10.3.1, QP state diagram).
 */
export const designRule = z
  .number()
  .int()
  .min(1)
  .max(9)
  .refine((n) => n !== 8, {
    message: "rule 8 (SQ Error) is not judged: an RC QP never enters SQE, it goes to ERROR on a send error",
  });

/**
 * The rules of a ULP workload (README, What is judged): the data read back is the data written, every
 * ULP step does what it meant, teardown leaves nothing allocated on the device, and every WQE the
 * device took completes exactly once (its own trace).
 */
export const ULP_RULES = ["ulp-data", "ulp-steps", "ulp-leak", "hw-complete"] as const;

/**
 * a rule (README, What is judged), the harness's own: "hang" (a step past its watchdog), "console",
 * "commands", "hw-protocol" (rule 10, the driver's use of the device, judged on every workload), or
 * a ULP workload's
 */
export const ruleRef = z.union([
  designRule,
  z.enum(["hang", "console", "commands", "hw-protocol", ...ULP_RULES]),
]);

/** A regular expression, checked to compile. */
const pattern = z.string().min(1).refine(compilesAsRegExp, { message: "not a valid regular expression" });

/**
 * A driver bug a scenario is known to hit: where it applies (driver, and optionally kernels,
 * device profiles, executors, oracle profiles), which rules it breaks, what its failure looks
 * like, and where the defect is (a source file and function, file:function, or a URL). A
 * recorded rule that FAILs there, every problem matching `failure`, is an XFAIL; one that holds
 * is an XPASS.
 */
export const knownBugSchema = z.strictObject({
  /** the record's id, for the shared records of fixtures/known-bugs.yaml */
  id: z.string().optional(),
  /**
   * set on a shared record applied by its `scenarios` pattern: it says what happens when the bug
   * is met, so a rule it lists that holds in one scenario is no XPASS there (whether the record
   * is stale is judged over the whole run)
   */
  implied: z.literal(true).optional(),
  /**
   * a race a run meets only now and then: a run that does not meet it says nothing of a fix, so
   * the record is never an XPASS of its own (its case under fixtures/cases widens the window)
   */
  intermittent: z.literal(true).optional(),
  driver: z.enum(DRIVERS),
  /** kernel bases (debian:6.1) or versions (6.12, 6.12.95) the bug is in; absent: all */
  kernels: z
    .array(
      z.string().regex(/^(debian:\d+\.\d+|\d+\.\d+(\.\d+)?)$/, "a base (debian:6.12) or a version (6.12)"),
    )
    .min(1)
    .optional(),
  device_profiles: z.array(z.string().min(1)).min(1).optional(),
  executors: z.array(z.enum(EXECUTORS)).min(1).optional(),
  /** the oracle profiles under which the behaviour is a bug (absent: all); e.g. not iwarp-rdmac */
  oracle_profiles: z.array(z.enum(ORACLE_PROFILES)).min(1).optional(),
  rules: z.array(ruleRef).min(1),
  /**
   * what the bug's failure looks like: a regular expression every problem of the recorded rules
   * must match (the WRs, or the words of the oracle's reason); a failure it does not describe
   * stays a FAIL
   */
  failure: pattern,
  /**
   * covered rules the bug keeps a scenario from exercising (a post it refuses leaves nothing for
   * the rules about that post to judge; a ULP that cannot connect moves no data): where the record
   * applies, under every oracle profile, such a rule that judged nothing is a SKIP naming the
   * record, not a MISS
   */
  hides: z.array(ruleRef).min(1).optional(),
  reference: z
    .string()
    .regex(
      /^(https?:\/\/\S+|[\w.+/-]+\.[a-z]+:[A-Za-z_]\w*(\(\))?)$/,
      "file:function (drivers/infiniband/hw/erdma/erdma_qp.c:erdma_post_recv) or a URL",
    ),
  // YAML's folded `>` text ends in a newline, which would split the verdict line it is quoted in
  note: z.string().trim().min(1),
});
export type KnownBug = z.infer<typeof knownBugSchema>;

/** The id a scenario names a shared record by. */
export const knownBugId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]*$/, "a known-bug id: lowercase letters, digits, dashes");

const registrySchema = z.record(
  z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lowercase letters, digits, dashes"),
  knownBugSchema.omit({ id: true }).extend({
    /**
     * the scenarios (names or globs) the record applies to without being named in them: a bug of
     * a driver or provider that every scenario meets where it runs
     */
    scenarios: z.array(z.string().min(1)).min(1).optional(),
  }),
);

type SharedRecord = { bug: KnownBug; scenarios?: RegExp[] };
let registry: Map<string, SharedRecord> | undefined;

function shared(): Map<string, SharedRecord> {
  if (!registry) {
    const src = YamlSource.parse(readFileSync(KNOWN_BUGS_FILE, "utf8"), KNOWN_BUGS_FILE);
    const data = src.check(registrySchema);
    registry = new Map(
      Object.entries(data).map(([id, { scenarios, ...bug }]) => [
        id,
        { bug: { id, ...bug }, ...(scenarios ? { scenarios: scenarios.map(globToRegExp) } : {}) },
      ]),
    );
  }
  return registry;
}

/** The shared records, read once (a bad file is one HilError naming file, line and field). */
export function sharedKnownBugs(): Map<string, KnownBug> {
  return new Map([...shared()].map(([id, r]) => [id, r.bug]));
}

/** The shared records that apply to a scenario by its name (their `scenarios` globs). */
export function sharedBugsOf(scenario: string): KnownBug[] {
  return [...shared().values()]
    .filter((r) => r.scenarios?.some((re) => re.test(scenario)))
    .map((r) => ({ ...r.bug, implied: true as const }));
}

/**
 * One known_bugs entry as written: the id of a shared record, or a record; either way the record.
 * The issues name the field that is wrong (not "matches neither form").
 */
export const knownBugEntry = z.unknown().transform((value, ctx): KnownBug => {
  if (typeof value === "string") {
    const shared = sharedKnownBugs();
    const bug = shared.get(value);
    if (bug) return bug;
    ctx.addIssue({
      code: "custom",
      input: value,
      message: `no known bug "${value}" in fixtures/known-bugs.yaml (${[...shared.keys()].join(", ")})`,
    });
    return z.NEVER;
  }
  const r = knownBugSchema.safeParse(value);
  if (r.success) return r.data;
  for (const issue of r.error.issues) {
    if (issue.code === "unrecognized_keys")
      for (const key of issue.keys)
        ctx.addIssue({ code: "custom", input: value, path: [...issue.path, key], message: "unknown field" });
    else ctx.addIssue({ code: "custom", input: value, path: issue.path, message: issue.message });
  }
  return z.NEVER;
});
