/**
 * A job directory from `hil lava-job` as `hil lava-run` takes it: job.yaml and lava-plan.json,
 * checked, with what the local device needs of the job (its context's memory and extra_options,
 * its timeout). Its images must be on this machine: file:// URLs of files that exist.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { HilError } from "../../util/errors.ts";
import { readLavaPlan } from "./judge-log.ts";
import { LAVA_JOB_FILE } from "./make-job.ts";
import { LAVA_PLAN_FILE, type LavaPlan } from "./plan.ts";

/** qemu.jinja2's memory when the job's context sets none */
const TEMPLATE_MEMORY_MB = 512;
/** lava-run's own default when a job names no timeout */
const DEFAULT_JOB_MINUTES = 60;

export interface LocalJob {
  dir: string;
  jobPath: string;
  planPath: string;
  plan: LavaPlan;
  /** the job's context: what the device template sees besides the device dictionary */
  context: Record<string, unknown>;
  memoryMb: number;
  /** QEMU options the job itself asks for (hil lava-job --qemu-option) */
  extraOptions: string[];
  jobMinutes: number;
}

interface JobFile {
  timeouts?: { job?: { minutes?: unknown } };
  context?: Record<string, unknown>;
  actions?: { deploy?: { images?: Record<string, { url?: string }> } }[];
}

function readJob(path: string): JobFile {
  let job: unknown;
  try {
    job = parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new HilError(`not a LAVA job (YAML): ${(err as Error).message}`, { where: path });
  }
  if (!job || typeof job !== "object") throw new HilError("not a LAVA job", { where: path });
  return job as JobFile;
}

function checkImages(job: JobFile, path: string): void {
  for (const action of job.actions ?? []) {
    for (const [label, image] of Object.entries(action.deploy?.images ?? {})) {
      const url = image.url ?? "";
      if (!url.startsWith("file://"))
        throw new HilError(
          `the job fetches its ${label} from ${url}: hil lava-run runs jobs whose images are file:// URLs (hil lava-job without --artifact-url)`,
          { where: path },
        );
      const file = fileURLToPath(url);
      if (!existsSync(file))
        throw new HilError(`the job's ${label} ${file} does not exist (was the job directory moved?)`, {
          where: path,
        });
    }
  }
}

function positive(value: unknown, fallback: number, what: string, where: string): number {
  const n = value === undefined ? fallback : Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new HilError(`the job's ${what} must be a positive whole number, not ${JSON.stringify(value)}`, {
      where,
    });
  return n;
}

export function readLocalJob(jobDir: string): LocalJob {
  const dir = resolve(jobDir);
  const jobPath = join(dir, LAVA_JOB_FILE);
  const planPath = join(dir, LAVA_PLAN_FILE);
  if (!existsSync(jobPath) || !existsSync(planPath))
    throw new HilError(`not a directory hil lava-job wrote (no ${LAVA_JOB_FILE} and ${LAVA_PLAN_FILE})`, {
      where: dir,
    });
  const plan = readLavaPlan(planPath);
  const job = readJob(jobPath);
  checkImages(job, jobPath);
  const context = job.context ?? {};
  return {
    dir,
    jobPath,
    planPath,
    plan,
    context,
    memoryMb: positive(context.memory, TEMPLATE_MEMORY_MB, "context memory (MiB)", jobPath),
    extraOptions: Array.isArray(context.extra_options) ? context.extra_options.map(String) : [],
    jobMinutes: positive(job.timeouts?.job?.minutes, DEFAULT_JOB_MINUTES, "timeouts.job.minutes", jobPath),
  };
}
