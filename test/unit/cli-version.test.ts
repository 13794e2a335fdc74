// hil --version: hil's version and the QEMU, default kernel and rdma-core it would use, each part
// found without building or fetching anything and reported as not built (or unknown) when it is
// not in place; and the versions verdicts.json records, which older run directories lack.
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import t from "tap";
import type { PreparedGuest } from "../../harness/boot.ts";
import { registerReportCommand } from "../../harness/cli/report-command.ts";
import { debianBaseIdentity } from "../../harness/kernel/base-source.ts";
import {
  BASE_CONFIG_PATH,
  findCachedKernel,
  KERNEL_CACHE_KIND,
  kernelBuildKey,
} from "../../harness/kernel/build.ts";
import type { KernelArtifact, KernelRequest } from "../../harness/kernel/types.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import {
  CACHED_SOURCES,
  formatVersions,
  gatherVersions,
  runVersions,
  type VersionSources,
} from "../../harness/versions.ts";
import type { QemuInstall } from "../../qemu/launch/types.ts";
import { findQemu } from "../../qemu/provision/qemu.ts";
import { QEMU_SOURCE } from "../../qemu/provision/source.ts";
import { debFileVersion, type PackageUri } from "../../util/apt.ts";
import { HilError } from "../../util/errors.ts";
import { packageVersion } from "../../util/package.ts";
import { syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";
import { tempDir } from "../support/temp-dir.ts";

const PACKAGE_JSON_VERSION = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;
/** package.json's version with the code's identity as build metadata (util/package.ts) */
const PACKAGE_VERSION = packageVersion();

const KERNEL_DEB: PackageUri = {
  url: "http://deb.debian.org/debian/pool/main/l/linux/linux-source-6.12_6.12.95-1%7ebpo12%2b1_all.deb",
  filename: "linux-source-6.12_6.12.95-1~bpo12+1_all.deb",
  size: 152_599_636,
  sha256: "a".repeat(64),
};
const RDMA_DEB: PackageUri = {
  url: "http://deb.debian.org/debian/pool/main/r/rdma-core/ibverbs-providers_44.0-2_amd64.deb",
  filename: "ibverbs-providers_44.0-2_amd64.deb",
  size: 334_756,
  sha256: "b".repeat(64),
};
const BUILT_QEMU: QemuInstall = {
  binary: "/cache/qemu/k/prefix/bin/qemu-system-x86_64",
  version: "10.2.2",
  origin: "built",
  firmwareDirs: [],
};

/** Stand-ins: nothing fetched or built unless given. */
function sources(over: Partial<VersionSources> = {}): VersionSources {
  return {
    findQemu: async () => undefined,
    debianPackage: async () => undefined,
    findKernel: async () => undefined,
    debFetched: () => false,
    ...over,
  };
}

t.test("nothing built or fetched: each part says so and what makes it", async (t) => {
  const v = await gatherVersions(sources());
  t.equal(v.hil, PACKAGE_VERSION, "hil's own version is package.json's");
  t.same(v.qemu, {
    state: "not-built",
    version: QEMU_SOURCE.version,
    note: `not built (hil setup builds it from Debian's qemu ${QEMU_SOURCE.debianVersion})`,
  });
  t.equal(v.kernel.spec, "debian:6.12");
  t.equal(v.kernel.state, "unknown");
  t.equal(v.kernel.version, undefined, "no version is made up without the package lists");
  t.equal(v.rdmaCore.state, "unknown");
  t.same(formatVersions(v).split("\n"), [
    `hil ${PACKAGE_VERSION}`,
    `qemu ${QEMU_SOURCE.version}: not built (hil setup builds it from Debian's qemu ${QEMU_SOURCE.debianVersion})`,
    "kernel debian:6.12: version unknown, linux-source-6.12: the Debian bookworm-backports package lists are not fetched yet (hil setup fetches them)",
    "rdma-core: version unknown, Debian bookworm's ibverbs-providers: the Debian bookworm package lists are not fetched yet (the first hil run fetches them)",
    "",
  ]);
});

t.test("lists fetched, nothing built: the versions hil would use, not built", async (t) => {
  const asked: string[] = [];
  const v = await gatherVersions(
    sources({
      debianPackage: async (suite, pkg) => {
        asked.push(`${suite} ${pkg}`);
        return pkg === "linux-source-6.12" ? KERNEL_DEB : pkg === "ibverbs-providers" ? RDMA_DEB : undefined;
      },
    }),
  );
  t.same(asked.sort(), ["bookworm ibverbs-providers", "bookworm-backports linux-source-6.12"]);
  t.same(v.kernel, {
    spec: "debian:6.12",
    state: "not-built",
    version: "6.12.95-1~bpo12+1",
    note: "linux-source-6.12, not built (the first hil run builds it)",
  });
  t.same(v.rdmaCore, {
    state: "not-built",
    version: "44.0-2",
    note: "Debian bookworm's ibverbs-providers, not fetched (the first hil run puts it in the guest image)",
  });
  t.match(formatVersions(v), /^kernel debian:6\.12 6\.12\.95-1~bpo12\+1: linux-source-6\.12, not built/m);
});

t.test("everything in place: versions, where QEMU is, the kernel's release", async (t) => {
  let kernelAsked: { req: KernelRequest; key: string } | undefined;
  const v = await gatherVersions(
    sources({
      findQemu: async () => BUILT_QEMU,
      debianPackage: async (_suite, pkg) => (pkg === "linux-source-6.12" ? KERNEL_DEB : RDMA_DEB),
      findKernel: async (req, base) => {
        kernelAsked = { req, key: base.key };
        return { release: "6.12.95" } as KernelArtifact;
      },
      debFetched: (suite, uri) => suite === "bookworm" && uri === RDMA_DEB,
    }),
  );
  t.same(
    kernelAsked,
    { req: { base: "debian:6.12", configs: [] }, key: debianBaseIdentity(KERNEL_DEB).key },
    "the default kernel's build is looked up by the key of the .deb the lists name",
  );
  t.same(formatVersions(v).split("\n").slice(1, 4), [
    `qemu 10.2.2: built into the cache at ${BUILT_QEMU.binary}`,
    "kernel debian:6.12 6.12.95-1~bpo12+1: linux-source-6.12, built, release 6.12.95",
    "rdma-core 44.0-2: Debian bookworm's ibverbs-providers, in the guest image",
  ]);
  t.equal(v.kernel.release, "6.12.95");
});

t.test("a part that cannot be asked is unknown, with the reason; the others still answer", async (t) => {
  const v = await gatherVersions(
    sources({
      findQemu: async () => {
        throw new HilError("HIL_QEMU=/x cannot be used: it lacks the vfio-user-pci device");
      },
      debianPackage: async (_suite, pkg) => {
        if (pkg === "linux-source-6.12")
          throw new HilError("Debian package linux-source-6.12 is not available");
        return RDMA_DEB;
      },
    }),
  );
  t.same(v.qemu, { state: "unknown", note: "HIL_QEMU=/x cannot be used: it lacks the vfio-user-pci device" });
  t.same(v.kernel, {
    spec: "debian:6.12",
    state: "unknown",
    note: "Debian package linux-source-6.12 is not available",
  });
  t.equal(v.rdmaCore.version, "44.0-2");
  t.match(formatVersions(v), /^qemu: version unknown, HIL_QEMU=\/x cannot be used/m);
});

t.test("the real sources on an empty cache: not built, unknown, and nothing written", async (t) => {
  const cache = tempDir(t, "hil-version-cache-");
  const emptyPath = tempDir(t, "hil-version-path-");
  const saved = { cache: process.env.HIL_CACHE_DIR, path: process.env.PATH, qemu: process.env.HIL_QEMU };
  t.teardown(() => {
    for (const [name, value] of [
      ["HIL_CACHE_DIR", saved.cache],
      ["PATH", saved.path],
      ["HIL_QEMU", saved.qemu],
    ] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  });
  process.env.HIL_CACHE_DIR = cache;
  process.env.PATH = emptyPath; // no qemu-system-x86_64 on it
  delete process.env.HIL_QEMU;
  const v = await gatherVersions(CACHED_SOURCES);
  t.equal(v.qemu.state, "not-built");
  t.equal(v.kernel.state, "unknown");
  t.equal(v.rdmaCore.state, "unknown");
  t.same(readdirSync(cache), [], "no apt lists, cache entry or lock was made");
});

t.test("a QEMU named by HIL_QEMU is asked for its version", async (t) => {
  const dir = tempDir(t, "hil-version-qemu-");
  const binary = join(dir, "qemu-good");
  writeFileSync(
    binary,
    `#!/bin/sh\ncase "$1" in\n  --version) echo "QEMU emulator version 10.2.1 (fake)";;\n  -device) printf 'Network devices:\\nname "vfio-user-pci", bus PCI\\n';;\n  *) exit 1;;\nesac\n`,
  );
  chmodSync(binary, 0o755);
  const found = await findQemu({ HIL_QEMU: binary, PATH: "" });
  t.equal(found?.version, "10.2.1");
  const v = await gatherVersions(sources({ findQemu: () => findQemu({ HIL_QEMU: binary, PATH: "" }) }));
  t.same(v.qemu, { state: "ready", version: "10.2.1", note: `named by $HIL_QEMU at ${binary}` });
});

t.test("the default kernel's cached build is found by its build key, with the Debian version", async (t) => {
  const cache = tempDir(t, "hil-version-kernel-");
  const saved = process.env.HIL_CACHE_DIR;
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });
  process.env.HIL_CACHE_DIR = cache;
  const base = debianBaseIdentity(KERNEL_DEB);
  const req = { base: "debian:6.12", configs: [] };
  t.equal(await findCachedKernel(req, base), undefined, "nothing cached: undefined");
  const key = kernelBuildKey({
    baseKey: base.key,
    seriesKey: undefined,
    baseConfig: readFileSync(BASE_CONFIG_PATH),
    fragments: [],
  });
  const entry = join(cache, KERNEL_CACHE_KIND, key);
  mkdirSync(entry, { recursive: true });
  writeFileSync(
    join(entry, "artifact.json"),
    JSON.stringify({ key, release: "6.12.95", describe: "debian:6.12" }),
  );
  t.equal(await findCachedKernel(req, base), undefined, "an entry being built (not complete) is not a build");
  writeFileSync(join(entry, ".complete"), "now\n");
  const found = await findCachedKernel(req, base);
  t.equal(found?.release, "6.12.95");
  t.equal(found?.debianVersion, "6.12.95-1~bpo12+1", "older artifact files get the version from the plan");
  t.equal(
    await findCachedKernel({ ...req, configs: ["smp"] }, base),
    undefined,
    "another config is another build",
  );
});

