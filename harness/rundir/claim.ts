/**
 * A run's claim on its run directory: the directory is made (if missing) and locked (lock.ts) for
 * the run's whole life, and refused when it already holds a run, finished or interrupted. A run
 * directory holds one run: a new one beside an old one's traces would mix their evidence (a report
 * would quote the old traces under the new verdicts), and moving the old run aside inside the new
 * one would nest runs in runs and grow without end in CI; refusing loses nothing and the remedy is
 * one command. A run that fails before it records anything (bad input found late, a full disk)
 * discards what it wrote, so the directory is as it was.
 */
import { readdir, rm, rmdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { isTempName } from "../../util/atomic-write.ts";
import { HilError } from "../../util/errors.ts";
import { makeDir } from "../../util/make-dir.ts";
import { LOCK_FILE, lockRunDir } from "./lock.ts";
import { type RunRecord, VERDICTS_FILE } from "./schema.ts";
import { runDirFull, writeRunRecord } from "./write.ts";

/** What a run writes into its directory (hil run, a matrix's job, repro, validate's sides). */
const RUN_ENTRIES: readonly RegExp[] = [
  new RegExp(`^${VERDICTS_FILE.replace(".", "\\.")}$`),
  /^traces$/,
  /^series$/,
  /^console(-\d+)?\.log$/,
  /^hw-trace(-\d+)?\.jsonl$/,
  /^repro\.json$/,
  // hil judge's and hil lava-run's copy of the lab's log (harness/lava/judge-log.ts LAVA_LOG_COPY)
  /^lava-log\.txt$/,
];

/** What a matrix writes into its output directory (hil matrix --out). */
const MATRIX_ENTRIES: readonly RegExp[] = [/^matrix\.json$/, /^jobs$/];

export type RunDirKind = "run" | "matrix";

export interface RunDirClaim {
  /** absolute path */
  readonly dir: string;
  /** the run is over: the lock goes */
  release(): Promise<void>;
  /** the run failed before it recorded anything: what it wrote goes, then the lock (and a directory it made) */
  discard(): Promise<void>;
}

function entriesOf(kind: RunDirKind): readonly RegExp[] {
  return kind === "matrix" ? MATRIX_ENTRIES : RUN_ENTRIES;
}

async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/** Makes `path` (and its parents) if missing, locks it and checks it holds no run yet. */
export async function claimRunDir(path: string, kind: RunDirKind = "run"): Promise<RunDirClaim> {
  const dir = resolve(path);
  const existed = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  try {
    await makeDir(dir);
  } catch (err) {
    throw new HilError(`cannot make the ${kind === "matrix" ? "matrix" : "run"} directory`, {
      where: dir,
      detail: (err as Error).message,
      cause: err,
    });
  }
  const lock = await lockRunDir(dir);
  const entries = entriesOf(kind);
  const previous = (await namesIn(dir)).filter((n) => entries.some((re) => re.test(n)));
  if (previous.length > 0) {
    await lock.release();
    throw new HilError(
      `already holds a ${kind === "matrix" ? "matrix" : "run"} (${previous.sort().join(", ")}): a run directory holds one run`,
      { where: dir, detail: "give a new --run-dir (hil matrix: --out), or remove this one first" },
    );
  }
  return {
    dir,
    release: () => lock.release(),
    async discard() {
      for (const name of await namesIn(dir))
        if (entries.some((re) => re.test(name)) || isTempName(name))
          await rm(join(dir, name), { recursive: true, force: true });
      await lock.release();
      if (!existed) await rmdir(dir).catch(() => {}); // only when nothing else is in it
    },
  };
}

export { LOCK_FILE };

/**
 * A whole run written into a directory it claims: `fill` writes the run's files and returns its
 * record, verdicts.json is written last, and the claim released. Whatever throws discards what was
 * written (a full file system as one error naming the directory).
 */
export async function writeClaimedRun<R extends RunRecord>(
  runDir: string,
  fill: () => Promise<R>,
): Promise<R> {
  const claim = await claimRunDir(runDir);
  try {
    const record = await fill();
    await writeRunRecord(runDir, record);
    await claim.release();
    return record;
  } catch (err) {
    await claim.discard();
    throw runDirFull(runDir, err) ?? err;
  }
}
