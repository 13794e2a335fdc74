/**
 * verdicts.json, the record of one run: the kernel, driver, executor and device; the probe
 * stage's checks; each scenario's judgements per oracle profile with per-rule verdicts; the
 * results (one per check and per scenario and profile: the table and the exit code); timings;
 * a repeated run's stability; a workflow job's spec; the versions of hil, QEMU, the kernel and
 * rdma-core that produced it. This schema is what every writer (hil run,
 * matrix, repro, validate) is checked against before writing and what every reader (the
 * reports, validate's diff, merge, repro) parses. Readers are lenient with fields they do not
 * know (a newer hil's record still reads); writers cannot write a record this schema refuses.
 */
import { z } from "zod";
import { VERDICTS } from "../verdict.ts";

export const VERDICTS_FILE = "verdicts.json";

const verdict = z.enum(VERDICTS);

const check = z.looseObject({
  id: z.string(),
  title: z.string(),
  verdict,
  reason: z.string(),
  evidence: z.array(z.string()).optional(),
  /** an XFAIL's or XPASS's cause (absent in records of hil before it was recorded) */
  expectedBy: z.enum(["injected fault", "known bug"]).optional(),
});

const ruleVerdict = z.looseObject({
  rule: z.union([z.string(), z.number()]).transform(String),
  title: z.string(),
  citation: z.string().optional(),
  verdict,
  reason: z.string(),
  evidence: z.array(z.string()).optional(),
  /** how many events of the run the rule was applied to (a covered rule that judged none is a MISS) */
  judged: z.number().int().min(0).optional(),
  /** false when the oracle profile does not judge the rule */
  applies: z.boolean().optional(),
  /**
   * a FAIL's problems: each reason, the WRs it is about (post: the index in the rule's trace of the
   * record that posted the WR) and the completions it judged wrong (their indexes in the trace)
   */
  problems: z
    .array(
      z.looseObject({
        reason: z.string(),
        wrs: z
          .array(
            z.object({
              qp: z.string(),
              queue: z.enum(["sq", "rq"]),
              wrId: z.number(),
              post: z.number().int().min(0).optional(),
            }),
          )
          .optional(),
        cqes: z.array(z.number().int().min(0)).optional(),
      }),
    )
    .optional(),
  knownBug: z.looseObject({ reference: z.string(), note: z.string() }).optional(),
  /** an XFAIL made by the scenario's own injected fault */
  injectedFault: z.literal(true).optional(),
});

const judgement = z.looseObject({
  profile: z.string(),
  verdict,
  rules: z.array(ruleVerdict),
});

const scenario = z.looseObject({
  /** a repetition's is <scenario>#<k> */
  name: z.string(),
  file: z.string().optional(),
  scenario: z.string().optional(),
  repetition: z.number().int().min(1).optional(),
  /** the rules the scenario covers (each rule's `judged` says how many events it was applied to) */
  covers: z.array(z.string()).optional(),
  judgements: z.array(judgement),
  outcome: z.looseObject({ verdict, reason: z.string() }).optional(),
  trace: z.string().optional(),
  hwTrace: z.string().optional(),
  /** what the harness saw besides the trace: stuck steps, console events, faults armed (protocol/observations.ts) */
  observations: z
    .array(
      z.looseObject({
        ev: z.string(),
        step: z.number().optional(),
        kind: z.string().optional(),
        spec: z.record(z.string(), z.unknown()).optional(),
      }),
    )
    .optional(),
  knownBugs: z.array(z.looseObject({ reference: z.string().optional() })).optional(),
  /** the scenario's premise: why it needs none, or whether it held, condition by condition (null: not observable here) */
  premise: z
    .union([
      z.looseObject({ none: z.string() }),
      z.looseObject({
        held: z.boolean(),
        conditions: z.array(
          z.looseObject({ condition: z.string(), held: z.boolean().nullable(), reason: z.string() }),
        ),
      }),
    ])
    .optional(),
  durationMs: z.number().optional(),
});

/** Whether a scenario's repetitions agree under one oracle profile (suite/repeat.ts Stability). */
const stability = z.looseObject({
  scenario: z.string(),
  profile: z.string(),
  repetitions: z.number().int().min(1),
  /** how many repetitions had each verdict */
  verdicts: z.partialRecord(verdict, z.number().int().min(0)),
  /** the repetitions' verdicts differ */
  flaky: z.boolean(),
  /** the worst verdict of any repetition (FAIL, ERROR, MISS, XFAIL, XPASS, PASS, SKIP) */
  worst: verdict,
  /** the first repetition's verdict and reason */
  first: z.object({ verdict, reason: z.string() }),
  /** when flaky: the first repetition whose verdict is not the first repetition's */
  differs: z.object({ repetition: z.number().int().min(1), verdict, reason: z.string() }).optional(),
});

