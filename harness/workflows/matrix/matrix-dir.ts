/** A matrix directory (`hil matrix --out`, `hil merge --out`) read back: its index and each job's run directory. */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { HilError } from "../../../util/errors.ts";
import { loadRunDir, type RunDir } from "../../rundir/read.ts";
import { VERDICTS_FILE } from "../../rundir/schema.ts";
import type { MatrixJobEntry } from "./matrix.ts";
import { MATRIX_FILE, type MatrixIndex } from "./matrix.ts";
import { readIndex } from "./merge.ts";

export interface MatrixReportJob {
  entry: MatrixJobEntry;
  /** absent for a job no shard ran */
  run?: RunDir;
}

export interface MatrixDir {
  dir: string;
  index: MatrixIndex;
  jobs: MatrixReportJob[];
}

/** Whether `dir` is a matrix directory (matrix.json) rather than a run directory (verdicts.json). */
export function isMatrixDir(dir: string): boolean {
  return !existsSync(join(dir, VERDICTS_FILE)) && existsSync(join(dir, MATRIX_FILE));
}

/** A matrix directory with each job's run directory loaded (a missing or corrupt one is named). */
export async function loadMatrixDir(path: string): Promise<MatrixDir> {
  const dir = resolve(path);
  const index = await readIndex(dir);
  const jobs: MatrixReportJob[] = [];
  for (const entry of index.jobs) {
    if (entry.missing) {
      jobs.push({ entry });
      continue;
    }
    const run = await loadRunDir(join(dir, entry.runDir)).catch((err: unknown) => {
      throw new HilError(
        `job ${entry.id} of the matrix: ${err instanceof HilError ? err.message : String(err)}`,
        {
          where: join(dir, entry.runDir),
          cause: err,
        },
      );
    });
    jobs.push({ entry, run });
  }
  if (jobs.length === 0)
    throw new HilError("the matrix directory has no job yet", { where: join(dir, MATRIX_FILE) });
  return { dir, index, jobs };
}
