/**
 * Files users write (scenarios, plans, repro cases, device profiles, series, config fragments),
 * read with a size limit, so a mistake (a generated file gone wrong, /dev/zero, a log given as a
 * scenario) is one clear error instead of minutes of parsing and gigabytes of memory.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { HilError } from "./errors.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** The largest file of each kind hil reads; far above any real one (the shipped ones are <= 40 KiB). */
export const USER_FILE_LIMITS = {
  scenario: 256 * KiB,
  plan: 256 * KiB,
  case: 256 * KiB,
  "device profile": 256 * KiB,
  "config fragment": 1 * MiB,
  /** a whole series (an mbox, or the sum of a directory's patches) */
  series: 64 * MiB,
  /** hil lava-job's plan (every scenario compiled) and the job's log it judges */
  "LAVA plan": 16 * MiB,
  "LAVA log": 256 * MiB,
} as const;
export type UserFileKind = keyof typeof USER_FILE_LIMITS;

export function formatBytes(n: number): string {
  if (n >= MiB) return `${+(n / MiB).toFixed(1)} MiB`;
  if (n >= KiB) return `${+(n / KiB).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** `what`: what is too large when it is not one file (a directory of patches: "the series"). */
export function tooLarge(
  kind: UserFileKind,
  file: string,
  size: string,
  what = `the ${kind} file`,
): HilError {
  const limit = formatBytes(USER_FILE_LIMITS[kind]);
  return new HilError(`${what} is ${size}; a ${kind} may be at most ${limit}`, { where: file });
}

/**
 * Reads at most the kind's limit: the size is checked before reading, and reading stops one byte
 * past the limit, so files whose size stat cannot tell (a pipe, a device) are bounded too.
 * Errors opening or reading it are left to the caller, which knows what to say.
 */
export function readUserFile(
  file: string,
  kind: UserFileKind,
  limit: number = USER_FILE_LIMITS[kind],
): Buffer {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    if (size > limit) throw tooLarge(kind, file, formatBytes(size));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(64 * KiB, limit + 1 - total));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > limit) throw tooLarge(kind, file, `more than ${formatBytes(limit)}`);
    }
    return Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** `readUserFile` as UTF-8 text. */
export function readUserText(file: string, kind: UserFileKind): string {
  return readUserFile(file, kind).toString("utf8");
}