/** The patch series the kernel was built with, as a run may record it (see seriesOf). */
const series = z.looseObject({
  path: z.string().optional(),
  patches: z.array(
    z.looseObject({
      /** file name in the run directory's series/ folder, or the patch's source */
      name: z.string(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      subject: z.string().optional(),
    }),
  ),
});

/**
 * The emulated device (its profile, its trace file, the guest NIC's MAC when not the default), an
 * external vfio-user server (its socket and the MAC) or a host PCI function passed through (its
 * address and the MAC).
 */
const device = z
  .looseObject({
    profile: z.string().optional(),
    external: z.string().optional(),
    pci: z.string().optional(),
    mac: z.string().optional(),
  })
  .refine((d) => d.profile !== undefined || d.external !== undefined || d.pci !== undefined, {
    message: "a device has a profile (the emulated one), an external socket or a host PCI address",
  });

/**
 * A workflow job's name and spec (hil matrix, repro, validate; hil run's own job has one too) and
 * the directory its relative paths (kernel, series, configs, scenario files, a profile file) are
 * relative to (absent in records of hil before it was recorded).
 */
const job = z.looseObject({
  id: z.string().optional(),
  baseDir: z.string().optional(),
  spec: z.looseObject({
    kernel: z.string(),
    series: z.string().optional(),
    configs: z.array(z.string()).optional(),
    driver: z.string(),
    executor: z.string(),
    deviceProfile: z.string().optional(),
    scenarios: z.string(),
    /** the rule sets it was judged under (--rules), when not each scenario's own */
    oracle: z.array(z.string()).optional(),
  }),
});

/**
 * The versions that produced the run (absent in records of hil before they were recorded): hil's,
 * QEMU's, the kernel's (its spec as given, its release as built and booted, a debian: base's
 * package version, a <repo>@<ref> base's commit) and the guest image's rdma-core (Debian's package
 * version).
 */
const gitCheckout = z.looseObject({
  repository: z.string(),
  ref: z.string(),
  commit: z.string(),
  tree: z.string(),
  branch: z.string().optional(),
  remoteUrl: z.string().optional(),
});

const versions = z.looseObject({
  hil: z.string(),
  qemu: z.string().optional(),
  kernel: z
    .looseObject({
      spec: z.string(),
      release: z.string().optional(),
      debianVersion: z.string().optional(),
      git: gitCheckout.optional(),
    })
    .optional(),
  rdmaCore: z.string().optional(),
});

export const runRecordSchema = z.looseObject({
  kernel: z.string(),
  release: z.string().optional(),
  driver: z.string().optional(),
  executor: z.string().optional(),
  deviceProfile: z.string().optional(),
  device: device.nullable().optional(),
  boots: z.number().optional(),
  /** where the suite's time went: booting guests, running scenarios, judging them */
  timings: z.looseObject({ bootMs: z.number(), runMs: z.number(), judgeMs: z.number() }).optional(),
  wallMs: z.number().optional(),
  /** the part of wallMs spent making the kernel, image and module ready (a build, or cache hits) */
  prepareMs: z.number().optional(),
  startedAt: z.string().optional(),
  probe: z.array(check).optional(),
  scenarios: z.array(scenario).optional(),
  repeat: z.number().int().min(1).optional(),
  stability: z.array(stability).optional(),
  series: series.optional(),
  results: z.array(check),
  job: job.optional(),
  /** run with --strict: an XPASS failed it */
  strict: z.boolean().optional(),
  versions: versions.optional(),
  /** the hil command line that made the run (the arguments after `hil`) and the directory it ran in */
  invocation: z.looseObject({ argv: z.array(z.string()), cwd: z.string() }).optional(),
  /** hil run --target: the machine the suite ran on (harness/target/run.ts TargetRecord) */
  target: z
    .looseObject({
      url: z.string(),
      host: z.string(),
      hostKey: z.string(),
      release: z.string(),
      device: z.string(),
      driver: z.string(),
      firmware: z.string().optional(),
      netdev: z.string(),
      addr: z.string(),
      left: z.array(z.string()).optional(),
    })
    .optional(),
});

export type RunCheck = z.infer<typeof check>;
export type RunRule = z.infer<typeof ruleVerdict>;
export type RunJudgement = z.infer<typeof judgement>;
export type RunScenario = z.infer<typeof scenario>;
export type RunSeries = z.infer<typeof series>;
export type RunStability = z.infer<typeof stability>;
export type RunRecord = z.infer<typeof runRecordSchema>;
export type RunJob = z.infer<typeof job>;
export type RunVersions = z.infer<typeof versions>;

/** Why a value is not a run record: its first issues, one a line, each at its path. */
export function runRecordIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 8)
    .map((x) => `${x.path.join(".") || "(top)"}: ${x.message}`)
    .join("\n");
}
