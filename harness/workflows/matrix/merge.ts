/**
 * `hil merge`: joins matrix directories (the shards of one plan) into one. Every input must come
 * from the same plan (the same job list, by content hash), no job may be in two inputs, and each
 * job's recorded spec must be the plan's; anything else is refused before anything is written.
 * Jobs no input ran are listed as MISS. The job run directories are copied under <out>/jobs/.
 */
import { existsSync, readdirSync } from "node:fs";
import { cp, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { HilError } from "../../../util/errors.ts";
import { makeDir } from "../../../util/make-dir.ts";
import { progress } from "../../../util/progress.ts";
import { readRunRecord } from "../../rundir/read.ts";
import { VERDICTS_FILE } from "../../rundir/schema.ts";
import {
  JOBS_DIR,
  MATRIX_FILE,
  type MatrixIndex,
  type MatrixJobEntry,
  matrixExitCode,
  writeIndex,
} from "./matrix.ts";

export async function readIndex(dir: string): Promise<MatrixIndex> {
  const file = join(resolve(dir), MATRIX_FILE);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    throw new HilError("not a matrix directory (no matrix.json)", { where: resolve(dir) });
  }
  let data: MatrixIndex;
  try {
    data = JSON.parse(text) as MatrixIndex;
  } catch (err) {
    throw new HilError(`matrix.json is not JSON: ${(err as Error).message}`, { where: file });
  }
  if (data.version !== 1 || !data.plan?.hash || !Array.isArray(data.plan.jobs) || !Array.isArray(data.jobs))
    throw new HilError("matrix.json lacks plan.hash, plan.jobs or jobs (not written by hil matrix?)", {
      where: file,
    });
  return data;
}

export interface MergeInput {
  dir: string;
  index: MatrixIndex;
}

const shardName = (s: MatrixIndex["shard"]) => (s ? `shard ${s.index}/${s.count}` : "the whole plan");
const dealingName = (i: MatrixIndex) =>
  i.dealing === "kernel"
    ? "dealt by kernel"
    : "dealt round-robin (by a hil before shards were dealt by kernel)";

/** The merged index (pure: checks consistency and overlap; throws HilError naming the inputs). */
export function mergeIndexes(inputs: readonly MergeInput[]): MatrixIndex {
  const [first] = inputs;
  if (!first) throw new HilError("hil merge needs at least one matrix directory");
  for (const x of inputs.slice(1)) {
    if (x.index.plan.hash !== first.index.plan.hash)
      throw new HilError(
        `inconsistent shards: ${x.dir} ran plan ${x.index.plan.name} (${x.index.plan.hash.slice(0, 12)}), ${first.dir} ran ${first.index.plan.name} (${first.index.plan.hash.slice(0, 12)})`,
        { detail: "merge only the shards of one plan, expanded from the same plan file" },
      );
    if ((x.index.shard?.count ?? 1) !== (first.index.shard?.count ?? 1))
      throw new HilError(
        `inconsistent shards: ${x.dir} is ${shardName(x.index.shard)}, ${first.dir} is ${shardName(first.index.shard)}`,
      );
    if (x.index.dealing !== first.index.dealing)
      throw new HilError(
        `inconsistent shards: ${x.dir} was ${dealingName(x.index)}, ${first.dir} ${dealingName(first.index)}`,
        { detail: "run every shard of a plan with the same hil: the shards are not the same job lists" },
      );
  }
  const planned = new Map(first.index.plan.jobs.map((j) => [j.id, j.spec]));
  const owner = new Map<string, { dir: string; entry: MatrixJobEntry }>();
  for (const x of inputs) {
    for (const entry of x.index.jobs) {
      const spec = planned.get(entry.id);
      if (!spec)
        throw new HilError(
          `inconsistent shards: job ${entry.id} is not a job of plan ${first.index.plan.name}`,
          {
            where: join(x.dir, MATRIX_FILE),
          },
        );
      if (JSON.stringify(spec) !== JSON.stringify(entry.spec))
        throw new HilError(
          `inconsistent shards: job ${entry.id} ran ${JSON.stringify(entry.spec)}, the plan says ${JSON.stringify(spec)}`,
          {
            where: join(x.dir, MATRIX_FILE),
          },
        );
      const other = owner.get(entry.id);
      if (other)
        throw new HilError(
          `overlapping shards: job ${entry.id} is in both ${other.dir} (${shardName(inputs.find((i) => i.dir === other.dir)?.index.shard ?? null)}) and ${x.dir} (${shardName(x.index.shard)})`,
          { detail: "give each shard once; hil matrix --shard i/n runs disjoint parts of a plan" },
        );
      owner.set(entry.id, { dir: x.dir, entry });
    }
  }
  const jobs: MatrixJobEntry[] = first.index.plan.jobs.map(({ id, spec }) => {
    const own = owner.get(id);
    if (own) return own.entry;
    return {
      id,
      spec,
      runDir: `${JOBS_DIR}/${id}`,
      exitCode: 3,
      counts: { MISS: 1 },
      wallMs: 0,
      missing: "no merged shard ran it",
    };
  });
  return {
    version: 1,
    plan: first.index.plan,
    shard: null,
    mergedFrom: inputs.map((x) => ({ dir: x.dir, shard: x.index.shard })),
    jobs,
    exitCode: matrixExitCode(jobs),
    wallMs: inputs.reduce((n, x) => n + x.index.wallMs, 0),
  };
}

/** Reads, checks and joins the inputs into `out` (which must not exist or be empty). */
export async function mergeMatrixDirs(dirs: readonly string[], out: string): Promise<MatrixIndex> {
  const target = resolve(out);
  const inputs: MergeInput[] = [];
  for (const d of dirs) {
    const dir = resolve(d);
    if (dir === target) throw new HilError("--out is one of the inputs", { where: dir });
    if (inputs.some((x) => x.dir === dir))
      throw new HilError("a matrix directory is given twice", { where: dir });
    inputs.push({ dir, index: await readIndex(dir) });
  }
  const merged = mergeIndexes(inputs);
  for (const j of merged.jobs) {
    if (j.missing) continue;
    const from = inputs.find((x) => x.index.jobs.some((e) => e.id === j.id));
    if (!from) continue;
    const runDir = join(from.dir, j.runDir);
    if (!existsSync(join(runDir, VERDICTS_FILE)))
      throw new HilError(`job ${j.id}: its run directory has no ${VERDICTS_FILE}`, { where: runDir });
    await readRunRecord(runDir).catch((err: unknown) => {
      throw new HilError(`job ${j.id}: its ${VERDICTS_FILE} is not a run record`, {
        where: runDir,
        cause: err,
      });
    });
  }
  if (existsSync(target) && readdirSync(target).length > 0)
    throw new HilError("the output directory exists and is not empty", { where: target });
  const missing = merged.jobs.filter((j) => j.missing).length;
  const step = progress.step(`[merge] ${inputs.length} matrix dir(s) -> ${target}`);
  try {
    await makeDir(join(target, JOBS_DIR));
    let n = 0;
    for (const j of merged.jobs) {
      step.update(n++, merged.jobs.length, j.id);
      if (j.missing) continue;
      const from = inputs.find((x) => x.index.jobs.some((e) => e.id === j.id));
      if (from) await cp(join(from.dir, j.runDir), join(target, j.runDir), { recursive: true });
    }
    await writeIndex(target, merged);
    step.succeed(`${merged.jobs.length - missing} job(s)${missing ? `, ${missing} missing (MISS)` : ""}`);
  } catch (err) {
    step.fail();
    await rm(target, { recursive: true, force: true });
    throw err;
  }
  return merged;
}
