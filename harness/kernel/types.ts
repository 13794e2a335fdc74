import type { GitCheckout } from "./base-source.ts";

/** What the user asks for: a base tree, an optional patch series, and config fragments. */
export interface KernelRequest {
  /** debian:6.1 | debian:6.12 | debian:7.2 | debian-image:6.12 (prebuilt) | a kernel source directory (git or plain) | <repo>@<ref> | a tarball */
  base: string;
  /** an mbox (git format-patch --stdout, b4) or a directory of .patch files */
  series?: string;
  /** extra Kconfig fragments merged after guest/kconfig/base.config */
  configs: string[];
}

/** A built kernel in the cache; every path is absolute (artifact-record.ts stores them relative). */
export interface KernelArtifact {
  key: string;
  dir: string;
  bzImage: string;
  /** INSTALL_MOD_PATH root: holds lib/modules/<release>/ */
  modulesRoot: string;
  release: string;
  /** the O= build tree, for building external modules against this kernel */
  buildDir: string;
  /** the (patched) source tree the build used */
  srcDir: string;
  /**
   * The source and build trees as the build tree's own records (.cmd files, the generated
   * Makefile) name them: where they were when it was built. Text to find in those records, never
   * a path to open: a copied cache has them elsewhere.
   */
  kbuildNames: { srcDir: string; buildDir: string };
  config: string;
  /** human-readable description: base, series, fragments */
  describe: string;
  /** VERSION.PATCHLEVEL.SUBLEVEL of the source tree, e.g. "6.12.95" */
  version?: string;
  /** a debian: base's linux-source package version, e.g. "6.12.95-1~bpo12+1" */
  debianVersion?: string;
  /** a <repo>@<ref> base's commit as this run resolved it (commits with one tree share a build) */
  git?: GitCheckout;
  /** subjects of the applied patches, in order */
  patches?: string[];
  /** for base + series: how the build went from the base's build (absent in entries built before) */
  rebuild?: RebuildRecord;
  /** kernel parameters the kernel needs to boot as the harness expects (a prebuilt kernel: prebuilt-config.ts) */
  bootArgs?: string[];
}

/** How a patched kernel was built (harness/kernel/rebuild-plan.ts). */
export interface RebuildRecord {
  /** modules: only those modules were made again; incremental: Kbuild continued the base build; full: from scratch */
  mode: "modules" | "incremental" | "full";
  reason: string;
  /** the base kernel's key */
  baseKey: string;
  /** the Kbuild steps this build ran */
  steps: number;
  /** for mode "modules": the modules rebuilt, e.g. drivers/infiniband/hw/erdma/erdma.ko */
  modules?: string[];
  /**
   * the key of the kernel whose interface to out-of-tree modules this one shares (its headers,
   * .config and Module.symvers): guest modules built against that kernel are reused
   * (module-interface.ts)
   */
  moduleInterfaceOf?: string;
}
