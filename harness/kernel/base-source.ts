import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import {
  type AptContextName,
  aptContext,
  debFileVersion,
  downloadPackages,
  type PackageUri,
  packageUri,
} from "../../util/apt.ts";
import { ensureEntry } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { probe, run } from "../../util/exec.ts";
import { hashFile, hashParts } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { type BaseSpec, describeBase } from "./base-spec.ts";
import { type LinkSource, linkGitTree } from "./git-linked-tree.ts";
import { inStep } from "./step.ts";
import { hashTree } from "./tree-hash.ts";

export const BASE_CACHE_KIND = "kernel-base";

/** A pristine kernel source tree in the cache. */
export interface BaseTree {
  key: string;
  /** the cache entry; the tree itself is `srcDir` inside it */
  entryDir: string;
  srcDir: string;
}

/** The commit a `<repo>@<ref>` base resolved to when the run planned its kernel. */
export interface GitCheckout {
  /** the repository's path */
  repository: string;
  /** the ref as given */
  ref: string;
  commit: string;
  /** the commit's tree: what the kernel is built from, and its key */
  tree: string;
  /** the branch the ref names (refs/heads/<b>, or refs/remotes/<remote>/<b>) */
  branch?: string;
  /** the URL of that branch's remote (a local branch's upstream remote; none when it has none) */
  remoteUrl?: string;
}

/** A base's content key and, for a Debian base, the version of the package it names. */
export interface BaseIdentity {
  key: string;
  /** a debian: base's linux-source package version, e.g. "6.12.95-1~bpo12+1" */
  debianVersion?: string;
  /** a <repo>@<ref> base's commit */
  git?: GitCheckout;
}

/** The content key of a Debian base: the .deb apt names for it, by file name and sha256. */
export function debianBaseIdentity(uri: PackageUri): BaseIdentity {
  const debianVersion = debFileVersion(uri.filename);
  return {
    key: hashParts(["debian-deb", uri.filename, uri.sha256]),
    ...(debianVersion ? { debianVersion } : {}),
  };
}

