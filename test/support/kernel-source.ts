/**
 * A kernel source tree hil has already unpacked into its cache (the kernel-base entry that
 * `hil setup` and every kernel build fill), found by the cache's own key. Nothing is fetched: a
 * tree that is not there is an error saying how to get it.
 */
import { join } from "node:path";
import { DEFAULT_KERNEL } from "../../harness/defaults.ts";
import { BASE_CACHE_KIND, baseKey } from "../../harness/kernel/base-source.ts";
import { parseBaseSpec } from "../../harness/kernel/base-spec.ts";
import { cachePath, isComplete } from "../../util/cache.ts";

export async function unpackedKernelSource(base: string = DEFAULT_KERNEL): Promise<string> {
  const entry = cachePath(BASE_CACHE_KIND, await baseKey(parseBaseSpec(base)));
  if (!isComplete(entry))
    throw new Error(
      `the ${base} kernel source is not unpacked in hil's cache (${entry}): ` +
        `run \`npx hil setup\` (it unpacks ${DEFAULT_KERNEL}) or \`npx hil kernel build --kernel ${base}\``,
    );
  return join(entry, "src");
}
