import { basename } from "node:path";
import type { TreeChange } from "./tree-diff.ts";

/**
 * How a patched kernel is built from a cached build of its base:
 * - modules: only modules use the changed files; rebuild those (in-tree, in a copy of the base
 *   build tree) and keep the base's bzImage;
 * - incremental: Kbuild's own dependency tracking rebuilds what the changes reach in a copy of
 *   the base build tree (reconfigure: the Kconfig input changed, so the configuration is made
 *   again the way a fresh build makes it);
 * - full: a build from scratch, for changes Kbuild's tracking cannot be trusted with.
 */
export type RebuildPlan =
  | { mode: "modules"; modules: string[]; reason: string }
  | { mode: "incremental"; reconfigure: boolean; reason: string }
  | { mode: "full"; reason: string };

/** What the base build knows about the changed files. */
export interface ChangeFacts {
  changes: readonly TreeChange[];
  /** targets of the base build whose .cmd/.d file names a changed (or deleted) file */
  dependents: ReadonlyMap<string, readonly string[]>;
  /** for an added header: dependencies of the base build with the same file name */
  sameNamed: ReadonlyMap<string, readonly string[]>;
  /** the module (e.g. drivers/infiniband/hw/erdma/erdma.ko) a target is part of, if any */
  moduleOf(target: string): string | undefined;
}

/** Kbuild's own programs and rules: a change there can change how dependencies are recorded. */
function isKbuildMachinery(path: string): boolean {
  return path.startsWith("scripts/");
}

/** What `make tinyconfig` + fragments + olddefconfig read. */
function isKconfigInput(path: string): boolean {
  return basename(path).startsWith("Kconfig") || /^(arch\/[^/]+\/configs|kernel\/configs)\//.test(path);
}

function isMakefile(path: string): boolean {
  const name = basename(path);
  return /^(Makefile|Kbuild)/.test(name) || name.endsWith(".mk") || name.endsWith(".include");
}

/** Files the compiler reads: Kbuild records each use of them in a .cmd file. */
function isCompilerInput(path: string): boolean {
  return /\.(c|h|S|rs|lds)$/.test(path);
}

/** Text the kernel build never reads (a series often updates it beside the code). */
function isNeverBuilt(path: string): boolean {
  return (
    /^(Documentation|LICENSES|tools\/testing)\//.test(path) || path === "MAINTAINERS" || path === "CREDITS"
  );
}

function listed(paths: readonly string[], max = 3): string {
  return paths.length <= max
    ? paths.join(", ")
    : `${paths.slice(0, max).join(", ")} and ${paths.length - max} more`;
}

export function planRebuild(facts: ChangeFacts): RebuildPlan {
  const paths = facts.changes.map((c) => c.path);
  const machinery = paths.filter(isKbuildMachinery);
  if (machinery.length > 0)
    return { mode: "full", reason: `Kbuild's own scripts change: ${listed(machinery)}` };
  for (const c of facts.changes) {
    const shadowed = c.kind === "added" && c.path.endsWith(".h") ? (facts.sameNamed.get(c.path) ?? []) : [];
    if (shadowed.length > 0)
      return {
        mode: "full",
        reason: `new header ${c.path} may shadow ${listed(shadowed, 1)} in include lookups`,
      };
  }

  const kconfig = paths.filter(isKconfigInput);
  if (kconfig.length > 0)
    return {
      mode: "incremental",
      reconfigure: true,
      reason: `the configuration's input changes: ${listed(kconfig)}`,
    };
  const makefiles = paths.filter(isMakefile);
  if (makefiles.length > 0)
    return { mode: "incremental", reconfigure: false, reason: `build rules change: ${listed(makefiles)}` };

  const modules = new Set<string>();
  for (const c of facts.changes) {
    const targets = facts.dependents.get(c.path) ?? [];
    if (c.kind === "deleted" && targets.length > 0)
      return {
        mode: "incremental",
        reconfigure: false,
        reason: `${c.path} is deleted; ${listed(targets, 1)} used it`,
      };
    if (targets.length === 0) {
      if (isCompilerInput(c.path) || isNeverBuilt(c.path)) continue;
      return {
        mode: "incremental",
        reconfigure: false,
        reason: `${c.path} is no compiler input and no build step names it; Kbuild decides`,
      };
    }
    for (const target of targets) {
      const module = facts.moduleOf(target);
      if (!module)
        return { mode: "incremental", reconfigure: false, reason: `${c.path} reaches built-in ${target}` };
      modules.add(module);
    }
  }
  const sorted = [...modules].sort();
  return {
    mode: "modules",
    modules: sorted,
    reason:
      sorted.length > 0
        ? `only modules use the changed files: ${listed(sorted.map((m) => basename(m)))}`
        : "nothing this configuration builds uses the changed files",
  };
}
