/**
 * A patched kernel built from its base's cached build: the plan (rebuild-plan.ts) from what the
 * series changed and what the base build recorded, and the trees Kbuild then continues in.
 */
import { lutimes, rm } from "node:fs/promises";
import { join } from "node:path";
import { readModuleMap, sameNamedHeaders, targetsUsing } from "./build-record.ts";
import { compileKernel, configureKernel, type KbuildTree } from "./kbuild.ts";
import { readStats, recordStats } from "./kbuild-progress.ts";
import type { Fragment } from "./kconfig.ts";
import { moduleTargets, restoreModuleRecords, saveModuleRecords } from "./module-build.ts";
import { planRebuild, type RebuildPlan } from "./rebuild-plan.ts";
import { inStep } from "./step.ts";
import { copyBuildTree } from "./tree-copy.ts";
import { diffLinkedTrees, type TreeChange } from "./tree-diff.ts";
import type { KernelArtifact } from "./types.ts";

export interface PatchedBuildPlan {
  plan: RebuildPlan;
  changes: TreeChange[];
  /** targets of the base build using each changed file */
  used: Map<string, string[]>;
}

/** Compares the patched tree with the base's and asks the base build what uses the differences. */
export async function planFromBase(base: KernelArtifact, patchedSrc: string): Promise<PatchedBuildPlan> {
  const changes = await diffLinkedTrees(base.srcDir, patchedSrc);
  // the base build's records name its source tree where it was built
  const used = await targetsUsing(
    base.buildDir,
    base.kbuildNames.srcDir,
    changes.map((c) => c.path),
  );
  const headers = changes.filter((c) => c.kind === "added" && c.path.endsWith(".h")).map((c) => c.path);
  const sameNamed = await sameNamedHeaders(base.buildDir, base.kbuildNames.srcDir, headers);
  const modules = readModuleMap(base.buildDir);
  const plan = planRebuild({ changes, dependents: used, sameNamed, moduleOf: (t) => modules.get(t) });
  return { plan, changes, used };
}

/**
 * The changed files of the patched tree, written "now": newer than every object of the base build
 * whatever the age of the patched tree, so Kbuild's time stamp check sees each of them as changed.
 * Each is a file of the patched tree's own (apply.ts), never one shared with the base tree.
 */
export async function touchChanged(patchedSrc: string, changes: readonly TreeChange[]): Promise<void> {
  const now = new Date();
  for (const c of changes) if (c.kind !== "deleted") await lutimes(join(patchedSrc, c.path), now, now);
}

/**
 * Continues the base build with the series applied: Kbuild runs against the patched tree in
 * `<work>/build`, a copy of the base build tree, and makes again what the changes reach (mode
 * "modules": only the modules; the base's vmlinux stays). Returns the tree and the steps run.
 */
export async function rebuildFromBase(
  work: string,
  base: KernelArtifact,
  patchedSrc: string,
  planned: PatchedBuildPlan,
  fragments: readonly Fragment[],
  version: { text: string; major: number; minor: number },
  title: string,
  /** what this kind of rebuild is, for its own progress figures (e.g. the config variant's fragments) */
  kind?: string,
): Promise<{ tree: KbuildTree; steps: number }> {
  const { plan, changes, used } = planned;
  if (plan.mode === "full") throw new Error("a full build does not start from the base build");
  const tree: KbuildTree = { srcDir: patchedSrc, buildDir: join(work, "build") };
  await inStep("[kernel] copying the base build", () =>
    copyBuildTree({ srcDir: base.srcDir, buildDir: base.buildDir }, tree, base.kbuildNames),
  );
  await touchChanged(patchedSrc, changes);
  if (plan.mode === "incremental" && plan.reconfigure)
    await configureKernel(tree, fragments, join(work, "fragments"), version.text);
  // A target whose input is gone has no newer file to notice: remove it so Kbuild makes it again.
  for (const c of changes.filter((x) => x.kind === "deleted"))
    for (const target of used.get(c.path) ?? []) await rm(join(tree.buildDir, target), { force: true });

  // The progress total: the targets that use a changed file, and the steps beyond those that the
  // last build of this kind ran (linking, modpost, ...).
  // a configuration over the base's (no source change) rebuilds what its symbols reach: its own figures
  const label = `${version.major}.${version.minor} ${plan.mode}${changes.length === 0 ? " config" : ""}${kind ? ` ${kind}` : ""}`;
  const rebuilt = new Set([...used.values()].flat()).size;
  const overhead = readStats()[label]?.steps;
  const saved = plan.mode === "modules" ? await saveModuleRecords(tree.buildDir) : undefined;
  const stats = await compileKernel(tree, join(work, "build.log"), title, {
    targets: saved ? moduleTargets(saved.order) : [],
    total: overhead === undefined ? undefined : rebuilt + overhead,
  });
  if (saved) await restoreModuleRecords(tree.buildDir, saved);
  await recordStats(label, { ...stats, steps: Math.max(0, stats.steps - rebuilt) });
  return { tree, steps: stats.steps };
}
