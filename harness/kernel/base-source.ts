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
import { run } from "../../util/exec.ts";
import { hashFile, hashParts } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { type BaseSpec, describeBase } from "./base-spec.ts";
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

/** A base's content key and, for a Debian base, the version of the package it names. */
export interface BaseIdentity {
  key: string;
  /** a debian: base's linux-source package version, e.g. "6.12.95-1~bpo12+1" */
  debianVersion?: string;
}

/** The content key of a Debian base: the .deb apt names for it, by file name and sha256. */
export function debianBaseIdentity(uri: PackageUri): BaseIdentity {
  const debianVersion = debFileVersion(uri.filename);
  return {
    key: hashParts(["debian-deb", uri.filename, uri.sha256]),
    ...(debianVersion ? { debianVersion } : {}),
  };
}

/** A base's identity (key, Debian version), computed without fetching or unpacking it. */
export async function baseIdentity(spec: BaseSpec): Promise<BaseIdentity> {
  if (spec.kind === "debian")
    return debianBaseIdentity(await packageUri(await aptContext(spec.suite), spec.package));
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
    case "dir":
      return hashParts(["dir", await hashTree(spec.path)]);
    case "tarball":
      return hashParts(["tarball", await hashFile(spec.path)]);
  }
}

async function gitDiffAgainstHead(repo: string): Promise<string> {
  return (await run("git diff", "git", ["-C", repo, "diff", "HEAD", "--binary"])).stdout;
}

/** Returns the cached pristine tree of `spec`, fetching and unpacking it the first time. */
export async function ensureBaseTree(spec: BaseSpec, key?: string): Promise<BaseTree> {
  const k = key ?? (await baseKey(spec));
  const what = `kernel source ${describeBase(spec)}`;
  // about 86000 files, 1.4 GB: listed by size, not hashed (reading it would cost seconds)
  const { dir } = await ensureEntry(BASE_CACHE_KIND, k, { what, bulk: ["src"] }, async (work) => {
    await materialize(spec, work);
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

async function materialize(spec: BaseSpec, work: string): Promise<void> {
  switch (spec.kind) {
    case "debian":
      return materializeDebian(spec.suite, spec.package, work);
    case "git":
      return materializeGit(spec.path, work);
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

async function materializeDir(path: string, work: string): Promise<void> {
  await inStep(`[kernel] copying ${path}`, () => run("cp -a", "cp", ["-a", `${path}/.`, join(work, "src")]));
}

/** VERSION.PATCHLEVEL.SUBLEVEL from a kernel tree's top-level Makefile, e.g. "6.12.95". */
export function kernelVersion(srcDir: string): {
  major: number;
  minor: number;
  sublevel: number;
  text: string;
} {
  const makefile = readFileSync(join(srcDir, "Makefile"), "utf8");
  const field = (name: string) =>
    Number(new RegExp(`^${name}\\s*=\\s*(\\d+)`, "m").exec(makefile)?.[1] ?? Number.NaN);
  const major = field("VERSION");
  const minor = field("PATCHLEVEL");
  const sublevel = field("SUBLEVEL");
  if (Number.isNaN(major) || Number.isNaN(minor)) {
    throw new HilError("cannot read VERSION/PATCHLEVEL from the kernel Makefile", {
      where: join(srcDir, "Makefile"),
    });
  }
  return {
    major,
    minor,
    sublevel: Number.isNaN(sublevel) ? 0 : sublevel,
    text: `${major}.${minor}.${sublevel || 0}`,
  };
}
