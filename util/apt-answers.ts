/**
 * apt's answers to questions about a context's package lists (`apt-get --print-uris download`,
 * `apt-cache depends`), kept beside the lists. The same lists give the same answer, so a successful
 * one is given again until the lists change: its key holds each list file's name, size and mtime,
 * the apt binary's identity and the architecture, and an update removes every kept answer. Each apt
 * run loads the whole package cache (0.5-1 s); a warm `hil run` asked four before its guests could
 * boot. Anything that goes wrong here (an unreadable answer, a full disk) only means apt is asked.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "./atomic-write.ts";
import { probe } from "./exec.ts";
import { makeDir } from "./make-dir.ts";

const FORMAT = "hil-apt-answer/1";

export interface AptAnswer {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Where a context's answers are kept, beside its lists. */
export function answersDir(contextBase: string): string {
  return join(contextBase, "answers");
}

/** Forgets every answer of a context (its lists just changed). */
export function forgetAnswers(contextBase: string): void {
  rmSync(answersDir(contextBase), { recursive: true, force: true });
}

function identity(path: string): string {
  const s = statSync(path);
  return `${s.size}:${s.mtimeMs}`;
}

/** The lists' state: each list file by name, size and mtime; undefined when there are none. */
function listsState(lists: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(lists, { withFileTypes: true })
      .filter((e) => e.isFile() && e.name !== "lock")
      .map((e) => e.name)
      .sort();
  } catch {
    return undefined;
  }
  if (names.length === 0) return undefined;
  return names.map((n) => `${n}=${identity(join(lists, n))}`).join("\n");
}

function binaryState(file: string): string {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    try {
      return `${join(dir, file)}=${identity(join(dir, file))}`;
    } catch {
      // not in this directory
    }
  }
  return `${file}=?`;
}

/**
 * `file args...` run against the lists in `lists` (the args carry the options that point apt
 * there), answered from the kept answers of `contextBase` when the lists are as they were.
 */
export async function askApt(
  contextBase: string,
  lists: string,
  file: "apt-get" | "apt-cache",
  args: readonly string[],
): Promise<AptAnswer> {
  const state = listsState(lists);
  if (state === undefined) return probe(file, args);
  const key = createHash("sha256")
    .update(JSON.stringify([FORMAT, process.arch, binaryState(file), state, file, args]))
    .digest("hex");
  const kept = join(answersDir(contextBase), `${key}.json`);
  try {
    const answer = JSON.parse(readFileSync(kept, "utf8")) as Partial<AptAnswer> & { format?: string };
    if (answer.format === FORMAT && typeof answer.stdout === "string")
      return { exitCode: 0, stdout: answer.stdout, stderr: answer.stderr ?? "" };
  } catch {
    // none kept, or unreadable: ask apt
  }
  const r = await probe(file, args);
  if (r.exitCode === 0) {
    await makeDir(answersDir(contextBase))
      .then(() =>
        writeFileAtomic(kept, JSON.stringify({ format: FORMAT, stdout: r.stdout, stderr: r.stderr })),
      )
      .catch(() => {});
  }
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
}
