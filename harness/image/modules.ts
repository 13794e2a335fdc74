import { existsSync } from "node:fs";
import { join } from "node:path";
import { ensureEntry } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { hashParts } from "../../util/hash.ts";
import { progress } from "../../util/progress.ts";
import type { KernelArtifact } from "../kernel/types.ts";
import { type CpioEntry, walkTree, writeCpioGz } from "./cpio.ts";
import { RECIPE_VERSION } from "./recipe.ts";
import type { ImageLayer } from "./userspace.ts";

export const MODULES_ARCHIVE = "modules.cpio.gz";

/** Links modules_install leaves pointing at the build machine's trees. */
const HOST_ONLY_LINKS = new Set(["build", "source"]);

/** Where modules_install put lib/modules/<release> (newer kernels may use usr/lib/modules). */
export function findModulesDir(kernel: KernelArtifact): string {
  const candidates = ["lib/modules", "usr/lib/modules"].map((d) =>
    join(kernel.modulesRoot, d, kernel.release),
  );
  const found = candidates.find((c) => existsSync(c));
  if (!found) {
    throw new HilError(`kernel ${kernel.release} has no installed modules`, {
      where: kernel.modulesRoot,
      detail: `looked for ${candidates.join(" and ")}`,
    });
  }
  return found;
}

async function* moduleEntries(modulesDir: string, release: string): AsyncGenerator<CpioEntry> {
  yield { kind: "dir", path: "lib", mode: 0o755 };
  yield { kind: "dir", path: "lib/modules", mode: 0o755 };
  yield { kind: "dir", path: `lib/modules/${release}`, mode: 0o755 };
  for await (const entry of walkTree(modulesDir)) {
    if (entry.kind === "symlink" && HOST_ONLY_LINKS.has(entry.path)) continue;
    yield { ...entry, path: `lib/modules/${release}/${entry.path}` };
  }
}

export const MODULES_LAYER_KIND = "image/modules";

/** The key of the modules layer of the kernel with this key. */
export function modulesLayerKey(kernelKey: string): string {
  return hashParts([RECIPE_VERSION, "modules", kernelKey]);
}

/** The per-kernel layer: /lib/modules/<release>. */
export async function buildModulesLayer(kernel: KernelArtifact): Promise<ImageLayer> {
  const key = modulesLayerKey(kernel.key);
  const modulesDir = findModulesDir(kernel);
  const { dir } = await ensureEntry(
    MODULES_LAYER_KIND,
    key,
    { what: `modules ${kernel.release}` },
    async (work) => {
      const step = progress.step(`[image] packing modules of ${kernel.release}`);
      const count = await writeCpioGz(join(work, MODULES_ARCHIVE), moduleEntries(modulesDir, kernel.release));
      step.succeed(`${count} entries`);
    },
  );
  return { path: join(dir, MODULES_ARCHIVE), key };
}
