import { createReadStream, createWriteStream } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { ensureEntry } from "../../util/cache.ts";
import { hashParts } from "../../util/hash.ts";
import type { KernelArtifact } from "../kernel/types.ts";
import { buildModulesLayer } from "./modules.ts";
import { buildUserspaceLayer, type ImageLayer } from "./userspace.ts";

export { IMAGE_HOST_PACKAGES } from "./recipe.ts";
export type { ImageLayer } from "./userspace.ts";

export const INITRAMFS_FILE = "initramfs.cpio.gz";

export const INITRAMFS_KIND = "image/initramfs";

/** The key of the initramfs made of layers with these keys, in this order. */
export function initramfsKey(layerKeys: readonly string[]): string {
  return hashParts(["initramfs", ...layerKeys]);
}

/**
 * Concatenates gzip'd newc archives into one initramfs (the kernel unpacks them in order, later
 * entries adding to earlier ones). Cached under the keys of its layers.
 */
export async function composeInitramfs(layers: readonly ImageLayer[]): Promise<ImageLayer> {
  const key = initramfsKey(layers.map((l) => l.key));
  const { dir } = await ensureEntry(INITRAMFS_KIND, key, { what: "initramfs" }, async (work) => {
    const out = createWriteStream(join(work, INITRAMFS_FILE));
    for (const layer of layers) await pipeline(createReadStream(layer.path), out, { end: false });
    await new Promise<void>((resolve, reject) =>
      out.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  });
  return { path: join(dir, INITRAMFS_FILE), key };
}

/** A guest's initramfs and the rdma-core version its userspace carries. */
export type GuestImage = ImageLayer & { rdmaCore: string | undefined };

/** The guest's initramfs for `kernel`: the shared userspace layer plus this kernel's modules. */
export async function buildInitramfs(
  kernel: KernelArtifact,
  opts: { extraLayers?: readonly ImageLayer[] } = {},
): Promise<GuestImage> {
  const userspace = await buildUserspaceLayer();
  const modules = await buildModulesLayer(kernel);
  const image = await composeInitramfs([userspace, modules, ...(opts.extraLayers ?? [])]);
  return { ...image, rdmaCore: userspace.rdmaCore };
}
