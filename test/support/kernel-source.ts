/**
 * A kernel source tree in hil's cache (the kernel-base entry that `hil setup` and every kernel
 * build fill), found by the cache's own key and unpacked there first when it is not yet: `npm test`
 * on a fresh machine needs no step before it.
 */
import { join } from "node:path";
import { DEFAULT_KERNEL } from "../../harness/defaults.ts";
import { BASE_CACHE_KIND, baseKey, ensureBaseTree } from "../../harness/kernel/base-source.ts";
import { parseBaseSpec } from "../../harness/kernel/base-spec.ts";
import { cachePath, isComplete } from "../../util/cache.ts";

export async function unpackedKernelSource(base: string = DEFAULT_KERNEL): Promise<string> {
  const spec = parseBaseSpec(base);
  const key = await baseKey(spec);
  const entry = cachePath(BASE_CACHE_KIND, key);
  if (isComplete(entry)) return join(entry, "src");
  return (await ensureBaseTree(spec, key)).srcDir;
}
