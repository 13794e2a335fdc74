/**
 * Writes into a run directory. Every file goes whole or not at all (util/atomic-write.ts), and
 * verdicts.json, the record that makes the directory a run, is written last, by writeRunRecord,
 * after the record is checked against the schema (a writer cannot produce what the readers
 * refuse). A full file system (ENOSPC, EDQUOT) is one HilError naming the run directory and the
 * file that could not be written, with the exit status of an environment problem (3).
 */
import { join, relative } from "node:path";
import { diskFullError, writeFileAtomic, writtenPathOf } from "../../util/atomic-write.ts";
import { ENVIRONMENT_EXIT, HilError, isHilError } from "../../util/errors.ts";
import { type RunRecord, runRecordIssues, runRecordSchema, VERDICTS_FILE } from "./schema.ts";

/**
 * The one error a full file system under the run directory becomes (`what`: the file, default the
 * one the error names), or undefined for any other error.
 */
export function runDirFull(runDir: string, err: unknown, what?: string): HilError | undefined {
  if (isHilError(err) && err.exitCode === ENVIRONMENT_EXIT && diskFullError(err)) return err;
  const full = diskFullError(err);
  if (!full) return undefined;
  const path = writtenPathOf(full);
  what ??= path ? relative(runDir, path) || path : "a file";
  const why = full.code === "EDQUOT" ? "the disk quota is exceeded" : "no space is left";
  return new HilError(`${why} on the run directory's file system: ${what} could not be written`, {
    where: runDir,
    detail: `(${full.code}) free space there, or give a --run-dir on a larger file system`,
    exitCode: ENVIRONMENT_EXIT,
    cause: full,
  });
}

/** Writes `<runDir>/<name>` whole (temp + rename); a full disk is runDirFull's error. */
export async function writeRunFile(runDir: string, name: string, data: string | Uint8Array): Promise<void> {
  const file = join(runDir, name);
  try {
    await writeFileAtomic(file, data);
  } catch (err) {
    const full = runDirFull(runDir, err, name);
    if (full) throw full;
    throw new HilError(`${name} could not be written`, {
      where: runDir,
      detail: (err as Error).message,
      cause: err,
    });
  }
}

export async function writeRunRecord(runDir: string, record: RunRecord): Promise<void> {
  const checked = runRecordSchema.safeParse(record);
  if (!checked.success) {
    throw new HilError(`refusing to write a ${VERDICTS_FILE} its readers would not accept`, {
      where: `${runDir}/${VERDICTS_FILE}`,
      detail: runRecordIssues(checked.error),
    });
  }
  await writeRunFile(runDir, VERDICTS_FILE, `${JSON.stringify(record, null, 2)}\n`);
}
