import type { QemuInstall } from "../launch/types.ts";
import { ensureBuiltQemu, findBuiltQemu } from "./build.ts";
import { inspectQemu } from "./inspect.ts";
import { findHostQemu, resolveQemu } from "./resolve.ts";

export { inspectQemu } from "./inspect.ts";
export { QEMU_BACKPORTS_PACKAGES, QEMU_HOST_PACKAGES } from "./packages.ts";

/**
 * A QEMU >= 10.1 with vfio-user-pci: $HIL_QEMU, else qemu-system-x86_64 from PATH, else one built
 * from Debian's source into the cache (installing its build dependencies first).
 */
export async function ensureQemu(): Promise<QemuInstall> {
  return resolveQemu(process.env, { inspect: inspectQemu, build: ensureBuiltQemu, built: findBuiltQemu });
}

/**
 * The QEMU ensureQemu would use, when it needs no build: $HIL_QEMU (an error if unusable), a
 * usable one on PATH, or one an earlier build left in the cache; undefined otherwise. Builds,
 * installs and locks nothing.
 */
export async function findQemu(env: NodeJS.ProcessEnv = process.env): Promise<QemuInstall | undefined> {
  return (await findHostQemu(env, inspectQemu)) ?? (await findBuiltQemu());
}
