/**
 * A kernel entry's artifact.json: the KernelArtifact with its paths relative to the entry, so a
 * copied or moved cache boots its own files. Entries written before hold absolute paths; they are
 * moved onto the cache the entry is in now (util/cache-record.ts). The build tree's own records
 * keep naming the trees where they were built: kbuildNames says where that was.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot } from "../../util/cache.ts";
import { recordedPath, resolveRecorded, writtenRoot } from "../../util/cache-record.ts";
import type { KernelArtifact } from "./types.ts";

export const ARTIFACT_FILE = "artifact.json";

const PATH_FIELDS = ["dir", "bzImage", "modulesRoot", "buildDir", "srcDir", "config"] as const;

export async function writeArtifactRecord(dir: string, artifact: KernelArtifact): Promise<void> {
  const root = cacheRoot();
  const record: Record<string, unknown> = { ...artifact };
  for (const f of PATH_FIELDS) record[f] = recordedPath(root, dir, artifact[f]);
  await writeFile(join(dir, ARTIFACT_FILE), `${JSON.stringify(record, null, 2)}\n`);
}

/** The artifact the entry in `dir` records, its paths resolved in this cache. */
export async function readArtifactRecord(dir: string): Promise<KernelArtifact> {
  const root = cacheRoot();
  const record = JSON.parse(await readFile(join(dir, ARTIFACT_FILE), "utf8")) as Partial<KernelArtifact>;
  const recorded = PATH_FIELDS.flatMap((f) => (typeof record[f] === "string" ? [record[f]] : []));
  const oldRoot = writtenRoot(root, dir, recorded);
  const artifact = { ...record } as KernelArtifact;
  for (const f of PATH_FIELDS) {
    const value = record[f];
    if (typeof value === "string") artifact[f] = resolveRecorded(root, dir, value, oldRoot, ARTIFACT_FILE);
  }
  // a record with absolute paths names the trees where they were built: what the build tree names
  if (!record.kbuildNames && record.srcDir && record.buildDir)
    artifact.kbuildNames = { srcDir: record.srcDir, buildDir: record.buildDir };
  return artifact;
}
