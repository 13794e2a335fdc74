import { existsSync, readFileSync } from "node:fs";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureHostPackages } from "../../util/apt.ts";
import { cachePath, type EntryOptions, ensureEntry, findIntactEntry, isComplete } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { hashParts, shortKey } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { ensurePatchedTree } from "./apply.ts";
import { readArtifactRecord, writeArtifactRecord } from "./artifact-record.ts";
import {
  type BaseIdentity,
  baseIdentity,
  ensureBaseTree,
  type GitCheckout,
  kernelVersion,
} from "./base-source.ts";
import { type BaseSpec, describeBase, isPrebuiltBase, parseBaseSpec } from "./base-spec.ts";
import { bzImageProblem } from "./bzimage.ts";
import { findRelatedBuild } from "./git-related.ts";
import { compileKernel, configureKernel, installModules, type KbuildTree, kernelRelease } from "./kbuild.ts";
import { type Fragment, readFragment, resolveFragmentPath, smpBootArgs } from "./kconfig.ts";
import { sharedModuleInterface } from "./module-interface.ts";
import { checkPrebuiltRequest, ensurePrebuiltKernel } from "./prebuilt.ts";
import { planFromBase, rebuildFromBase } from "./rebuild.ts";
import { loadSeries, type Series } from "./series.ts";
import type { KernelArtifact, KernelRequest, RebuildRecord } from "./types.ts";

/** Host packages a kernel build needs (for `hil setup`). */
export const KERNEL_HOST_PACKAGES = [
  "build-essential",
  "flex",
  "bison",
  "bc",
  "libelf-dev",
  "libssl-dev",
  "cpio",
  "kmod",
  "xz-utils",
  "lz4", // base.config's CONFIG_KERNEL_LZ4 compresses the image with the host's lz4
  "rsync",
  "patch",
  "dpkg-dev",
] as const;

/** Bump when the build steps change in a way that changes the artifact. */
export const RECIPE_VERSION = "kernel-recipe-1";

/**
 * Bump when only the builds of a base + series change (their record of the build from the base):
 * the bases and their config variants keep their keys. 2: the record names the kernel whose
 * interface to out-of-tree modules the build shares (module-interface.ts).
 */
export const SERIES_RECIPE_VERSION = "series-recipe-2";

export const KERNEL_CACHE_KIND = "kernel";

export const BASE_CONFIG_PATH = fileURLToPath(new URL("../../guest/kconfig/base.config", import.meta.url));

/** The build's content key: everything that decides the artifact's bytes. */
export function kernelBuildKey(parts: {
  baseKey: string;
  seriesKey: string | undefined;
  baseConfig: Uint8Array;
  fragments: readonly Uint8Array[];
  recipe?: string;
  seriesRecipe?: string;
}): string {
  return hashParts([
    parts.recipe ?? RECIPE_VERSION,
    parts.baseKey,
    parts.seriesKey === undefined
      ? "no-series"
      : `${parts.seriesRecipe ?? SERIES_RECIPE_VERSION}:${parts.seriesKey}`,
    parts.baseConfig,
    String(parts.fragments.length),
    ...parts.fragments,
  ]);
}

/** The pristine source tree of a base (for `hil setup`): fetched and unpacked once. */
export async function ensureBaseSource(base: string): Promise<string> {
  return (await ensureBaseTree(parseBaseSpec(base))).srcDir;
}

/** Everything known about a request before any tree is fetched: enough to compute its key. */
interface Plan {
  spec: BaseSpec;
  series: Series | undefined;
  /** guest/kconfig/base.config first, then the user's fragments */
  fragments: Fragment[];
  baseKey: string;
  /** a debian: base's package version */
  debianVersion: string | undefined;
  /** a <repo>@<ref> base's commit */
  git: BaseIdentity["git"];
  key: string;
  describe: string;
}

async function plan(req: KernelRequest): Promise<Plan> {
  const spec = parseBaseSpec(req.base);
  return planWith(req, spec, await baseIdentity(spec));
}

function planWith(req: KernelRequest, spec: BaseSpec, base: BaseIdentity): Plan {
  const series = req.series ? loadSeries(req.series) : undefined;
  const baseConfig = readFragment(BASE_CONFIG_PATH, "guest/kconfig/base.config");
  const userFragments = req.configs.map((c) => readFragment(resolveFragmentPath(c), c));
  const bKey = base.key;
  const key = kernelBuildKey({
    baseKey: bKey,
    seriesKey: series?.key,
    baseConfig: baseConfig.bytes,
    fragments: userFragments.map((f) => f.bytes),
  });
  const describe = [
    describeBase(spec),
    series ? `+ ${series.patches.length} patch(es) from ${series.path}` : undefined,
    req.configs.length > 0 ? `+ config ${req.configs.join(", ")}` : undefined,
  ]
    .filter(Boolean)
    .join(" ");
  return {
    spec,
    series,
    fragments: [baseConfig, ...userFragments],
    baseKey: bKey,
    debianVersion: base.debianVersion,
    git: base.git,
    key,
    describe,
  };
}

