import { createReadStream, createWriteStream } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { ensureEntry } from "../../util/cache.ts";
import { hashParts } from "../../util/hash.ts";
import type { KernelArtifact } from "../kernel/types.ts";
import { buildModulesLayer } from "./modules.ts";
import { buildUserspaceLayer, type ImageLayer } from "./userspace.ts";

export { IMAGE_HOST_PACKAGES } from "./recipe.ts";
export type { ImageLayer } from "./userspace.ts";

export const INITRAMFS_FILE = "initramfs.cpio";

export const INITRAMFS_KIND = "image/initramfs";

/** How the layers are laid end to end: uncompressed (see composeInitramfs). */
const COMPOSED_FORMAT = "newc-uncompressed";

/** The key of the initramfs made of layers with these keys, in this order. */
export function initramfsKey(layerKeys: readonly string[]): string {
  return hashParts(["initramfs", COMPOSED_FORMAT, ...layerKeys]);
}

/** Zero bytes that pad `length` to a multiple of 4: where the kernel looks for the next archive. */
function padTo4(length: number): Buffer {
  return Buffer.alloc((4 - (length % 4)) % 4);
}

/**
 * Lays the layers' newc archives (gzip'd, as each is cached) end to end, uncompressed, into one
 * initramfs: the kernel unpacks them in order, later entries adding to earlier ones, and skips the
 * zeros between them (init/initramfs.c unpack_to_rootfs, Linux 6.12). Uncompressed because
 * unpacking is on every boot's critical path and gzip costs a TCG guest most of it: the kernel
 * finishes its initcalls, then waits in wait_for_initramfs() for the unpacking (about 1.3 s of a
 * 2.7 s kernel boot on a loaded 2-core host); measured by QEMU's CPU time to the first SSH command
 * here, 3.2 s with the gzip'd image against 2.9 s uncompressed (and 2.8 s with lz4, which would
 * need another host tool). Cached under the keys of its layers.
 */
export async function composeInitramfs(layers: readonly ImageLayer[]): Promise<ImageLayer> {
  const key = initramfsKey(layers.map((l) => l.key));
  const { dir } = await ensureEntry(INITRAMFS_KIND, key, { what: "initramfs" }, async (work) => {
    const out = createWriteStream(join(work, INITRAMFS_FILE));
    for (const layer of layers) {
      let length = 0;
      const gunzip = createGunzip();
      gunzip.on("data", (chunk: Buffer) => {
        length += chunk.length;
      });
      await pipeline(createReadStream(layer.path), gunzip, out, { end: false });
      out.write(padTo4(length));
    }
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
