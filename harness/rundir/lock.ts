/**
 * The lock a run holds on its run directory while it writes it: <dir>/.hil-run.lock, naming the
 * holder (pid, host, when it started). It is made whole (written beside, then hard-linked to its
 * name, which fails if the name exists) and removed when the run ends, also when the process exits
 * on a signal. A lock whose holder is gone (no such pid on this host, or the pid now belongs to a
 * process that started later) is stale: the next run takes it over and says so.
 */
import { readFileSync, unlinkSync } from "node:fs";
import { link, readFile, rename, rm, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { tempNameFor } from "../../util/atomic-write.ts";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";

export const LOCK_FILE = ".hil-run.lock";

interface Holder {
  pid: number;
  host: string;
  started: string;
  /** the process's start time in clock ticks after boot (/proc/<pid>/stat field 22), to tell a reused pid */
  procStart?: string;
}

export interface RunDirLock {
  readonly file: string;
  release(): Promise<void>;
}

/** Field 22 of /proc/<pid>/stat, or undefined where there is no procfs. */
function procStartOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // the command name (field 2) is in parentheses and may hold spaces: count from after it
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function parseHolder(text: string): Holder | undefined {
  try {
    const h = JSON.parse(text) as Partial<Holder>;
    if (typeof h.pid !== "number" || typeof h.host !== "string") return undefined;
    return { pid: h.pid, host: h.host, started: String(h.started ?? "?"), procStart: h.procStart };
  } catch {
    return undefined;
  }
}

function isAlive(h: Holder): boolean {
  if (h.host !== hostname()) return true; // another machine's process: it cannot be checked from here
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  const now = procStartOf(h.pid);
  return h.procStart === undefined || now === undefined || now === h.procStart;
}

function describe(h: Holder): string {
  return `pid ${h.pid}${h.host === hostname() ? "" : ` on ${h.host}`}, started ${h.started}`;
}

async function readHolder(file: string): Promise<{ text: string; holder: Holder | undefined } | undefined> {
  try {
    const text = await readFile(file, "utf8");
    return { text, holder: parseHolder(text) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Creates the lock file from a complete temporary file; false if a lock is there already. */
async function tryCreate(file: string, text: string): Promise<boolean> {
  const temp = tempNameFor(file);
  await writeFile(temp, text);
  try {
    await link(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
}

/**
 * Moves a stale lock out of the way, unless it changed since it was judged stale (another run took
 * it over meanwhile): then it is put back and false returned.
 */
async function removeStale(file: string, judged: string): Promise<boolean> {
  const aside = tempNameFor(file);
  try {
    await rename(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
  const moved = await readFile(aside, "utf8").catch(() => "");
  if (moved !== judged) {
    await link(aside, file).catch(() => {});
    await rm(aside, { force: true });
    return false;
  }
  await rm(aside, { force: true });
  return true;
}

/**
 * Locks `dir` (which exists) for this process. A live holder is one HilError naming the directory
 * and the holder (exit 2); a stale lock is taken over with a notice on stderr.
 */
export async function lockRunDir(dir: string): Promise<RunDirLock> {
  const file = join(dir, LOCK_FILE);
  const me: Holder = {
    pid: process.pid,
    host: hostname(),
    started: new Date().toISOString(),
    ...(procStartOf(process.pid) ? { procStart: procStartOf(process.pid) } : {}),
  };
  const text = `${JSON.stringify(me)}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (await tryCreate(file, text)) return held(file, text);
    const found = await readHolder(file);
    if (!found) continue; // released meanwhile
    const { holder } = found;
    if (holder && isAlive(holder))
      throw new HilError(`the run directory is in use by another hil run (${describe(holder)})`, {
        where: dir,
        detail: `its lock: ${file}\ngive another --run-dir, or wait for that run to end`,
      });
    if (!(await removeStale(file, found.text))) continue;
    progress.info(
      `hil: notice: ${dir}: taking over the lock of a run that is gone (${holder ? describe(holder) : `unreadable ${LOCK_FILE}`})`,
    );
  }
  throw new HilError("the run directory's lock keeps changing hands: another hil run is starting in it", {
    where: dir,
  });
}

function held(file: string, text: string): RunDirLock {
  const removeSync = () => {
    try {
      if (readFileSync(file, "utf8") === text) unlinkSync(file);
    } catch {
      // gone already
    }
  };
  const unregister = onProcessExit(removeSync);
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      unregister();
      const now = await readFile(file, "utf8").catch(() => undefined);
      if (now === text) await unlink(file).catch(() => {});
    },
  };
}
