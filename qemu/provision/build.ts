import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cachePath, ensureEntry, findIntactEntry, sweepStale } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { hashParts } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress, type Step } from "../../util/progress.ts";
import type { QemuInstall } from "../launch/types.ts";
import { hostFirmwareDirs } from "./firmware.ts";
import { inspectQemu } from "./inspect.ts";
import { type BuiltQemuManifest, readManifest, writeManifest } from "./manifest.ts";
import { parseNinjaProgress } from "./ninja-progress.ts";
import { ensureQemuBuildPackages } from "./packages.ts";
import { qemuShortcomings } from "./requirements.ts";
import { ensureQemuSourceTarball, QEMU_SOURCE, qemuSourceUrl } from "./source.ts";

/** Bump when the way the entry is built changes in a way the flags and fixups do not show. */
export const QEMU_RECIPE = "qemu-build-1";

export const QEMU_CONFIGURE_FLAGS = [
  "--target-list=x86_64-softmmu",
  // every optional library off unless named below: no GUI, audio, block drivers, tools, docs
  "--without-default-features",
  "--enable-slirp", // -netdev user with hostfwd, how the harness reaches the guest's SSH
  "--enable-kvm", // the launcher probes KVM and falls back to TCG
  "--enable-pixman", // display devices, should a user boot with a VGA
  "--disable-docs",
  "--disable-install-blobs", // the +ds tarball has no firmware; it comes from Debian packages via -L
  "--disable-debug-info",
  "--disable-download", // offline: no git submodules or Python wheels fetched
] as const;

/**
 * Edits to the unpacked source. meson.build unpacks edk2 firmware whenever bzip2 exists, but Debian's
 * +ds tarball has had the edk2 blobs removed, so configure fails on the missing .bz2 files.
 */
export const QEMU_SOURCE_FIXUPS = [
  { file: "meson.build", find: "unpack_edk2_blobs = bzip2.found()", replace: "unpack_edk2_blobs = false" },
] as const;

/**
 * configure must run meson under Debian's python, whose site-packages hold the meson and pycotap
 * packages; a python earlier on PATH (e.g. pyenv's) has neither.
 */
const SYSTEM_PYTHON = "/usr/bin/python3";
const BINARY_IN_ENTRY = "prefix/bin/qemu-system-x86_64";
export const BUILD_KIND = "qemu";

export function qemuBuildKey(): string {
  return hashParts([
    QEMU_RECIPE,
    QEMU_SOURCE.sha256,
    ...QEMU_CONFIGURE_FLAGS,
    ...QEMU_SOURCE_FIXUPS.flatMap((f) => [f.file, f.find, f.replace]),
  ]);
}

async function stage<T>(label: string, fn: (step: Step) => Promise<T>): Promise<T> {
  const step = progress.step(`[qemu] ${label}`);
  try {
    const result = await fn(step);
    step.succeed();
    return result;
  } catch (err) {
    step.fail();
    throw err;
  }
}

export async function applySourceFixups(srcDir: string): Promise<void> {
  for (const fix of QEMU_SOURCE_FIXUPS) {
    const path = join(srcDir, fix.file);
    const text = await readFile(path, "utf8");
    const parts = text.split(fix.find);
    if (parts.length !== 2) {
      throw new HilError(`the QEMU source does not match the build recipe: expected "${fix.find}" once`, {
        where: path,
      });
    }
    await writeFile(path, parts.join(fix.replace));
  }
}

async function buildInto(entryDir: string): Promise<BuiltQemuManifest> {
  const started = Date.now();
  await ensureQemuBuildPackages();
  const tarball = await ensureQemuSourceTarball();
  const src = join(entryDir, "src");
  const build = join(src, "build");
  const prefix = join(entryDir, "prefix");
  await makeDir(build);

  await stage(`unpacking QEMU ${QEMU_SOURCE.version}`, async () => {
    await run("unpack QEMU source", "tar", ["-xJf", tarball, "-C", src, "--strip-components=1"]);
    await applySourceFixups(src);
  });
  const configureFlags = [`--python=${SYSTEM_PYTHON}`, `--prefix=${prefix}`, ...QEMU_CONFIGURE_FLAGS];
  await stage("configuring", () =>
    run("QEMU configure", join(src, "configure"), configureFlags, { cwd: build }),
  );
  await stage("compiling", (step) =>
    run("QEMU build", "ninja", ["-C", build], {
      env: { ...process.env, NINJA_STATUS: "[%f/%t] " },
      onLine: (line) => {
        const p = parseNinjaProgress(line);
        if (p) step.update(p.done, p.total);
      },
    }),
  );
  await stage("installing", () => run("QEMU install", "ninja", ["-C", build, "install"]));
  await rm(src, { recursive: true, force: true });

  const binary = join(entryDir, BINARY_IN_ENTRY);
  const caps = await inspectQemu(binary);
  const shortcomings = qemuShortcomings(caps);
  if (shortcomings.length > 0) {
    throw new HilError(`the QEMU just built is not usable: ${shortcomings.join("; ")}`, { where: binary });
  }
  const manifest: BuiltQemuManifest = {
    recipe: QEMU_RECIPE,
    origin: "built",
    version: caps.version,
    binary: BINARY_IN_ENTRY,
    source: { url: qemuSourceUrl(), sha256: QEMU_SOURCE.sha256, debianVersion: QEMU_SOURCE.debianVersion },
    configureFlags: [...QEMU_CONFIGURE_FLAGS],
    builtAt: new Date().toISOString(),
    buildSeconds: Math.round((Date.now() - started) / 1000),
  };
  await writeManifest(entryDir, manifest);
  return manifest;
}

/** The QEMU an earlier build left in the cache, without building or locking anything; undefined if none. */
export async function findBuiltQemu(): Promise<QemuInstall | undefined> {
  const dir = cachePath(BUILD_KIND, qemuBuildKey());
  if (!(await findIntactEntry(dir))) return undefined;
  const manifest = await readManifest(dir);
  return {
    binary: join(dir, manifest.binary),
    version: manifest.version,
    origin: "built",
    firmwareDirs: hostFirmwareDirs(),
  };
}

/** QEMU built from Debian's pinned source into the cache (or found there from an earlier build). */
export async function ensureBuiltQemu(): Promise<QemuInstall> {
  await sweepStale(BUILD_KIND);
  const { dir } = await ensureEntry(
    BUILD_KIND,
    qemuBuildKey(),
    { what: `QEMU ${QEMU_SOURCE.version} build` },
    async (work) => {
      await buildInto(work);
    },
  );
  const manifest = await readManifest(dir);
  const binary = join(dir, manifest.binary);
  if (!existsSync(binary)) {
    throw new HilError("the cached QEMU build has no binary; remove the cache entry to rebuild", {
      where: dir,
    });
  }
  return { binary, version: manifest.version, origin: "built", firmwareDirs: hostFirmwareDirs() };
}
