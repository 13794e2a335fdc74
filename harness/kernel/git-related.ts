/**
 * The nearest cached kernel a `<repo>@<ref>` build can continue: the build of a first-parent
 * ancestor's tree, either an earlier `<repo>@<commit>` build or a Debian base whose unpacked
 * source has that very tree (a repository that imported Debian's source). The ref's tree is then
 * that build's tree with the ancestor-to-ref changes, and Kbuild continues its build
 * (rebuild.ts) instead of compiling the kernel from scratch.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cachePath, cacheRoot, ensureEntry, isComplete } from "../../util/cache.ts";
import { run } from "../../util/exec.ts";
import {
  BASE_CACHE_KIND,
  type GitCheckout,
  gitTreeKey,
  kernelVersion,
  makefileVersion,
} from "./base-source.ts";
import type { LinkSource } from "./git-linked-tree.ts";
import { gitTreeIdOf } from "./git-tree-id.ts";
import { inStep } from "./step.ts";
import type { KernelArtifact } from "./types.ts";

/** The git tree id of each Debian base's unpacked source, computed once a base. */
const TREE_ID_CACHE_KIND = "kernel-base-tree";

/** How far back along first parents a related build is looked for. */
const MAX_ANCESTORS = 64;

export interface RelatedBuild {
  artifact: KernelArtifact;
  /** the tree it was built from, to link the ref's tree from */
  source: LinkSource;
  /** its base as hil names it, and that base's key (to bring its tree back if the cache lost it) */
  base: string;
  baseKey: string;
  /** the ancestor commit whose tree it is, and how many first parents back */
  commit: string;
  distance: number;
}

/** The cached kernel of `base` (key `baseKey`) with no series and no config fragment, if any. */
export type FindBuild = (base: string, baseKey: string) => Promise<KernelArtifact | undefined>;

interface Ancestor {
  commit: string;
  tree: string;
  /** first parents back from the ref's commit */
  distance: number;
}

async function ancestors(git: GitCheckout): Promise<Ancestor[]> {
  const r = await run("git log (ancestors)", "git", [
    "-C",
    git.repository,
    "log",
    "--first-parent",
    `-n${MAX_ANCESTORS + 1}`,
    "--format=%H %T",
    git.commit,
  ]);
  return r.stdout
    .split("\n")
    .map((l) => l.trim().split(" "))
    .filter((f): f is [string, string] => f.length === 2)
    .map(([commit, tree], distance) => ({ commit, tree, distance }))
    .filter((a) => a.tree !== git.tree);
}

interface DebianTree {
  base: string;
  baseKey: string;
  srcDir: string;
  artifact: KernelArtifact;
}

/** Debian bases of this kernel version with a cached build, by the tree id of their source. */
async function debianTrees(version: string, find: FindBuild): Promise<Map<string, DebianTree>> {
  const out = new Map<string, DebianTree>();
  const kindDir = join(cacheRoot(), BASE_CACHE_KIND);
  const keys = existsSync(kindDir) ? readdirSync(kindDir).filter((n) => /^[0-9a-f]{64}$/.test(n)) : [];
  for (const baseKey of keys) {
    const entry = cachePath(BASE_CACHE_KIND, baseKey);
    const srcDir = join(entry, "src");
    if (!isComplete(entry) || !existsSync(join(entry, "base.json")) || !existsSync(join(srcDir, "Makefile")))
      continue;
    const base = String(JSON.parse(readFileSync(join(entry, "base.json"), "utf8")).base ?? "");
    if (!base.startsWith("debian:") || kernelVersion(srcDir).text !== version) continue;
    const artifact = await find(base, baseKey);
    if (!artifact) continue;
    const { dir } = await ensureEntry(
      TREE_ID_CACHE_KIND,
      baseKey,
      { what: `git tree id of ${base}` },
      async (work) => {
        const id = await inStep(`[kernel] the git tree id of ${base}'s source (once a base)`, () =>
          gitTreeIdOf(srcDir),
        );
        await writeFile(join(work, "tree"), `${id}\n`);
      },
    );
    out.set(readFileSync(join(dir, "tree"), "utf8").trim(), { base, baseKey, srcDir, artifact });
  }
  return out;
}

/** The nearest ancestor of `git`'s commit whose tree has a cached build; undefined when none has. */
export async function findRelatedBuild(git: GitCheckout, find: FindBuild): Promise<RelatedBuild | undefined> {
  const line = await ancestors(git);
  if (line.length === 0) return undefined;
  const makefile = await run("git show Makefile", "git", [
    "-C",
    git.repository,
    "show",
    `${git.tree}:Makefile`,
  ]);
  const version = makefileVersion(makefile.stdout, `${git.repository}@${git.ref}:Makefile`).text;
  let debian: Map<string, DebianTree> | undefined;
  for (const a of line) {
    const asRef = `${git.repository}@${a.commit}`;
    const earlier = await find(asRef, gitTreeKey(a.tree));
    if (earlier)
      return {
        artifact: earlier,
        source: {
          srcDir: earlier.srcDir,
          tree: a.tree,
          describe: `${git.repository}@${a.commit.slice(0, 12)}`,
        },
        base: asRef,
        baseKey: gitTreeKey(a.tree),
        commit: a.commit,
        distance: a.distance,
      };
    debian ??= await debianTrees(version, find);
    const d = debian.get(a.tree);
    if (d)
      return {
        artifact: d.artifact,
        source: { srcDir: d.srcDir, tree: a.tree, describe: d.base },
        base: d.base,
        baseKey: d.baseKey,
        commit: a.commit,
        distance: a.distance,
      };
  }
  return undefined;
}
