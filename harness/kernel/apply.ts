import { lstatSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureEntry } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { probe, run } from "../../util/exec.ts";
import { hashParts } from "../../util/hash.ts";
import type { BaseTree } from "./base-source.ts";
import { describePatch, type Patch, type Series } from "./series.ts";
import { inStep } from "./step.ts";

export const PATCHED_CACHE_KIND = "kernel-patched";

export interface PatchedTree {
  key: string;
  srcDir: string;
}

export function patchedTreeKey(baseKey: string, seriesKey: string): string {
  return hashParts(["patched-tree", baseKey, seriesKey]);
}

/** A hunk that `patch` rejected, or a file it could not find. */
export interface PatchFailure {
  file: string;
  hunk?: number;
  line?: number;
  reason: string;
}

/**
 * Reads GNU patch's report. `patch` names each file ("checking file X" on a dry run, "patching
 * file X" otherwise) and then its failed hunks ("Hunk #2 FAILED at 120.").
 */
export function parsePatchOutput(output: string): {
  files: string[];
  failures: PatchFailure[];
  notes: string[];
} {
  const files: string[] = [];
  const failures: PatchFailure[] = [];
  const notes: string[] = [];
  let current = "";
  let missingFile = "";
  for (const line of output.split("\n")) {
    const file = /^(?:checking|patching) file (.+)$/.exec(line);
    if (file?.[1]) {
      current = file[1].replace(/^'(.*)'$/, "$1");
      files.push(current);
      continue;
    }
    const failed = /^Hunk #(\d+) FAILED at (\d+)/.exec(line);
    if (failed) {
      failures.push({
        file: current,
        hunk: Number(failed[1]),
        line: Number(failed[2]),
        reason: "hunk does not match",
      });
      continue;
    }
    const header = /^\|\+\+\+ (?:b\/)?(\S+)/.exec(line);
    if (header?.[1]) missingFile = header[1];
    if (/^No file to patch\.\s+Skipping patch\./.test(line)) {
      failures.push({ file: missingFile || "(unknown)", reason: "file to patch does not exist" });
      continue;
    }
    if (/^Reversed \(or previously applied\) patch detected!/.test(line)) {
      failures.push({ file: current, reason: "already applied (or reversed)" });
      continue;
    }
    const garbage = /^patch: \*\*\*\* (.*)$/.exec(line);
    if (garbage?.[1]) {
      failures.push({ file: current || "(patch input)", reason: garbage[1] });
      continue;
    }
    const fuzz = /^Hunk #(\d+) succeeded at (\d+)(.*)\.$/.exec(line);
    if (fuzz) notes.push(`${current}: hunk #${fuzz[1]} applied at line ${fuzz[2]}${fuzz[3] ?? ""}`);
  }
  return { files, failures, notes };
}

/** The "@@ -a,b +c,d @@" header of hunk `n` (1-based) of `file` in a patch text. */
export function hunkHeader(patchText: string, file: string, n: number): string | undefined {
  let inFile = false;
  let count = 0;
  for (const line of patchText.split("\n")) {
    const target = /^\+\+\+ (?:b\/)?(\S+)/.exec(line);
    if (target) {
      inFile = target[1] === file;
      count = 0;
      continue;
    }
    if (inFile && line.startsWith("@@ ")) {
      count++;
      if (count === n) return line;
    }
  }
  return undefined;
}

function formatFailure(f: PatchFailure, patchText: string): string {
  if (f.hunk === undefined) return `${f.file}: ${f.reason}`;
  const header = hunkHeader(patchText, f.file, f.hunk);
  return `${f.file}: hunk #${f.hunk} FAILED at line ${f.line}${header ? ` (${header})` : ""}`;
}

const PATCH_ARGS = ["-p1", "--batch", "--forward", "--no-backup-if-mismatch", "--reject-file=-"];

/** Applies one patch to `tree`: a dry run first, so a patch that does not apply changes nothing. */
export async function applyPatch(
  tree: string,
  patch: Patch,
  patchFile: string,
  total: number,
  baseLabel: string,
) {
  const dry = await probe("patch", [...PATCH_ARGS, "--dry-run", "-i", patchFile], { cwd: tree });
  const report = parsePatchOutput(`${dry.stdout}\n${dry.stderr}`);
  if (dry.exitCode !== 0 || report.failures.length > 0) {
    const failures =
      report.failures.length > 0
        ? report.failures
        : [{ file: "(unknown)", reason: `patch exited with ${dry.exitCode}` }];
    const first = failures[0] as PatchFailure;
    throw new HilError(
      `${describePatch(patch, total)} does not apply to ${baseLabel}: ${formatFailure(first, patch.text)}`,
      {
        detail: [
          ...failures.slice(1).map((f) => `also: ${formatFailure(f, patch.text)}`),
          "patch said:",
          ...`${dry.stdout}\n${dry.stderr}`
            .trim()
            .split("\n")
            .map((l) => `  ${l}`),
        ].join("\n"),
      },
    );
  }
  const applied = await run(
    `patch (${describePatch(patch, total)})`,
    "patch",
    [...PATCH_ARGS, "-i", patchFile],
    { cwd: tree },
  );
  const done = parsePatchOutput(applied.stdout);
  assertLinksBroken(tree, done.files);
  return done;
}

/**
 * The tree is a hard-linked copy of the pristine one; GNU patch writes a new file and renames it
 * over the old name, which breaks the link. A file still shared after patching would mean the
 * pristine tree was modified in place.
 */
function assertLinksBroken(tree: string, files: readonly string[]): void {
  for (const f of files) {
    let nlink: number;
    try {
      nlink = lstatSync(join(tree, f)).nlink;
    } catch {
      continue;
    }
    if (nlink > 1)
      throw new Error(`patch modified ${f} in place, through a hard link shared with the pristine tree`);
  }
}

/** The base tree with `series` applied, as its own cache entry; a failed series leaves no entry. */
export async function ensurePatchedTree(
  base: BaseTree,
  series: Series,
  baseLabel: string,
): Promise<PatchedTree> {
  const key = patchedTreeKey(base.key, series.key);
  const total = series.patches.length;
  const { dir } = await ensureEntry(
    PATCHED_CACHE_KIND,
    key,
    // src: the base tree hard-linked, the patched files its own; by size like the base tree
    { what: `${baseLabel} + ${total} patch(es)`, bulk: ["src"] },
    async (work) => {
      const src = join(work, "src");
      const patchDir = join(work, "patches");
      await mkdir(patchDir);
      await inStep(
        `[kernel] applying ${total} patch(es) from ${series.path}`,
        async (step) => {
          await run("cp -al (hard-linked copy of the base tree)", "cp", ["-al", base.srcDir, src]);
          for (const patch of series.patches) {
            const patchFile = join(patchDir, `${String(patch.index).padStart(4, "0")}.patch`);
            await writeFile(patchFile, patch.text);
            const { notes } = await applyPatch(src, patch, patchFile, total, baseLabel);
            for (const n of notes) step.note(`${describePatch(patch, total)}: ${n}`);
            step.update(patch.index, total, patch.subject);
          }
        },
        () => `${total} applied`,
      );
      const record = series.patches.map((p) => ({ index: p.index, source: p.source, subject: p.subject }));
      await writeFile(
        join(work, "series.json"),
        `${JSON.stringify({ series: series.path, patches: record }, null, 2)}\n`,
      );
    },
  );
  return { key, srcDir: join(dir, "src") };
}
