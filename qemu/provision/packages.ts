import { ensureHostPackages } from "../../util/apt.ts";
import { FIRMWARE_PACKAGES } from "./firmware.ts";

/** Debian packages from the host's own release that building and running our QEMU needs. */
export const QEMU_HOST_PACKAGES = [
  "ninja-build",
  "libglib2.0-dev",
  "libpixman-1-dev",
  "libslirp-dev",
  "zlib1g-dev",
  "flex",
  "bison",
  "device-tree-compiler",
  "pkgconf",
  "python3-venv",
  "gcc",
  "make",
  "xz-utils",
  ...FIRMWARE_PACKAGES,
] as const;

/** QEMU 10.2 needs meson >= 1.5 (bookworm has 1.0) and its test runner needs pycotap. */
export const QEMU_BACKPORTS_PACKAGES = ["meson", "python3-pycotap"] as const;

/** Installs what is missing of both lists; returns the packages it installed. */
export async function ensureQemuBuildPackages(): Promise<string[]> {
  const fromSystem = await ensureHostPackages(QEMU_HOST_PACKAGES);
  const fromBackports = await ensureHostPackages(QEMU_BACKPORTS_PACKAGES, "bookworm-backports");
  return [...fromSystem, ...fromBackports];
}
