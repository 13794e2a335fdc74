/**
 * `debian-image:X.Y`: the kernel Debian built and ships (linux-image-<abi>-<flavour>-unsigned),
 * booted as it is instead of compiling linux-source-X.Y with hil's own config. Its version is the
 * one of the `debian:X.Y` base (the same linux-source package), so the two kernels run the same
 * code; what its config lacks that the suite needs (erdma, siw, RTRS/RNBD) is built out of tree
 * from that source.
 */
import type { AptContextName } from "../../util/apt.ts";
import { HilError } from "../../util/errors.ts";
import { DEBIAN_BASES, DEBIAN_IMAGES, type DebianBaseName } from "./base-spec.ts";

export type DebianImageName = keyof typeof DEBIAN_IMAGES;

export interface PrebuiltSpec {
  name: DebianImageName;
  /** the compiled base of the same source */
  sourceBase: DebianBaseName;
  /** the linux-source package of the same version: its version picks the image, its drivers are built out of tree */
  sourcePackage: string;
  suite: AptContextName;
  /** Debian's kernel flavour: linux-image-<abi>-<flavour>-unsigned */
  flavour: string;
}

/** The prebuilt kernel `base` names; an unknown `debian-image:` name is one error listing the known ones. */
export function parsePrebuiltSpec(base: string): PrebuiltSpec {
  if (!Object.hasOwn(DEBIAN_IMAGES, base))
    throw new HilError(`unknown Debian kernel image ${base}`, {
      detail: `known images: ${Object.keys(DEBIAN_IMAGES).join(", ")}`,
    });
  const name = base as DebianImageName;
  const { sourceBase, flavour } = DEBIAN_IMAGES[name];
  const source = DEBIAN_BASES[sourceBase];
  return { name, sourceBase, sourcePackage: source.package, suite: source.suite, flavour };
}