async function gitOut(repo: string, args: string[]): Promise<string | undefined> {
  const r = await probe("git", ["-C", repo, ...args], { timeoutMs: 60_000 });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

/** The key of a commit's tree: two commits with the same tree build the same kernel. */
export function gitTreeKey(tree: string): string {
  return hashParts(["git-tree", tree]);
}

/** What `ref` of `repo` names now: its commit and tree, and the branch and remote it follows. */
export async function resolveGitRef(repo: string, ref: string): Promise<GitCheckout> {
  const commit = await gitOut(repo, [
    "rev-parse",
    "--verify",
    "--quiet",
    "--end-of-options",
    `${ref}^{commit}`,
  ]);
  if (!commit)
    throw new HilError(`${repo}@${ref}: ${ref} names no commit in ${repo}`, {
      detail: "give a branch, tag or commit of that repository (one that git rev-parse can name there)",
    });
  const tree = await gitOut(repo, ["rev-parse", "--verify", `${commit}^{tree}`]);
  if (!tree) throw new HilError(`${repo}@${ref}: commit ${commit} has no readable tree`);
  // ref cannot be an option here: parseBaseSpec refuses a ref that starts with "-"
  const full = (await gitOut(repo, ["rev-parse", "--symbolic-full-name", ref])) ?? "";
  const local = /^refs\/heads\/(.+)$/.exec(full)?.[1];
  const tracking = /^refs\/remotes\/([^/]+)\/(.+)$/.exec(full);
  const branch = local ?? tracking?.[2];
  const remote = local ? await gitOut(repo, ["config", "--get", `branch.${local}.remote`]) : tracking?.[1];
  const remoteUrl = remote ? await gitOut(repo, ["config", "--get", `remote.${remote}.url`]) : undefined;
  return {
    repository: repo,
    ref,
    commit,
    tree,
    ...(branch ? { branch } : {}),
    ...(remoteUrl ? { remoteUrl } : {}),
  };
}

/** A base's identity (key, Debian version, commit), computed without fetching or unpacking it. */
export async function baseIdentity(spec: BaseSpec): Promise<BaseIdentity> {
  if (spec.kind === "debian")
    return debianBaseIdentity(await packageUri(await aptContext(spec.suite), spec.package));
  if (spec.kind === "git-ref") {
    const git = await resolveGitRef(spec.repo, spec.ref);
    return { key: gitTreeKey(git.tree), git };
  }
  return { key: await baseKey(spec) };
}

/** The content key of a base, computed without fetching or unpacking it. */
export async function baseKey(spec: BaseSpec): Promise<string> {
  switch (spec.kind) {
    case "debian":
      return (await baseIdentity(spec)).key;
    case "git": {
      const head = (await run("git rev-parse", "git", ["-C", spec.path, "rev-parse", "HEAD"])).stdout.trim();
      const diff = await gitDiffAgainstHead(spec.path);
      return hashParts(["git", head, diff]);
    }
    case "git-ref":
      return (await baseIdentity(spec)).key;
    case "dir":
      return hashParts(["dir", await hashTree(spec.path)]);
    case "tarball":
      return hashParts(["tarball", await hashFile(spec.path)]);
  }
}

async function gitDiffAgainstHead(repo: string): Promise<string> {
  return (await run("git diff", "git", ["-C", repo, "diff", "HEAD", "--binary"])).stdout;
}

/**
 * Returns the cached pristine tree of `spec`, fetching and unpacking it the first time; a
 * `<repo>@<ref>` tree made the first time with `linkFrom` is that cached tree hard-linked, with
 * only the files that differ exported.
 */
export async function ensureBaseTree(spec: BaseSpec, key?: string, linkFrom?: LinkSource): Promise<BaseTree> {
  const k = key ?? (await baseKey(spec));
  const what = `kernel source ${describeBase(spec)}`;
  // about 86000 files, 1.4 GB: listed by size, not hashed (reading it would cost seconds)
  const { dir } = await ensureEntry(BASE_CACHE_KIND, k, { what, bulk: ["src"] }, async (work) => {
    await materialize(spec, work, k, linkFrom);
    if (!looksLikeKernelSource(join(work, "src"))) {
      throw new HilError(
        `${describeBase(spec)} does not contain a kernel source tree (no top-level Makefile and Kconfig)`,
      );
    }
    await writeFile(
      join(work, "base.json"),
      `${JSON.stringify({ base: describeBase(spec), key: k }, null, 2)}\n`,
    );
  });
  return { key: k, entryDir: dir, srcDir: join(dir, "src") };
}

function looksLikeKernelSource(dir: string): boolean {
  return existsSync(join(dir, "Makefile")) && existsSync(join(dir, "Kconfig"));
}

async function materialize(spec: BaseSpec, work: string, key: string, linkFrom?: LinkSource): Promise<void> {
  switch (spec.kind) {
    case "debian":
      return materializeDebian(spec.suite, spec.package, work);
    case "git":
      return materializeGit(spec.path, work);
    case "git-ref":
      return materializeGitRef(spec.repo, spec.ref, work, key, linkFrom);
    case "dir":
      return materializeDir(spec.path, work);
    case "tarball":
      return extractTarball(spec.path, work);
  }
}

async function materializeDebian(suite: AptContextName, pkg: string, work: string): Promise<void> {
  const ctx = await aptContext(suite);
  const expected = await packageUri(ctx, pkg);
  const dl = join(work, "download");
  try {
    const [deb] = await downloadPackages(ctx, [pkg], dl);
    if (!deb) throw new HilError(`apt-get download ${pkg} produced no file`);
    const got = await hashFile(deb);
    if (got !== expected.sha256) {
      throw new HilError(`${pkg} changed on the mirror while it was being fetched; run the command again`, {
        detail: `expected sha256 ${expected.sha256}, got ${got}`,
      });
    }
    const tarball = await inStep(`[kernel] unpacking ${expected.filename}`, async () => {
      const root = join(dl, "root");
      await run("dpkg-deb -x", "dpkg-deb", ["-x", deb, root]);
      await rm(deb);
      const usrSrc = join(root, "usr", "src");
      const name = (await readdir(usrSrc)).find((n) => /^linux-source-.*\.tar\.(xz|gz|bz2)$/.test(n));
      if (!name) throw new HilError(`${expected.filename} holds no /usr/src/linux-source-*.tar.* tarball`);
      return join(usrSrc, name);
    });
    await extractTarball(tarball, work);
  } finally {
    await rm(dl, { recursive: true, force: true });
  }
}

/** Extracts a tarball into `<work>/src`, dropping a single top-level directory if there is one. */
export async function extractTarball(tarball: string, work: string): Promise<void> {
  const unpack = join(work, "unpack");
  await makeDir(unpack);
  let files = 0;
  const label = `[kernel] extracting ${basename(tarball)}`;
  await inStep(
    label,
    async (step) => {
      const compressor = tarball.endsWith("xz") ? ["-I", "xz -T0"] : [];
      await run("tar -x", "tar", [...compressor, "-xvf", tarball, "-C", unpack], {
        onLine: () => step.update(++files, undefined, "files"),
      });
      const top = await readdir(unpack);
      const only = top.length === 1 && top[0] ? join(unpack, top[0]) : undefined;
      if (only && (await stat(only)).isDirectory()) {
        await rename(only, join(work, "src"));
        await rm(unpack, { recursive: true });
      } else await rename(unpack, join(work, "src"));
    },
    () => `${files} files`,
  );
}

async function materializeGit(repo: string, work: string): Promise<void> {
  const src = join(work, "src");
  await mkdir(src);
  await inStep(`[kernel] exporting ${repo} (HEAD + uncommitted changes)`, async () => {
    const archive = 'git -C "$1" archive --format=tar HEAD | tar -x -C "$2"';
    await run("git archive", "bash", ["-o", "pipefail", "-c", archive, "git-archive", repo, src]);
    const diffFile = join(work, "uncommitted.diff");
    await run("git diff", "git", ["-C", repo, "diff", "HEAD", "--binary", `--output=${diffFile}`]);
    if ((await stat(diffFile)).size > 0) {
      // Outside a repository git apply patches cwd; a repository enclosing the cache would capture it.
      await run(
        "git apply (uncommitted changes)",
        "git",
        ["apply", "--binary", "--whitespace=nowarn", diffFile],
        {
          cwd: src,
          env: { ...process.env, GIT_CEILING_DIRECTORIES: work },
        },
      );
    }
    await rm(diffFile);
  });
}

/** The tree of `ref` as it was when the key was made: a ref that moved since is an error, not another kernel. */
async function materializeGitRef(
  repo: string,
  ref: string,
  work: string,
  key: string,
  linkFrom?: LinkSource,
): Promise<void> {
  const git = await resolveGitRef(repo, ref);
  if (gitTreeKey(git.tree) !== key)
    throw new HilError(`${repo}@${ref} moved while hil was running (now commit ${git.commit})`, {
      detail: "run the command again, or name the commit itself",
    });
  const src = join(work, "src");
  if (linkFrom) {
    await inStep(
      `[kernel] linking ${repo}@${ref} (commit ${git.commit.slice(0, 12)}) from ${linkFrom.describe}'s tree`,
      () => linkGitTree(repo, linkFrom, git.tree, src),
      (changes) => `${changes.length} file(s) differ`,
    );
    return;
  }
  await mkdir(src);
  await inStep(`[kernel] exporting ${repo}@${ref} (commit ${git.commit.slice(0, 12)})`, async () => {
    const archive = 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"';
    await run("git archive", "bash", ["-o", "pipefail", "-c", archive, "git-archive", repo, git.tree, src]);
  });
}

async function materializeDir(path: string, work: string): Promise<void> {
  await inStep(`[kernel] copying ${path}`, () => run("cp -a", "cp", ["-a", `${path}/.`, join(work, "src")]));
}

/** VERSION.PATCHLEVEL.SUBLEVEL from a kernel tree's top-level Makefile, e.g. "6.12.95". */
export function kernelVersion(srcDir: string): KernelVersion {
  const where = join(srcDir, "Makefile");
  return makefileVersion(readFileSync(where, "utf8"), where);
}

export interface KernelVersion {
  major: number;
  minor: number;
  sublevel: number;
  text: string;
}

/** VERSION.PATCHLEVEL.SUBLEVEL from the text of a kernel's top-level Makefile (`where` it is, for errors). */
export function makefileVersion(makefile: string, where: string): KernelVersion {
  const field = (name: string) =>
    Number(new RegExp(`^${name}\\s*=\\s*(\\d+)`, "m").exec(makefile)?.[1] ?? Number.NaN);
  const major = field("VERSION");
  const minor = field("PATCHLEVEL");
  const sublevel = field("SUBLEVEL");
  if (Number.isNaN(major) || Number.isNaN(minor)) {
    throw new HilError("cannot read VERSION/PATCHLEVEL from the kernel Makefile", { where });
  }
  return {
    major,
    minor,
    sublevel: Number.isNaN(sublevel) ? 0 : sublevel,
    text: `${major}.${minor}.${sublevel || 0}`,
  };
}
