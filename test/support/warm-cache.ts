/**
 * Entries of the machine's warm cache, found and copied without touching them: read, never
 * written, never hard-linked (a copy is what a test may cut, rebuild or adopt).
 */
import { existsSync, mkdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DEFAULT_KERNEL } from "../../harness/defaults.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { cacheRoot } from "../../util/cache.ts";
import { run } from "../../util/exec.ts";

export interface WarmKernel {
  /** the entry in the warm cache */
  dir: string;
  key: string;
  /** the kernel-base entry its source tree is in */
  baseKey: string;
}

/**
 * The machine cache's build of the default kernel with this worktree's guest/kconfig/base.config,
 * as `hil run` finds it (a cache hit), or built into that cache first on a cold machine, so the
 * tests that copy it do not depend on another test having built it before them.
 */
export async function warmDefaultKernel(root: string): Promise<WarmKernel> {
  if (root !== cacheRoot()) throw new Error(`the warm cache is hil's own (${cacheRoot()}), not ${root}`);
  const kernel = await buildKernel({ base: DEFAULT_KERNEL, configs: [] });
  return { dir: kernel.dir, key: basename(kernel.dir), baseKey: basename(dirname(kernel.srcDir)) };
}

/** Copies `place` (e.g. "kernel/<key>") of the warm cache into `to`, times and modes kept. */
export async function copyWarm(from: string, to: string, place: string): Promise<string> {
  const source = join(from, place);
  if (!existsSync(source)) throw new Error(`${source} is not in the warm cache`);
  const target = join(to, place);
  mkdirSync(dirname(target), { recursive: true });
  await run(`copying ${place}`, "cp", ["-a", source, target]);
  return target;
}