/** The cache key of the kernel `req` names, computed without building or fetching anything. */
export function kernelKeyFor(req: KernelRequest, base: BaseIdentity): string {
  return planWith(req, parseBaseSpec(req.base), base).key;
}

/**
 * A cached artifact, with what the plan knows that older artifact files may lack, and the commit
 * this run's ref names (another commit with the same tree may have built the entry).
 */
async function readArtifact(dir: string, p: Plan): Promise<KernelArtifact> {
  const { git: _builtFrom, ...artifact } = await readArtifactRecord(dir);
  return {
    ...artifact,
    bootArgs: smpBootArgs(p.fragments.slice(1)),
    ...(p.debianVersion ? { debianVersion: p.debianVersion } : {}),
    ...(p.git ? { git: p.git, describe: p.describe } : {}),
  };
}

/**
 * How a kernel entry is kept: built in place (the build tree names its own path); the boot
 * artifacts (bzImage, modules, config, records) hashed; the O= build tree (about 6000 files,
 * 255 MB) by size alone: it is never booted, it feeds module and incremental builds, and a
 * digest of it would cost every run a second or more of reading. An entry made before entries
 * were recorded is adopted only if its bzImage is as long as its header says.
 */
export function kernelEntryOptions(what: string): EntryOptions {
  return {
    what,
    inPlace: true,
    bulk: ["build"],
    validate: (dir) => bzImageProblem(join(dir, "bzImage")),
  };
}

/**
 * The kernel `req` names when an earlier build left it in the cache, else undefined; builds,
 * fetches and locks nothing. `base` is the identity of req's base (baseIdentity computes it).
 */
export async function findCachedKernel(
  req: KernelRequest,
  base: BaseIdentity,
): Promise<KernelArtifact | undefined> {
  const p = planWith(req, parseBaseSpec(req.base), base);
  const dir = cachePath(KERNEL_CACHE_KIND, p.key);
  return (await findIntactEntry(dir)) ? readArtifact(dir, p) : undefined;
}

/** The source tree to build: the pristine base, or the base with the series applied. */
async function ensureSourceTree(p: Plan): Promise<string> {
  const base = await ensureBaseTree(p.spec, p.baseKey);
  if (!p.series) return base.srcDir;
  return (await ensurePatchedTree(base, p.series, describeBase(p.spec))).srcDir;
}

/** Builds (or finds in the cache) the kernel `req` describes. */
/** Throws the error buildKernel would give for a base, series or config fragment that does not exist, without building. */
export async function checkKernelRequest(req: KernelRequest): Promise<void> {
  if (isPrebuiltBase(req.base)) checkPrebuiltRequest(req);
  else await plan(req);
}

export async function buildKernel(req: KernelRequest): Promise<KernelArtifact> {
  if (isPrebuiltBase(req.base)) return ensurePrebuiltKernel(req, BASE_CONFIG_PATH);
  const p = await plan(req);
  const entry = kernelEntryOptions(`kernel ${p.describe}`);
  const { dir, built } = await ensureEntry(KERNEL_CACHE_KIND, p.key, entry, async (work) => {
    const usesGit = p.spec.kind === "git" || p.spec.kind === "git-ref";
    await ensureHostPackages(usesGit ? [...KERNEL_HOST_PACKAGES, "git"] : KERNEL_HOST_PACKAGES);
    let artifact: KernelArtifact;
    if (p.series) artifact = await buildPatched(work, req, p);
    else if (req.configs.length > 0) artifact = await buildConfigVariant(work, req, p);
    else if (p.spec.kind === "git-ref" && p.git) artifact = await buildGitRef(work, p, p.git);
    else {
      const { tree, version } = await buildFromScratch(work, await ensureSourceTree(p), p);
      artifact = await finish(work, tree, p, version);
    }
    await writeArtifactRecord(work, artifact);
  });
  const artifact = await readArtifact(dir, p);
  if (!built) {
    // The build tree refers to its source tree; bring that back if the cache lost it.
    if (!isComplete(resolve(artifact.srcDir, ".."))) await ensureSourceTree(p);
    progress.info(`[kernel] ${p.describe}: cached (${shortKey(p.key)})`);
  }
  return artifact;
}

/**
 * Base + series, continuing the base's cached build (built first if missing) so that only what
 * the series reaches is made again; from scratch when the plan says Kbuild cannot be trusted
 * with the change.
 */
