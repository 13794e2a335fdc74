import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { HilError } from "../../util/errors.ts";

/** What a QEMU cache entry holds, written last by the build that made it. */
export const BuiltQemuManifest = z.object({
  recipe: z.string(),
  origin: z.literal("built"),
  version: z.string(),
  /** relative to the entry directory, so the entry can be renamed */
  binary: z.string(),
  source: z.object({ url: z.string(), sha256: z.string(), debianVersion: z.string() }),
  configureFlags: z.array(z.string()),
  builtAt: z.string(),
  buildSeconds: z.number(),
});
export type BuiltQemuManifest = z.infer<typeof BuiltQemuManifest>;

export const MANIFEST_FILE = "manifest.json";

export async function writeManifest(entryDir: string, manifest: BuiltQemuManifest): Promise<void> {
  await writeFile(join(entryDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
}

export async function readManifest(entryDir: string): Promise<BuiltQemuManifest> {
  const path = join(entryDir, MANIFEST_FILE);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new HilError("cannot read the QEMU build manifest; remove the cache entry to rebuild", {
      where: path,
      detail: String(err),
    });
  }
  const result = BuiltQemuManifest.safeParse(parsed);
  if (!result.success) {
    throw new HilError("the QEMU build manifest is malformed; remove the cache entry to rebuild", {
      where: path,
      detail: z.prettifyError(result.error),
    });
  }
  return result.data;
}
