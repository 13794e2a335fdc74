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
export const QEMU_RECIPE = "qemu-build-2";

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
  // only the devices switched on in QEMU_DEVICES (a Kconfig `select` still pulls in what they need)
  "--without-default-devices",
] as const;

/**
 * The device models built, as Kconfig symbols (QEMU 10.2.2's hw/ Kconfig files; docs/devel/kconfig.rst
 * on --without-default-devices: everything defaults to n unless selected or switched on in the .mak).
 */
export const QEMU_DEVICES = [
  "Q35", // -machine q35
  "VIRTIO_PCI", // virtio-net-pci: the SSH NIC and the fabric NIC
  "VIRTIO_NET",
  "VFIO_PCI", // vfio-pci, a host device passed through; VFIO_USER depends on it
  "VFIO_USER", // vfio-user-pci: the devices under test
  "SERIAL_ISA", // the console
  "ISA_DEBUG", // isa-debugcon: the firmware's log, should a boot need reading
] as const;

/** What QEMU builds and installs: the emulator and its trace events, none of the tests. */
const QEMU_TARGETS = ["qemu-system-x86_64", "trace/trace-events-all"] as const;

/**
 * Edits to the unpacked source. meson.build unpacks edk2 firmware whenever bzip2 exists, but Debian's
 * +ds tarball has had the edk2 blobs removed, so configure fails on the missing .bz2 files. The x86
 * devices file (x86_64's includes i386's) switches on QEMU_DEVICES; a stub missing from the CXL
 * stubs is added.
 */
export const QEMU_SOURCE_FIXUPS = [
  { file: "meson.build", find: "unpack_edk2_blobs = bzip2.found()", replace: "unpack_edk2_blobs = false" },
  {
    file: "configs/devices/i386-softmmu/default.mak",
    find: "# Boards are selected by default",
    replace: `${QEMU_DEVICES.map((d) => `CONFIG_${d}=y`).join("\n")}\n# Boards are selected by default`,
  },
  // q35's ACPI selects ACPI_CXL, whose hw/acpi/cxl.c calls cxl_fmws_get_all_sorted; without CXL the
  // stubs stand in for hw/cxl, and 10.2.2's lack that one, so the link fails. Only a machine with
  // CXL enabled reaches the call. (Switching CXL on instead pulls in PXB, CXL_MEM_DEVICE and the
  // PCIe root ports its devices derive from.)
  {
    file: "hw/cxl/cxl-host-stubs.c",
    find: "void cxl_fmws_update_mmio(void) {};",
    replace: "void cxl_fmws_update_mmio(void) {};\nGSList *cxl_fmws_get_all_sorted(void) { return NULL; }",
  },
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
    run("QEMU build", "ninja", ["-C", build, ...QEMU_TARGETS], {
      env: { ...process.env, NINJA_STATUS: "[%f/%t] " },
      onLine: (line) => {
        const p = parseNinjaProgress(line);
        if (p) step.update(p.done, p.total);
      },
    }),
  );
  // `ninja install` would first build everything, the tests included; meson's own runner (the one
  // configure put in build/pyvenv) installs what was built
  await stage("installing", () =>
    run("QEMU install", join(build, "pyvenv", "bin", "meson"), [
      "install",
      "-C",
      build,
      "--no-rebuild",
      "--quiet",
    ]),
  );
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
