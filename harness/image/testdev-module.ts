/**
 * Builds the guest driver for hil-testdev (guest/testdev/hil_testdev.c) against a kernel's build
 * tree, cached by (kernel key, module source hash): see harness/image/kmod.ts.
 */
import { fileURLToPath } from "node:url";
import type { KernelArtifact } from "../kernel/types.ts";
import { buildGuestModule, guestModuleKey } from "./kmod.ts";

export const TESTDEV_MODULE_SOURCE_DIR = fileURLToPath(new URL("../../guest/testdev/", import.meta.url));
export const TESTDEV_MODULE_FILE = "hil_testdev.ko";
const MODULE = { name: "hil_testdev" } as const;

export interface BuiltModule {
  /** the .ko file */
  path: string;
  key: string;
}

export function testdevModuleKey(kernel: KernelArtifact): Promise<string> {
  return guestModuleKey(kernel, TESTDEV_MODULE_SOURCE_DIR, MODULE);
}

/** The hil_testdev.ko for `kernel`, built once per (kernel, source) and cached. */
export async function buildTestdevModule(kernel: KernelArtifact): Promise<BuiltModule> {
  const built = await buildGuestModule(kernel, TESTDEV_MODULE_SOURCE_DIR, MODULE);
  return { path: built.path, key: built.key };
}
