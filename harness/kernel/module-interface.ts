import type { RebuildPlan } from "./rebuild-plan.ts";
import type { TreeChange } from "./tree-diff.ts";
import type { KernelArtifact } from "./types.ts";

/** Where the headers an out-of-tree module can include with <...> live. */
function isIncludableHeaderDir(path: string): boolean {
  return path.startsWith("include/") || /^arch\/[^/]+\/include\//.test(path);
}

/**
 * The key of the kernel whose interface to out-of-tree modules a patched kernel shares, if it
 * shares one: a guest module (harness/image/kmod.ts) built against either is then the same module.
 * Such a module is compiled from the kernel's includable headers, its .config and its
 * Module.symvers. A module-only rebuild (only modules use the changed files, rebuild-plan.ts) keeps
 * the .config; changes outside include/ and arch/<arch>/include/ leave the headers; the symbol table
 * is compared after the build. The base may itself share its base's.
 */
export function sharedModuleInterface(
  base: Pick<KernelArtifact, "key" | "rebuild">,
  plan: RebuildPlan,
  changes: readonly TreeChange[],
  symversUnchanged: boolean,
): string | undefined {
  if (plan.mode !== "modules" || !symversUnchanged) return undefined;
  if (changes.some((c) => isIncludableHeaderDir(c.path))) return undefined;
  return base.rebuild?.moduleInterfaceOf ?? base.key;
}

/** The key guest modules built against this kernel are cached under. */
export function moduleInterfaceKey(kernel: Pick<KernelArtifact, "key" | "rebuild">): string {
  return kernel.rebuild?.moduleInterfaceOf ?? kernel.key;
}
