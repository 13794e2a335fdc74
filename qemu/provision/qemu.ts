import type { QemuInstall } from "../launch/types.ts";
import { ensureBuiltQemu } from "./build.ts";
import { inspectQemu } from "./inspect.ts";
import { resolveQemu } from "./resolve.ts";

export { inspectQemu } from "./inspect.ts";
export { QEMU_BACKPORTS_PACKAGES, QEMU_HOST_PACKAGES } from "./packages.ts";

/**
 * A QEMU >= 10.1 with vfio-user-pci: $HIL_QEMU, else qemu-system-x86_64 from PATH, else one built
 * from Debian's source into the cache (installing its build dependencies first).
 */
export async function ensureQemu(): Promise<QemuInstall> {
  return resolveQemu(process.env, { inspect: inspectQemu, build: ensureBuiltQemu });
}
