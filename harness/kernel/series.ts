import { readdirSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { HilError } from "../../util/errors.ts";
import { hashParts } from "../../util/hash.ts";
import { formatBytes, readUserFile, tooLarge, USER_FILE_LIMITS } from "../../util/user-file.ts";

/** One patch of a series, as `patch -p1` will read it. */
export interface Patch {
  /** 1-based position in the series */
  index: number;
  /** where it came from: a file name, or "<mbox> #<n>" */
  source: string;
  subject: string;
  text: string;
}

export interface Series {
  path: string;
  /** content key: the patches' bytes in order (for a directory, with their names) */
  key: string;
  patches: Patch[];
}

/**
 * The "From " line that starts each message of an mbox: `git format-patch` writes
 * "From <commit> Mon Sep 17 00:00:00 2001", b4 writes "From git@z Thu Jan  1 00:00:00 1970".
 * A "From " line inside a body is escaped as ">From " by both, so it never matches.
 */
const MBOX_SEPARATOR =
  /^From \S+ +(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d \d{4}$/;

export function isMboxSeparator(line: string): boolean {
  return MBOX_SEPARATOR.test(line);
}

/** Messages of an mbox, each without its "From " line; text before the first separator is ignored. */
export function splitMboxMessages(text: string): string[] {
  const messages: string[] = [];
  let current: string[] | undefined;
  for (const line of text.split("\n")) {
    if (isMboxSeparator(line)) {
      if (current) messages.push(current.join("\n"));
      current = [];
    } else current?.push(line.replace(/^>(>*From )/, "$1"));
  }
  if (current) messages.push(current.join("\n"));
  return messages;
}

/** The Subject header of a message (unfolded, RFC 2047 words decoded), or undefined. */
export function messageSubject(message: string): string | undefined {
  const headerEnd = message.search(/\n\s*\n/);
  const headers = (headerEnd < 0 ? message : message.slice(0, headerEnd)).replace(/\n[ \t]+/g, " ");
  const m = /^Subject:[ \t]*(.*)$/im.exec(headers);
  return m?.[1] === undefined ? undefined : decodeEncodedWords(m[1].trim());
}

function decodeEncodedWords(text: string): string {
  return text
    .replace(/\?=\s+=\?/g, "?==?")
    .replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=/g, (_all, _charset: string, enc: string, data: string) => {
      const bytes =
        enc.toLowerCase() === "b"
          ? Buffer.from(data, "base64")
          : Buffer.from(
              data
                .replace(/_/g, " ")
                .replace(/=([0-9a-fA-F]{2})/g, (_m, hex: string) =>
                  String.fromCharCode(Number.parseInt(hex, 16)),
                ),
              "latin1",
            );
      return bytes.toString("utf8");
    });
}

export function hasDiff(text: string): boolean {
  return /^(diff --git |--- \S|\+\+\+ \S)/m.test(text);
}

/** "[PATCH 0/3] ..." or "[PATCH v2 00/12] ...": a cover letter, which carries no diff. */
export function isCoverLetter(subject: string | undefined): boolean {
  return subject !== undefined && /^\[[^\]]*\b0+\/\d+\s*\]/.test(subject);
}

/** The patches of an mbox text (cover letters skipped). A file with no mbox separator is one patch. */
export function patchesFromMbox(text: string, source: string): Patch[] {
  const messages = splitMboxMessages(text);
  if (messages.length === 0) {
    if (!hasDiff(text))
      throw new HilError("contains no patch (no mbox messages and no diff)", { where: source });
    return [{ index: 1, source, subject: messageSubject(text) ?? source, text }];
  }
  const patches: Patch[] = [];
  messages.forEach((message, i) => {
    const subject = messageSubject(message);
    if (isCoverLetter(subject) && !hasDiff(message)) return;
    if (!hasDiff(message)) {
      throw new HilError(`message ${i + 1} ("${subject ?? "no subject"}") contains no diff`, {
        where: source,
      });
    }
    patches.push({
      index: patches.length + 1,
      source: `${source} #${i + 1}`,
      subject: subject ?? `message ${i + 1}`,
      text: message,
    });
  });
  if (patches.length === 0)
    throw new HilError("contains no patches (only a cover letter?)", { where: source });
  return patches;
}

/** *.patch files of a directory in the order they apply: sorted by name, bytewise. */
export function patchFileNames(names: readonly string[]): string[] {
  return names.filter((n) => n.endsWith(".patch")).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Whether the series at `full` (given as `path`) is a directory of patches; an error when it is missing. */
export function isSeriesDirectory(path: string, full: string): boolean {
  try {
    return statSync(full).isDirectory();
  } catch {
    throw new HilError(`series ${path} does not exist`, {
      detail: "give an mbox (git format-patch --stdout, b4 am) or a directory of *.patch files",
    });
  }
}

/** Reads a series from an mbox / single patch file or a directory of *.patch files. */
export function loadSeries(path: string, cwd = process.cwd()): Series {
  const full = resolve(cwd, path);
  const isDir = isSeriesDirectory(path, full);
  if (!isDir) {
    const bytes = readUserFile(full, "series");
    return {
      path: full,
      key: hashParts(["mbox", bytes]),
      patches: patchesFromMbox(bytes.toString("utf8"), basename(full)),
    };
  }
  const names = patchFileNames(readdirSync(full));
  if (names.length === 0) throw new HilError("series directory holds no *.patch files", { where: full });
  const keyParts: Array<string | Uint8Array> = ["patch-dir"];
  const total = names.reduce((sum, name) => sum + statSync(join(full, name)).size, 0);
  if (total > USER_FILE_LIMITS.series) throw tooLarge("series", full, formatBytes(total), "the series");
  const patches = names.map((name, i) => {
    const bytes = readUserFile(join(full, name), "series");
    keyParts.push(name, bytes);
    const text = bytes.toString("utf8");
    if (!hasDiff(text)) throw new HilError("contains no diff", { where: join(full, name) });
    const fromMbox = splitMboxMessages(text)[0];
    const subject = messageSubject(fromMbox ?? text) ?? name;
    return { index: i + 1, source: name, subject, text };
  });
  return { path: full, key: hashParts(keyParts), patches };
}

export function describePatch(p: Patch, total: number): string {
  return `patch ${p.index}/${total} "${p.subject}" (${p.source})`;
}
