/**
 * Files written whole or not at all: the bytes go to a temporary file beside the target, which is
 * renamed over it once complete (rename(2) replaces the name atomically), so a reader finds the old
 * file, the new one, or none, never half of one. A failed write removes its temporary file. And
 * whether an error is the file system being full (ENOSPC, or EDQUOT: the user's quota).
 */
import { randomBytes } from "node:crypto";
import { copyFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** The temporary name a write to `file` goes to first (hidden, unique to this process and call). */
export function tempNameFor(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

/** Whether `name` is such a temporary file (a process killed mid-write leaves one). */
export function isTempName(name: string): boolean {
  return /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/.test(name);
}

async function viaTemp(file: string, fill: (temp: string) => Promise<void>): Promise<void> {
  const temp = tempNameFor(file);
  try {
    await fill(temp);
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true }).catch(() => {});
    // name the file the caller asked for, not the temporary one
    const e = err as NodeJS.ErrnoException & { dest?: string };
    if (e.path === temp) e.path = file;
    if (e.dest === temp) e.dest = file;
    throw err;
  }
}

export function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: { mode?: number } = {},
): Promise<void> {
  return viaTemp(file, (temp) => writeFile(temp, data, opts.mode === undefined ? {} : { mode: opts.mode }));
}

export function copyFileAtomic(source: string, file: string): Promise<void> {
  return viaTemp(file, (temp) => copyFile(source, temp));
}

const DISK_FULL = new Set(["ENOSPC", "EDQUOT"]);

/** The file a failed write was writing: a copy's destination, else the error's path. */
export function writtenPathOf(err: NodeJS.ErrnoException & { dest?: string }): string | undefined {
  return err.dest ?? err.path;
}

/** The ENOSPC/EDQUOT error in `err` or its chain of causes, if any. */
export function diskFullError(err: unknown): NodeJS.ErrnoException | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && DISK_FULL.has(code)) return e as NodeJS.ErrnoException;
  }
  return undefined;
}