async function buildPatched(work: string, req: KernelRequest, p: Plan): Promise<KernelArtifact> {
  const patchedSrc = await ensureSourceTree(p);
  const base = await buildKernel({ ...req, series: undefined });
  return continueBuild(
    work,
    p,
    base,
    patchedSrc,
    `Linux %v + ${p.series?.patches.length} patch(es)`,
    "its base build",
  );
}

/**
 * A `<repo>@<ref>` tree: the cached build of its nearest ancestor's tree continued (an earlier
 * build of that repository, or a Debian base whose source is that tree), else from scratch.
 */
async function buildGitRef(work: string, p: Plan, git: GitCheckout): Promise<KernelArtifact> {
  const related = await findRelatedBuild(git, (base, baseKey) =>
    findCachedKernel({ base, configs: [] }, { key: baseKey }),
  );
  if (!related) {
    const { tree, version } = await buildFromScratch(work, await ensureSourceTree(p), p);
    return finish(work, tree, p, version);
  }
  await ensureBaseTree(parseBaseSpec(related.base), related.baseKey);
  const srcDir = (await ensureBaseTree(p.spec, p.baseKey, related.source)).srcDir;
  const back = `${related.distance} commit(s) before ${git.ref}`;
  progress.info(
    `[kernel] ${p.describe}: continuing the cached build of ${related.source.describe} (the tree of ${related.commit.slice(0, 12)}, ${back})`,
  );
  return continueBuild(
    work,
    p,
    related.artifact,
    srcDir,
    `Linux %v (${p.describe})`,
    `${related.source.describe}'s build`,
  );
}

/**
 * Continues `base`'s build in a copy of its build tree against `srcDir`, a hard-linked copy of
 * base's source with its own changed files: only what the changes reach is made again, or all
 * of it from scratch when the plan says Kbuild cannot be trusted with them. `what` names the
 * kernel in the progress title (%v: its version), `from` the build it continues.
 */
async function continueBuild(
  work: string,
  p: Plan,
  base: KernelArtifact,
  srcDir: string,
  what: string,
  from: string,
): Promise<KernelArtifact> {
  const planned = await planFromBase(base, srcDir);
  const { plan } = planned;
  progress.info(`[kernel] ${plan.mode === "modules" ? "module-only" : plan.mode} build: ${plan.reason}`);
  const record = { mode: plan.mode, reason: plan.reason, baseKey: base.key };
  if (plan.mode === "full") {
    const { tree, version, steps } = await buildFromScratch(work, srcDir, p);
    return finish(work, tree, p, version, { ...record, steps });
  }
  const version = kernelVersion(srcDir);
  const modules =
    plan.mode === "modules" ? `${plan.modules.map((m) => basename(m)).join(", ") || "no module"} of ` : "";
  const title = `[kernel] rebuilding ${modules}${what.replace("%v", version.text)} from ${from}`;
  const { tree, steps } = await rebuildFromBase(work, base, srcDir, planned, p.fragments, version, title);
  const symversUnchanged =
    plan.mode === "modules" && (await sameFile(symversOf(base.buildDir), symversOf(tree.buildDir)));
  const moduleInterfaceOf = sharedModuleInterface(base, plan, planned.changes, symversUnchanged);
  return finish(work, tree, p, version.text, {
    ...record,
    steps,
    ...(plan.mode === "modules" ? { modules: plan.modules } : {}),
    ...(moduleInterfaceOf ? { moduleInterfaceOf } : {}),
  });
}

const symversOf = (buildDir: string): string => join(buildDir, "Module.symvers");

/** Both files exist and hold the same bytes. */
async function sameFile(a: string, b: string): Promise<boolean> {
  try {
    const [x, y] = await Promise.all([readFile(a), readFile(b)]);
    return x.equals(y);
  } catch {
    return false;
  }
}

/**
 * The base kernel with more config fragments, continuing the base config's cached build (built
 * first if missing): the configuration is made again as a fresh build makes it, and Kbuild, whose
 * records name the config symbols each target uses (fixdep), makes again what the changed symbols
 * reach: a fragment that adds modules (ulp, rxe) costs those modules, one that changes what every
 * file is compiled with (debug) a whole build, as from scratch; smp changes nothing (base.config
 * builds SMP; the fragment only lets the guest use both vCPUs).
 */
async function buildConfigVariant(work: string, req: KernelRequest, p: Plan): Promise<KernelArtifact> {
  const srcDir = await ensureSourceTree(p);
  const start = await cachedConfigSubset(req, p);
  const base = start?.artifact ?? (await buildKernel({ ...req, configs: [] }));
  const over = start ? `the cached config ${start.configs.join(", ")}` : "the base configuration";
  const reason = `config ${req.configs.join(", ")} over ${over}: Kbuild makes again what the changed symbols reach`;
  progress.info(`[kernel] incremental build: ${reason}`);
  const version = kernelVersion(srcDir);
  const planned = {
    plan: { mode: "incremental" as const, reconfigure: true, reason },
    changes: [],
    used: new Map(),
  };
  const title = `[kernel] building Linux ${version.text} + config ${req.configs.join(", ")} from ${start ? `its + config ${start.configs.join(", ")} build` : "its base build"}`;
  const kind = [req.configs.join("+"), ...(start ? [`from ${start.configs.join("+")}`] : [])].join(" ");
  const { tree, steps } = await rebuildFromBase(
    work,
    base,
    srcDir,
    planned,
    p.fragments,
    version,
    title,
    kind,
  );
  return finish(work, tree, p, version.text, { mode: "incremental", reason, baseKey: base.key, steps });
}

