/**
 * Writes a run directory's verdicts.json: the record is checked against the schema first (a
 * writer cannot produce what the readers refuse), then written to a temporary file beside it and
 * renamed over it, so a reader never sees half a record.
 */
import { rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { type RunRecord, runRecordSchema, VERDICTS_FILE } from "./schema.ts";

export async function writeRunRecord(runDir: string, record: RunRecord): Promise<void> {
  const file = join(runDir, VERDICTS_FILE);
  const checked = runRecordSchema.safeParse(record);
  if (!checked.success) {
    const issues = checked.error.issues
      .slice(0, 8)
      .map((x) => `${x.path.join(".") || "(top)"}: ${x.message}`)
      .join("\n");
    throw new HilError(`refusing to write a ${VERDICTS_FILE} its readers would not accept`, {
      where: file,
      detail: issues,
    });
  }
  const temp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temp, `${JSON.stringify(record, null, 2)}\n`);
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw new HilError(`${VERDICTS_FILE} could not be written`, { where: file, cause: err });
  }
}
