import { existsSync } from "node:fs";
import { join } from "node:path";
import { type AptContext, downloadPackages, type PackageUri, packageUris } from "../../util/apt.ts";
import { cacheRoot } from "../../util/cache.ts";
import { run } from "../../util/exec.ts";

export interface ResolvedPackage extends PackageUri {
  name: string;
}

/** Where apt would fetch each package from, with its sha256. */
export async function resolvePackages(ctx: AptContext, names: readonly string[]): Promise<ResolvedPackage[]> {
  const uris = await packageUris(ctx, names);
  return names.map((name) => ({ name, ...(uris.get(name) as PackageUri) }));
}

/** Guest packages are kept across builds, one directory per suite. */
export function debStore(ctx: AptContext): string {
  return join(cacheRoot(), "apt", ctx.name, "debs");
}

/** The .deb files of `packages`, downloading only those not yet in the store. */
export async function fetchPackages(
  ctx: AptContext,
  packages: readonly ResolvedPackage[],
): Promise<string[]> {
  const store = debStore(ctx);
  const missing = packages.filter((p) => !existsSync(join(store, p.filename))).map((p) => p.name);
  if (missing.length > 0) await downloadPackages(ctx, missing, store);
  return packages.map((p) => join(store, p.filename));
}

export async function unpackDeb(deb: string, root: string): Promise<void> {
  await run(`unpacking ${deb}`, "dpkg-deb", ["-x", deb, root]);
}
