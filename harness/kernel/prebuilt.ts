/**
 * A prebuilt kernel (`debian-image:X.Y`) made ready to boot: Debian's image, headers and kbuild
 * packages of the linux-source version `debian:X.Y` compiles, unpacked into one cache entry keyed
 * by the .deb files' sha256; the drivers Debian's config leaves out built out of tree against the
 * headers; the guest's modules picked and depmod'ed. The headers stay in the entry as the
 * artifact's source and build trees: hil_kverbs and the other guest modules build against them.
 */
import { existsSync } from "node:fs";
import { copyFile, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { aptContext, downloadPackages, ensureHostPackages, type PackageUri } from "../../util/apt.ts";
import { cachePath, ensureEntry, findIntactEntry } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { hashFile, shortKey } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { readArtifactRecord, writeArtifactRecord } from "./artifact-record.ts";
import { BASE_CACHE_KIND, debianBaseIdentity } from "./base-source.ts";
import { bzImageProblem } from "./bzimage.ts";
import { type Fragment, parseDotConfig, readFragment, resolveFragmentPath } from "./kconfig.ts";
import { baseConfigValue, checkFragmentsMet, prebuiltBootArgs } from "./prebuilt-config.ts";
import { driversToBuild, type OutOfTreeDriver } from "./prebuilt-modules.ts";
import { buildOutOfTree, type HeadersTree } from "./prebuilt-oot.ts";
import {
  type PrebuiltPackages,
  packageList,
  packageName,
  prebuiltKey,
  resolvePrebuiltPackages,
} from "./prebuilt-packages.ts";
import { type PrebuiltSpec, parsePrebuiltSpec } from "./prebuilt-spec.ts";
import { writeGuestModules } from "./prebuilt-tree.ts";
import { inStep } from "./step.ts";
import type { KernelArtifact, KernelRequest } from "./types.ts";

/** Bump when the steps change in a way that changes the entry. */
export const PREBUILT_RECIPE = "kernel-prebuilt-2";

export const PREBUILT_CACHE_KIND = "kernel-image";

/** What the out-of-tree build and the module tree need on the host. */
const HOST_PACKAGES = ["build-essential", "bc", "libelf-dev", "libssl-dev", "kmod", "xz-utils", "dpkg-dev"];

/** The packages.json of an entry: what it was made from. */
const PACKAGES_FILE = "packages.json";

function fragmentsOf(req: KernelRequest): Fragment[] {
  return req.configs.map((c) => readFragment(resolveFragmentPath(c), c));
}

/** Throws what ensurePrebuiltKernel would for a malformed request, without fetching anything. */
export function checkPrebuiltRequest(req: KernelRequest): PrebuiltSpec {
  const spec = parsePrebuiltSpec(req.base);
  if (req.series)
    throw new HilError(`${spec.name} is Debian's built kernel: a patch series cannot be applied to it`, {
      detail: `to test a series, compile the kernel: --kernel ${spec.sourceBase} --series ${req.series}`,
    });
  fragmentsOf(req);
  return spec;
}

function describe(spec: PrebuiltSpec, req: KernelRequest): string {
  return [spec.name, req.configs.length > 0 ? `+ config ${req.configs.join(", ")}` : undefined]
    .filter(Boolean)
    .join(" ");
}

/** Downloads the packages into `dir` and checks each against the sha256 its key was made of. */
async function fetchPackages(
  spec: PrebuiltSpec,
  pkgs: PrebuiltPackages,
  dir: string,
): Promise<Map<string, string>> {
  const ctx = await aptContext(spec.suite);
  const list = packageList(pkgs);
  const paths = await downloadPackages(ctx, list.map(packageName), dir);
  const byName = new Map<string, string>();
  for (const [i, uri] of list.entries()) {
    const path = paths[i];
    if (!path || (await hashFile(path)) !== uri.sha256)
      throw new HilError(
        `${uri.filename} changed on the mirror while it was being fetched; run the command again`,
        {
          detail: `expected sha256 ${uri.sha256}`,
        },
      );
    byName.set(packageName(uri), path);
  }
  return byName;
}

async function unpack(debs: readonly string[], into: string, what: string): Promise<void> {
  await inStep(`[kernel] unpacking ${what}`, async () => {
    await makeDir(into);
    for (const deb of debs) await run(`dpkg-deb -x ${basename(deb)}`, "dpkg-deb", ["-x", deb, into]);
  });
}

/**
 * A tree holding the drivers' directories: the debian:X.Y base's tree when the cache has it (the
 * same linux-source .deb), else just those directories extracted from the package's tarball.
 */
async function driverSources(
  source: PackageUri,
  deb: string,
  drivers: readonly OutOfTreeDriver[],
  work: string,
): Promise<string> {
  const base = cachePath(BASE_CACHE_KIND, debianBaseIdentity(source).key);
  if (await findIntactEntry(base)) {
    progress.info(
      `[kernel] driver sources from the cached tree of ${source.filename} (${shortKey(basename(base))})`,
    );
    return join(base, "src");
  }
  const root = join(work, "deb");
  await unpack([deb], root, source.filename);
  const usrSrc = join(root, "usr", "src");
  const tarball = (await readdir(usrSrc)).find((n) => /^linux-source-.*\.tar\.xz$/.test(n));
  if (!tarball) throw new HilError(`${source.filename} holds no /usr/src/linux-source-*.tar.xz`);
  const top = tarball.replace(/\.tar\.xz$/, "");
  const tree = join(work, "src");
  await makeDir(tree);
  const dirs = [...new Set(drivers.flatMap((d) => [d.dir, ...(d.includes ?? [])]))];
  await inStep(`[kernel] extracting ${dirs.length} driver directories from ${tarball}`, () =>
    run("tar -x (driver sources)", "tar", [
      "-I",
      "xz -T0",
      "-xf",
      join(usrSrc, tarball),
      "-C",
      tree,
      "--strip-components=1",
      ...dirs.map((d) => `${top}/${d}`),
    ]),
  );
  await rm(root, { recursive: true, force: true });
  return tree;
}

/** The one file of `dir` whose name starts with `prefix`. */
async function onlyFile(dir: string, prefix: string, what: string): Promise<string> {
  const names = (await readdir(dir)).filter((n) => n.startsWith(prefix));
  if (names.length !== 1 || !names[0])
    throw new HilError(`expected one ${prefix}* in ${what}, found ${names.length}`, { where: dir });
  return join(dir, names[0]);
}

async function makeEntry(
  work: string,
  spec: PrebuiltSpec,
  pkgs: PrebuiltPackages,
  key: string,
): Promise<void> {
  await ensureHostPackages(HOST_PACKAGES);
  const scratch = join(work, "scratch");
  const debs = await fetchPackages(spec, pkgs, join(scratch, "download"));
  const deb = (u: PackageUri) => debs.get(packageName(u)) as string;

  const image = join(scratch, "image");
  await unpack([deb(pkgs.image)], image, pkgs.image.filename);
  const vmlinuz = await onlyFile(join(image, "boot"), "vmlinuz-", pkgs.image.filename);
  const release = basename(vmlinuz).slice("vmlinuz-".length);
  const bzImage = join(work, "bzImage");
  const config = join(work, "config");
  await copyFile(vmlinuz, bzImage);
  await copyFile(join(image, "boot", `config-${release}`), config);
  const imageConfig = parseDotConfig(await readFile(config, "utf8"));

  const headersRoot = join(work, "headers");
  await unpack(
    [deb(pkgs.headers), deb(pkgs.common), deb(pkgs.kbuild)],
    headersRoot,
    "the headers and kbuild",
  );
  const usrSrc = join(headersRoot, "usr", "src");
  const tree: HeadersTree = {
    srcDir: join(usrSrc, packageName(pkgs.common)),
    buildDir: join(usrSrc, packageName(pkgs.headers)),
  };
  for (const dir of [tree.srcDir, tree.buildDir])
    if (!existsSync(join(dir, "Makefile")))
      throw new HilError(`the headers tree has no Makefile`, { where: dir });
  // the headers' vmlinux is there for module BTF (Makefile.modfinal, which skips BTF without it):
  // it needs pahole, and the guest has no use for BTF (CONFIG_MODULE_ALLOW_BTF_MISMATCH=y anyway)
  await rm(join(tree.buildDir, "vmlinux"), { force: true });

  const drivers = driversToBuild(imageConfig);
  const built =
    drivers.length === 0
      ? []
      : await buildOutOfTree(
          tree,
          await driverSources(pkgs.source, deb(pkgs.source), drivers, join(scratch, "drivers")),
          drivers,
          join(scratch, "oot"),
          join(work, "drivers-build.log"),
          release,
        );
  const imageModules = join(image, "lib", "modules", release);
  const modulesRoot = join(work, "modules");
  await writeGuestModules(imageModules, built, modulesRoot, release);
  await rm(scratch, { recursive: true, force: true });

  await writeFile(
    join(work, PACKAGES_FILE),
    `${JSON.stringify({ image: spec.name, debianVersion: pkgs.debianVersion, packages: packageList(pkgs), outOfTree: drivers.map((d) => d.dir) }, null, 2)}\n`,
  );
  const artifact: KernelArtifact = {
    key,
    dir: work,
    bzImage,
    modulesRoot,
    release,
    buildDir: tree.buildDir,
    srcDir: tree.srcDir,
    // the trees as Debian installs them, which their own files name (the -<flavour> Makefile's include)
    kbuildNames: {
      srcDir: `/usr/src/${packageName(pkgs.common)}`,
      buildDir: `/usr/src/${packageName(pkgs.headers)}`,
    },
    config,
    describe: spec.name,
    version: release.split(/[+-]/)[0] ?? release,
    debianVersion: pkgs.debianVersion,
    patches: [],
  };
  await writeArtifactRecord(work, artifact);
}

/** The identity of the image `req` names as the mirror offers it now: its packages and key. */
export async function prebuiltIdentity(spec: PrebuiltSpec): Promise<{ pkgs: PrebuiltPackages; key: string }> {
  const pkgs = await resolvePrebuiltPackages(await aptContext(spec.suite), spec);
  return { pkgs, key: prebuiltKey(PREBUILT_RECIPE, pkgs) };
}

/** The prebuilt kernel `req` names, made ready (or found in the cache), with the boot arguments it needs. */
export async function ensurePrebuiltKernel(
  req: KernelRequest,
  baseConfigPath: string,
): Promise<KernelArtifact> {
  const spec = checkPrebuiltRequest(req);
  const fragments = fragmentsOf(req);
  const { pkgs, key } = await prebuiltIdentity(spec);
  const what = `kernel ${spec.name} (Debian ${pkgs.debianVersion})`;
  const { dir, built } = await ensureEntry(
    PREBUILT_CACHE_KIND,
    key,
    { what, bulk: ["headers"], validate: (d) => bzImageProblem(join(d, "bzImage")) },
    (work) => makeEntry(work, spec, pkgs, key),
  );
  const artifact = await readArtifactRecord(dir);
  const imageConfig = parseDotConfig(await readFile(artifact.config, "utf8"));
  checkFragmentsMet(
    spec.name,
    `config-${artifact.release}`,
    fragments,
    imageConfig,
    driversToBuild(imageConfig),
    spec.sourceBase,
  );
  if (!built) progress.info(`[kernel] ${what}: cached (${shortKey(key)})`);
  return {
    ...artifact,
    describe: describe(spec, req),
    bootArgs: prebuiltBootArgs({
      userFragments: fragments,
      hungTaskTimeoutSecs: baseConfigValue(baseConfigPath, "DEFAULT_HUNG_TASK_TIMEOUT"),
    }),
  };
}
