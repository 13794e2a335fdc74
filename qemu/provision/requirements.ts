import { isAtLeast, parseVersion } from "./version.ts";

/** The oldest QEMU whose vfio-user client (`-device vfio-user-pci`) the project drives. */
export const MIN_QEMU_VERSION = "10.1";
export const VFIO_USER_DEVICE = "vfio-user-pci";

export interface QemuCapabilities {
  /** "10.2.2", or "unknown" when `--version` printed nothing recognisable. */
  version: string;
  hasVfioUser: boolean;
}

/** What keeps a QEMU from being usable, in words for an error message; empty when it is usable. */
export function qemuShortcomings(caps: QemuCapabilities): string[] {
  const missing: string[] = [];
  if (!parseVersion(caps.version)) missing.push("its version could not be read");
  else if (!isAtLeast(caps.version, MIN_QEMU_VERSION))
    missing.push(`it is version ${caps.version}, older than ${MIN_QEMU_VERSION}`);
  if (!caps.hasVfioUser) missing.push(`it lacks the ${VFIO_USER_DEVICE} device`);
  return missing;
}