t.test("a .deb's file name gives its version, epoch included", async (t) => {
  t.equal(debFileVersion("ibverbs-providers_44.0-2_amd64.deb"), "44.0-2");
  t.equal(debFileVersion("qemu-system-x86_1%3a10.2.2+ds-1_amd64.deb"), "1:10.2.2+ds-1");
  t.equal(debFileVersion("linux-source-6.12_6.12.95-1~bpo12+1_all.deb"), "6.12.95-1~bpo12+1");
  t.equal(debFileVersion("not-a-deb.tar.gz"), undefined);
});

t.test("verdicts.json: the run's versions; older records without them still read and report", async (t) => {
  const prepared = {
    qemu: BUILT_QEMU,
    kernel: { release: "6.12.95", debianVersion: "6.12.95-1~bpo12+1" } as KernelArtifact,
    initrd: "/x/initramfs.cpio.gz",
    rdmaCore: "44.0-2",
  } satisfies PreparedGuest;
  const versions = runVersions(prepared, "debian:6.12");
  t.same(versions, {
    hil: PACKAGE_VERSION,
    qemu: "10.2.2",
    kernel: { spec: "debian:6.12", release: "6.12.95", debianVersion: "6.12.95-1~bpo12+1" },
    rdmaCore: "44.0-2",
  });
  const withVersions = await writeRunDir({ ...syntheticRecord(), versions });
  t.same((await loadRunDir(withVersions)).record.versions, versions);
  const older = await writeRunDir(syntheticRecord());
  t.equal((await loadRunDir(older)).record.versions, undefined);
  for (const dir of [withVersions, older])
    for (const format of ["ktap", "junit", "kcidb"]) {
      const program = new Command("hil").exitOverride();
      registerReportCommand(program);
      const out = join(dir, `report.${format}`);
      await program.parseAsync(["node", "hil", "report", dir, "--format", format, "--out", out]);
      t.ok(readFileSync(out, "utf8").length > 0, `hil report --format ${format} reads it`);
    }
});

t.test("hil's version names the code it is: its git commit here, or a digest of its sources", async (t) => {
  const { execFileSync } = await import("node:child_process");
  const head = execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { encoding: "utf8" }).trim();
  t.equal(PACKAGE_VERSION.split("+")[0], PACKAGE_JSON_VERSION, "package.json's version first");
  t.match(PACKAGE_VERSION, new RegExp(`^\\d+\\.\\d+\\.\\d+\\+g${head}(\\.dirty)?$`));
});
