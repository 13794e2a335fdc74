/**
 * The Debian packages a prebuilt kernel is made of, found from the linux-source package's version:
 * the metapackage linux-headers-<flavour> of that version names the ABI's headers package, whose
 * Depends name the common headers, the kbuild tools and the unsigned image (Debian's
 * debian/templates/control.headers.in). All five carry the one version: a mirror halfway through
 * an upload is an error, not a kernel built from two sources.
 */
import {
  type AptContext,
  askAboutLists,
  debFileVersion,
  type PackageUri,
  packageUris,
} from "../../util/apt.ts";
import { HilError } from "../../util/errors.ts";
import { hashParts } from "../../util/hash.ts";
import type { PrebuiltSpec } from "./prebuilt-spec.ts";

export interface PrebuiltPackages {
  /** the version every package has, e.g. "6.12.95-1~bpo12+1" */
  debianVersion: string;
  /** linux-source-X.Y: the drivers built out of tree come from it */
  source: PackageUri;
  /** linux-image-<abi>-<flavour>[-unsigned]: /boot/vmlinuz-<release>, /boot/config-<release>, /lib/modules/<release> */
  image: PackageUri;
  /** linux-headers-<abi>-<flavour>: the O= tree (.config, Module.symvers, generated headers) */
  headers: PackageUri;
  /** linux-headers-<abi>-common: the source side of the headers tree */
  common: PackageUri;
  /** linux-kbuild-<abi>: scripts/ and tools/ the headers trees link to */
  kbuild: PackageUri;
}

/** A Depends field as its groups of alternatives, each a list of package names (versions dropped). */
export function dependsGroups(depends: string): string[][] {
  return depends
    .split(",")
    .map((group) =>
      group
        .split("|")
        .map((alt) => alt.trim().split(/[\s(]/)[0] ?? "")
        .filter(Boolean),
    )
    .filter((g) => g.length > 0);
}

/** The Depends field of the first record `apt-cache show` printed, "" when it has none. */
export function dependsField(showOutput: string): string {
  const record = showOutput.split(/\n\n/)[0] ?? "";
  return /^Depends: (.*)$/m.exec(record)?.[1] ?? "";
}

function pick(groups: string[][], re: RegExp): string | undefined {
  return groups.flat().find((n) => re.test(n));
}

/** The headers, common, kbuild and image package names a headers package of `flavour` depends on. */
export function namesFromHeadersDepends(
  depends: string,
  flavour: string,
): { common?: string; kbuild?: string; image?: string } {
  const groups = dependsGroups(depends);
  const esc = flavour.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const common = pick(groups, /^linux-headers-.+-common$/);
  const kbuild = pick(groups, /^linux-kbuild-/);
  const image = pick(groups, new RegExp(`^linux-image-.+-${esc}-unsigned$`));
  return {
    ...(common ? { common } : {}),
    ...(kbuild ? { kbuild } : {}),
    ...(image ? { image } : {}),
  };
}

/**
 * The image packages of an ABI headers package, in the order to try: linux-image-<abi>-<flavour>-unsigned,
 * then linux-image-<abi>-<flavour>. For the headers packages that do not depend on their image:
 * bookworm's 6.1 does not, bookworm-backports' 6.12 does.
 */
export function imagesOfHeaders(headersName: string): [string, string] {
  const image = headersName.replace(/^linux-headers-/, "linux-image-");
  return [`${image}-unsigned`, image];
}

/** The first of the image packages the suite offers; the last one's error when it offers none. */
async function offeredImage(ctx: AptContext, candidates: readonly string[]): Promise<string> {
  for (const [i, name] of candidates.entries()) {
    try {
      await packageUris(ctx, [name]);
      return name;
    } catch (err) {
      if (i === candidates.length - 1) throw err;
    }
  }
  throw new HilError("no image package to look for");
}

async function depends(ctx: AptContext, pkg: string, version: string): Promise<string> {
  const r = await askAboutLists(ctx, "apt-cache", ["show", `${pkg}=${version}`]);
  if (r.exitCode !== 0)
    throw new HilError(`Debian ${ctx.name} has no ${pkg} of version ${version}`, {
      detail: `${(r.stderr || r.stdout).trim()}\nDebian may not have built this version's kernel yet; the compiled kernel (debian:X.Y) needs only its source`,
    });
  return dependsField(r.stdout);
}

/** The packages of `spec`'s image of the version its linux-source package has now. */
export async function resolvePrebuiltPackages(
  ctx: AptContext,
  spec: PrebuiltSpec,
): Promise<PrebuiltPackages> {
  const source = (await packageUris(ctx, [spec.sourcePackage])).get(spec.sourcePackage);
  const version = source ? debFileVersion(source.filename) : undefined;
  if (!source || !version)
    throw new HilError(`cannot tell the version of ${spec.sourcePackage} in Debian ${ctx.name}`);
  const meta = `linux-headers-${spec.flavour}`;
  const headersName = pick(
    dependsGroups(await depends(ctx, meta, version)),
    new RegExp(`^linux-headers-.+-${spec.flavour}$`),
  );
  if (!headersName)
    throw new HilError(`${meta} ${version} names no headers package of flavour ${spec.flavour}`);
  const depended = namesFromHeadersDepends(await depends(ctx, headersName, version), spec.flavour);
  const names = {
    ...depended,
    image: depended.image ?? (await offeredImage(ctx, imagesOfHeaders(headersName))),
  };
  if (!names.common || !names.kbuild)
    throw new HilError(`${headersName} ${version} does not name its common headers and kbuild`, {
      detail: `found ${JSON.stringify(names)}`,
    });
  const wanted = [names.image, headersName, names.common, names.kbuild];
  const uris = await packageUris(ctx, wanted);
  const get = (name: string): PackageUri => {
    const uri = uris.get(name);
    const got = uri ? debFileVersion(uri.filename) : undefined;
    if (!uri || got !== version)
      throw new HilError(
        `Debian ${ctx.name} offers ${name} ${got ?? "(none)"}, not ${version} as ${spec.sourcePackage}`,
        {
          detail: "the mirror may be halfway through an upload; run the command again later",
        },
      );
    return uri;
  };
  return {
    debianVersion: version,
    source,
    image: get(names.image),
    headers: get(headersName),
    common: get(names.common),
    kbuild: get(names.kbuild),
  };
}

/** Every package of the set, the source last. */
export function packageList(p: PrebuiltPackages): PackageUri[] {
  return [p.image, p.headers, p.common, p.kbuild, p.source];
}

/** The content key of a prebuilt kernel: the recipe, and each .deb by name and sha256. */
export function prebuiltKey(recipe: string, p: PrebuiltPackages): string {
  return hashParts(["debian-image", recipe, ...packageList(p).flatMap((u) => [u.filename, u.sha256])]);
}

/** A package's name, from its .deb file name. */
export function packageName(uri: PackageUri): string {
  return uri.filename.split("_")[0] ?? uri.filename;
}
