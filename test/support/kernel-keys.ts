/**
 * The cache names a kernel build owns, found by its key: tap runs two test files at once and both
 * may build kernels, so a listing of a whole cache kind says nothing about one build's leftovers.
 */

import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { baseIdentity } from "../../harness/kernel/base-source.ts";
import { parseBaseSpec } from "../../harness/kernel/base-spec.ts";
import { kernelKeyFor } from "../../harness/kernel/build.ts";
import { cacheRoot } from "../../util/cache.ts";

/** The kernel key `buildKernel` gives this base with these fragment files and series. */
export async function kernelKeyOf(
  base: string,
  opts: { fragments?: string[]; series?: string } = {},
): Promise<string> {
  const req = { base, configs: opts.fragments ?? [], ...(opts.series ? { series: opts.series } : {}) };
  return kernelKeyFor(req, await baseIdentity(parseBaseSpec(base)));
}

/** What of `key` is in a cache kind: the entry, its lock, its work dirs. */
export function cacheNamesOf(kind: string, key: string): string[] {
  const dir = join(cacheRoot(), kind);
  return existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith(key)) : [];
}