/**
 * The cached build of the largest part of `req`'s fragments (in their order), if an earlier run
 * left one: a variant of two fragments continues from either one's build rather than the base's,
 * so what both share is not made again. Builds nothing.
 */
async function cachedConfigSubset(
  req: KernelRequest,
  p: Plan,
): Promise<{ configs: string[]; artifact: KernelArtifact } | undefined> {
  const n = req.configs.length;
  const subsets: string[][] = [];
  for (let mask = 1; mask < (1 << n) - 1; mask++) subsets.push(req.configs.filter((_, i) => mask & (1 << i)));
  subsets.sort((a, b) => b.length - a.length);
  const identity: BaseIdentity = {
    key: p.baseKey,
    ...(p.debianVersion ? { debianVersion: p.debianVersion } : {}),
    ...(p.git ? { git: p.git } : {}),
  };
  let best: { configs: string[]; artifact: KernelArtifact; enabled: number } | undefined;
  for (const configs of subsets) {
    if (best && configs.length < best.configs.length) break;
    const artifact = await findCachedKernel({ ...req, configs }, identity);
    // of two builds as close, the one with more options on has more of the variant built already
    const enabled = artifact ? enabledOptions(artifact.config) : 0;
    if (artifact && (!best || enabled > best.enabled)) best = { configs, artifact, enabled };
  }
  return best && { configs: best.configs, artifact: best.artifact };
}

function enabledOptions(configFile: string): number {
  const text = existsSync(configFile) ? readFileSync(configFile, "utf8") : "";
  return text.match(/^CONFIG_\w+=[ym]$/gm)?.length ?? 0;
}

/**
 * Builds `req` from scratch into `dir`, outside the cache: what a patched kernel cost before it
 * could start from its base's build, for benchmarks and for tests that compare the two.
 */
export async function buildKernelFromScratch(req: KernelRequest, dir: string): Promise<KernelArtifact> {
  const p = await plan(req);
  await makeDir(dir);
  const { tree, version } = await buildFromScratch(dir, await ensureSourceTree(p), p);
  return finish(dir, tree, p, version);
}

/** tinyconfig + fragments, then the whole kernel, in `<work>/build`. */
async function buildFromScratch(work: string, srcDir: string, p: Plan) {
  const version = kernelVersion(srcDir);
  const tree: KbuildTree = { srcDir, buildDir: join(work, "build") };
  await mkdir(tree.buildDir);
  await configureKernel(tree, p.fragments, join(work, "fragments"), version.text);
  const patches = p.series ? ` + ${p.series.patches.length} patch(es)` : "";
  const title = `[kernel] building Linux ${version.text}${patches}`;
  const { steps } = await compileKernel(tree, join(work, "build.log"), title, {
    statsLabel: `${version.major}.${version.minor}`,
  });
  return { tree, version: version.text, steps };
}

/** modules_install, then the artifact: bzImage and .config copied out of the build tree. */
async function finish(
  work: string,
  tree: KbuildTree,
  p: Plan,
  version: string,
  rebuild?: RebuildRecord,
): Promise<KernelArtifact> {
  const modulesRoot = join(work, "modules");
  await installModules(tree, modulesRoot);
  const release = await kernelRelease(tree);
  if (!["lib", "usr/lib"].some((d) => existsSync(join(modulesRoot, d, "modules", release)))) {
    throw new HilError(`modules_install left no lib/modules/${release}`, { where: modulesRoot });
  }
  const bzImage = join(work, "bzImage");
  const config = join(work, "config");
  await copyFile(join(tree.buildDir, "arch", "x86", "boot", "bzImage"), bzImage);
  await copyFile(join(tree.buildDir, ".config"), config);
  return {
    key: p.key,
    dir: work,
    bzImage,
    modulesRoot,
    release,
    buildDir: tree.buildDir,
    srcDir: tree.srcDir,
    kbuildNames: { srcDir: tree.srcDir, buildDir: tree.buildDir },
    config,
    describe: p.describe,
    version,
    ...(p.debianVersion ? { debianVersion: p.debianVersion } : {}),
    patches: p.series?.patches.map((x) => x.subject) ?? [],
    ...(rebuild ? { rebuild } : {}),
  };
}
