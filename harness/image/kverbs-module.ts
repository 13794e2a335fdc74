/** The in-kernel verbs executor module (guest/kverbs), built for a kernel and cached. */
import { fileURLToPath } from "node:url";
import type { KernelArtifact } from "../kernel/types.ts";
import { type BuiltGuestModule, buildGuestModule, guestModuleKey } from "./kmod.ts";

export const KVERBS_SOURCE_DIR = fileURLToPath(new URL("../../guest/kverbs/", import.meta.url));
/** The command language both executors share (its Kbuild includes it as $(src)/../common). */
export const GUEST_COMMON_DIR = fileURLToPath(new URL("../../guest/common/", import.meta.url));
export const KVERBS_MODULE = "hil_kverbs";
/** In-tree modules hil_kverbs needs loaded first. */
export const KVERBS_DEPS = ["ib_core", "rdma_cm"] as const;

const OPTIONS = { name: KVERBS_MODULE, sharedDirs: [GUEST_COMMON_DIR] };

export function buildKverbsModule(kernel: KernelArtifact): Promise<BuiltGuestModule> {
  return buildGuestModule(kernel, KVERBS_SOURCE_DIR, OPTIONS);
}

/** The cache key of hil_kverbs built for this kernel (or the one whose module interface it shares). */
export function kverbsModuleKey(kernel: Pick<KernelArtifact, "key" | "rebuild">): Promise<string> {
  return guestModuleKey(kernel, KVERBS_SOURCE_DIR, OPTIONS);
}
