import { createWriteStream } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { basename, join } from "node:path";
import { HilError, isHilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { makeDir } from "../../util/make-dir.ts";
import { type BuildStats, KbuildCounter, readStats, recordStats } from "./kbuild-progress.ts";
import { checkRequestedOptions, effectiveRequests, type Fragment } from "./kconfig.ts";
import { assertSourceUntouched } from "./source-guard.ts";
import { inStep } from "./step.ts";

/** A source tree and its O= build tree: every make call here runs as `make -C src O=build`. */
export interface KbuildTree {
  srcDir: string;
  buildDir: string;
}

function make(tree: KbuildTree, args: readonly string[]): string[] {
  return ["-C", tree.srcDir, `O=${tree.buildDir}`, ...args];
}

/**
 * tinyconfig, then the fragments merged in order (merge_config.sh -m), then olddefconfig; fails if
 * the final .config lacks any option a fragment asked for. Copies of the fragments stay in `fragDir`.
 */
export async function configureKernel(
  tree: KbuildTree,
  fragments: readonly Fragment[],
  fragDir: string,
  version: string,
) {
  await inStep(
    `[kernel] configuring Linux ${version} (tinyconfig + ${fragments.length} fragment(s))`,
    async () => {
      await makeDir(fragDir);
      // merge_config.sh splits its file list on spaces: hand it copies with safe names.
      const copies: string[] = [];
      for (const [i, f] of fragments.entries()) {
        const copy = join(
          fragDir,
          `${String(i).padStart(2, "0")}-${basename(f.path).replace(/[^A-Za-z0-9._-]/g, "_")}`,
        );
        await writeFile(copy, f.bytes);
        copies.push(copy);
      }
      await run("make tinyconfig", "make", make(tree, ["tinyconfig"]));
      const mergeConfig = join(tree.srcDir, "scripts", "kconfig", "merge_config.sh");
      const dotConfig = join(tree.buildDir, ".config");
      await run("merge_config.sh", "sh", [mergeConfig, "-m", "-O", tree.buildDir, dotConfig, ...copies], {
        cwd: tree.buildDir,
      });
      await run("make olddefconfig", "make", make(tree, ["olddefconfig"]));
      const requests = effectiveRequests(fragments.map((f) => f.requests));
      await checkRequestedOptions(requests, tree.buildDir, tree.srcDir, version);
    },
  );
}

const COMPILER_ERROR = /: (fatal )?error: |\*\*\* /;

export interface CompileOptions {
  /** make targets; default: the kernel and its modules */
  targets?: readonly string[];
  /** the progress bar's step count when known in advance */
  total?: number;
  /**
   * A full build: the progress total is the step count the last full build of this kernel
   * version (e.g. "6.12") recorded, and this build's count is recorded for the next one.
   */
  statsLabel?: string;
}

/** `make -j<nproc>`: Kbuild's quiet lines drive the progress bar. The whole output goes to `logPath`. */
export async function compileKernel(
  tree: KbuildTree,
  logPath: string,
  title: string,
  opts: CompileOptions = {},
) {
  const total = opts.total ?? (opts.statsLabel ? readStats()[opts.statsLabel]?.steps : undefined);
  const counter = new KbuildCounter();
  const errors: string[] = [];
  const log = createWriteStream(logPath);
  const started = Date.now();
  try {
    await inStep(
      title,
      async (step) => {
        await run("make", "make", make(tree, [`-j${availableParallelism()}`, ...(opts.targets ?? [])]), {
          tailLines: 30,
          onLine: (line) => {
            log.write(`${line}\n`);
            if (counter.feed(line)) step.update(counter.steps, total, counter.last?.target);
            // paths relative to the source tree: a failed build's tree is removed
            else if (COMPILER_ERROR.test(line) && errors.length < 30)
              errors.push(line.replaceAll(`${tree.srcDir}/`, ""));
          },
        });
      },
      () => `${counter.objects} objects, ${counter.steps} Kbuild steps`,
    );
  } catch (err) {
    if (isHilError(err) && errors.length > 0) {
      throw new HilError(`${title.replace(/^\[kernel\] /, "")} failed`, {
        detail: `errors:\n${errors.join("\n")}\n${(err.detail ?? "").replaceAll(`${tree.srcDir}/`, "")}`,
        cause: err,
      });
    }
    throw err;
  } finally {
    await new Promise((done) => log.end(done));
  }
  await assertSourceUntouched(tree.srcDir, started);
  const stats: BuildStats = {
    steps: counter.steps,
    objects: counter.objects,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  if (opts.statsLabel) await recordStats(opts.statsLabel, stats);
  return stats;
}

/** modules_install into `modulesRoot` (stripped; depmod runs on the host). */
export async function installModules(tree: KbuildTree, modulesRoot: string): Promise<void> {
  await inStep("[kernel] installing modules", async () => {
    const args = ["modules_install", `INSTALL_MOD_PATH=${modulesRoot}`, "INSTALL_MOD_STRIP=1"];
    await run("make modules_install", "make", make(tree, args));
  });
}

export async function kernelRelease(tree: KbuildTree): Promise<string> {
  return (await readFile(join(tree.buildDir, "include", "config", "kernel.release"), "utf8")).trim();
}
