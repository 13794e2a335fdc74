/**
 * Builds the guest driver for hil-testdev (guest/testdev/hil_testdev.c) against a kernel's build
 * tree (make -C <srcDir> O=<buildDir> M=<dir>), cached by (kernel key, module source hash).
 */
import { copyFile, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KernelArtifact } from "../../harness/kernel/types.ts";
import { ensureEntry } from "../../harness/util/cache.ts";
import { run } from "../../harness/util/exec.ts";
import { hashParts, shortKey } from "../../harness/util/hash.ts";
import { progress } from "../../harness/util/progress.ts";

export const TESTDEV_MODULE_SOURCE_DIR = fileURLToPath(new URL("../../guest/testdev/", import.meta.url));
export const TESTDEV_MODULE_FILE = "hil_testdev.ko";
const RECIPE = "hil-testdev-module-1";
const SOURCES = ["Kbuild", "hil_testdev.c"];

export interface BuiltModule {
  /** the .ko file */
  path: string;
  key: string;
}

export async function testdevModuleKey(kernel: KernelArtifact): Promise<string> {
  const parts: (string | Uint8Array)[] = [RECIPE, kernel.key];
  for (const name of SOURCES) parts.push(name, await readFile(join(TESTDEV_MODULE_SOURCE_DIR, name)));
  return hashParts(parts);
}

/** The hil_testdev.ko for `kernel`, built once per (kernel, source) and cached. */
export async function buildTestdevModule(kernel: KernelArtifact): Promise<BuiltModule> {
  const key = await testdevModuleKey(kernel);
  const { dir, built } = await ensureEntry(
    "testdev-module",
    key,
    { what: `hil_testdev.ko for ${kernel.describe}` },
    async (work) => {
      const step = progress.step(`[testdev] building hil_testdev.ko for Linux ${kernel.release}`);
      try {
        const src = join(work, "src");
        await mkdir(src);
        for (const name of SOURCES) await copyFile(join(TESTDEV_MODULE_SOURCE_DIR, name), join(src, name));
        await run(
          "building hil_testdev.ko",
          "make",
          ["-C", kernel.srcDir, `O=${kernel.buildDir}`, `M=${src}`, "modules"],
          { tailLines: 60 },
        );
        await copyFile(join(src, TESTDEV_MODULE_FILE), join(work, TESTDEV_MODULE_FILE));
        await rm(src, { recursive: true, force: true });
        step.succeed();
      } catch (err) {
        step.fail();
        throw err;
      }
    },
  );
  if (!built) progress.info(`[testdev] hil_testdev.ko for ${kernel.describe}: cached (${shortKey(key)})`);
  const files = await readdir(dir);
  if (!files.includes(TESTDEV_MODULE_FILE))
    throw new Error(`cache entry ${dir} has no ${TESTDEV_MODULE_FILE}`);
  return { path: join(dir, TESTDEV_MODULE_FILE), key };
}
