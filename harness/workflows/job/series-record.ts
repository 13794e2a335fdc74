/**
 * The patch series a run's kernel was built with, kept in the run directory: each patch as
 * series/NNNN-<subject>.patch and, for verdicts.json, its name, sha256 and subject. The KCIDB
 * report derives patchset_hash and patchset_files from it.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { makeDir } from "../../../util/make-dir.ts";
import { loadSeries } from "../../kernel/series.ts";
import type { RunSeries } from "../../rundir/schema.ts";
import { runDirFull, writeRunFile } from "../../rundir/write.ts";

export const SERIES_DIR = "series";

/** "[PATCH v2 3/5] RDMA/erdma: Fix X" -> "RDMA-erdma-Fix-X", as git format-patch names files. */
export function patchFileSlug(subject: string): string {
  const bare = subject.replace(/^\s*(\[[^\]]*\]\s*)+/, "");
  const slug = bare
    .replace(/[^A-Za-z0-9._]+/g, "-")
    .replace(/\.{2,}/g, ".")
    .replace(/^[-.]+|[-.]+$/g, "")
    .slice(0, 52)
    .replace(/[-.]+$/, "");
  return slug || "patch";
}

/** Copies the series into <runDir>/series/ and returns what verdicts.json records of it. */
export async function recordSeries(
  seriesPath: string,
  runDir: string,
  cwd = process.cwd(),
): Promise<RunSeries> {
  const series = loadSeries(seriesPath, cwd);
  await makeDir(join(runDir, SERIES_DIR)).catch((err: unknown) => {
    throw runDirFull(runDir, err) ?? err;
  });
  const patches = await Promise.all(
    series.patches.map(async (p) => {
      const name = `${String(p.index).padStart(4, "0")}-${patchFileSlug(p.subject)}.patch`;
      await writeRunFile(runDir, join(SERIES_DIR, name), p.text);
      return { name, sha256: createHash("sha256").update(p.text).digest("hex"), subject: p.subject };
    }),
  );
  return { path: series.path, patches };
}
