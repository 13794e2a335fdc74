/**
 * The versions hil works with (`hil --version`): its own, and those of the QEMU, the default
 * kernel and the guest image's rdma-core it would use, each found without building, fetching,
 * installing or locking anything: a part not in place yet is reported as such, with what makes
 * it. And the versions a run used, as verdicts.json records them.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { QemuInstall } from "../qemu/launch/types.ts";
import { findQemu } from "../qemu/provision/qemu.ts";
import { QEMU_SOURCE } from "../qemu/provision/source.ts";
import {
  type AptContextName,
  cachedAptContext,
  debFileVersion,
  type PackageUri,
  packageUri,
} from "../util/apt.ts";
import { HilError } from "../util/errors.ts";
import { packageVersion } from "../util/package.ts";
import type { PreparedGuest } from "./boot.ts";
import { DEFAULT_KERNEL } from "./defaults.ts";
import { debStore } from "./image/debs.ts";
import { RDMA_CORE_PACKAGE, USERSPACE_SUITE } from "./image/recipe.ts";
import { type BaseIdentity, debianBaseIdentity } from "./kernel/base-source.ts";
import { parseBaseSpec } from "./kernel/base-spec.ts";
import { findCachedKernel } from "./kernel/build.ts";
import type { KernelArtifact, KernelRequest } from "./kernel/types.ts";
import type { RunVersions } from "./rundir/schema.ts";

/**
 * ready: in place now (found, built or fetched); not-built: a hil command builds or fetches it when
 * it needs it; unknown: it cannot be told without fetching, or what is there cannot be used.
 */
export type PartState = "ready" | "not-built" | "unknown";

export interface PartVersion {
  state: PartState;
  /** the version it has, or would have once built (absent when that cannot be told offline) */
  version?: string;
  /** where it is or comes from, or what makes it */
  note: string;
}

export interface HilVersions {
  hil: string;
  qemu: PartVersion;
  /** the default kernel: its spec, the Debian package version, the release of its build */
  kernel: PartVersion & { spec: string; release?: string };
  /** the rdma-core of the guest image (Debian's package version) */
  rdmaCore: PartVersion;
}

/** Where each answer comes from: the real ones below, stand-ins in tests. */
export interface VersionSources {
  /** the QEMU hil would use when it needs no build (an error for an unusable $HIL_QEMU) */
  findQemu: () => Promise<QemuInstall | undefined>;
  /** a package's .deb in a suite's package lists as last fetched; undefined when never fetched */
  debianPackage: (suite: AptContextName, pkg: string) => Promise<PackageUri | undefined>;
  /** the cached build of a kernel request, if any */
  findKernel: (req: KernelRequest, base: BaseIdentity) => Promise<KernelArtifact | undefined>;
  /** whether a guest package's .deb has been fetched into the guest image's package store */
  debFetched: (suite: AptContextName, uri: PackageUri) => boolean;
}

export const CACHED_SOURCES: VersionSources = {
  findQemu: () => findQemu(),
  debianPackage: async (suite, pkg) => {
    const ctx = cachedAptContext(suite);
    return ctx ? packageUri(ctx, pkg) : undefined;
  },
  findKernel: findCachedKernel,
  debFetched: (suite, uri) => {
    const ctx = cachedAptContext(suite);
    return ctx !== undefined && existsSync(join(debStore(ctx), uri.filename));
  },
};

function failure(err: unknown): PartVersion {
  return { state: "unknown", note: err instanceof HilError ? err.message : String(err) };
}

function listsMissing(suite: AptContextName, fetchedBy: string): string {
  return `the Debian ${suite} package lists are not fetched yet (${fetchedBy} fetches them)`;
}

async function qemuVersion(sources: VersionSources): Promise<PartVersion> {
  try {
    const qemu = await sources.findQemu();
    if (!qemu)
      return {
        state: "not-built",
        version: QEMU_SOURCE.version,
        note: `not built (hil setup builds it from Debian's qemu ${QEMU_SOURCE.debianVersion})`,
      };
    const where = { HIL_QEMU: "named by $HIL_QEMU", PATH: "on PATH", built: "built into the cache" }[
      qemu.origin
    ];
    return { state: "ready", version: qemu.version, note: `${where} at ${qemu.binary}` };
  } catch (err) {
    return failure(err);
  }
}

async function kernelVersion(sources: VersionSources): Promise<HilVersions["kernel"]> {
  const spec = DEFAULT_KERNEL;
  try {
    const base = parseBaseSpec(spec);
    if (base.kind !== "debian") return { spec, state: "unknown", note: "not a Debian base" };
    const uri = await sources.debianPackage(base.suite, base.package);
    if (!uri)
      return { spec, state: "unknown", note: `${base.package}: ${listsMissing(base.suite, "hil setup")}` };
    const identity = debianBaseIdentity(uri);
    const version = identity.debianVersion;
    const built = await sources.findKernel({ base: spec, configs: [] }, identity);
    return built
      ? {
          spec,
          state: "ready",
          version,
          release: built.release,
          note: `${base.package}, built, release ${built.release}`,
        }
      : {
          spec,
          state: "not-built",
          version,
          note: `${base.package}, not built (the first hil run builds it)`,
        };
  } catch (err) {
    return { spec, ...failure(err) };
  }
}

async function rdmaCoreVersion(sources: VersionSources): Promise<PartVersion> {
  const suite = USERSPACE_SUITE;
  const from = `Debian ${suite}'s ${RDMA_CORE_PACKAGE}`;
  try {
    const uri = await sources.debianPackage(suite, RDMA_CORE_PACKAGE);
    if (!uri) return { state: "unknown", note: `${from}: ${listsMissing(suite, "the first hil run")}` };
    const version = debFileVersion(uri.filename);
    return sources.debFetched(suite, uri)
      ? { state: "ready", ...(version ? { version } : {}), note: `${from}, in the guest image` }
      : {
          state: "not-built",
          ...(version ? { version } : {}),
          note: `${from}, not fetched (the first hil run puts it in the guest image)`,
        };
  } catch (err) {
    return failure(err);
  }
}

/** hil's version and what it would use now; builds, fetches and installs nothing. */
export async function gatherVersions(sources: VersionSources = CACHED_SOURCES): Promise<HilVersions> {
  const [qemu, kernel, rdmaCore] = await Promise.all([
    qemuVersion(sources),
    kernelVersion(sources),
    rdmaCoreVersion(sources),
  ]);
  return { hil: packageVersion(), qemu, kernel, rdmaCore };
}

function partLine(name: string, part: PartVersion): string {
  return part.version ? `${name} ${part.version}: ${part.note}` : `${name}: version unknown, ${part.note}`;
}

/** `hil --version`: hil's own version alone on the first line, then a line per part. */
export function formatVersions(v: HilVersions): string {
  return [
    `hil ${v.hil}`,
    partLine("qemu", v.qemu),
    partLine(`kernel ${v.kernel.spec}`, v.kernel),
    partLine("rdma-core", v.rdmaCore),
  ]
    .map((l) => `${l}\n`)
    .join("");
}

/** What verdicts.json records of a run on `prepared`: hil's version, and QEMU's, the kernel's and rdma-core's. */
export function runVersions(prepared: PreparedGuest, kernelSpec: string): RunVersions {
  const { kernel } = prepared;
  return {
    hil: packageVersion(),
    qemu: prepared.qemu.version,
    kernel: {
      spec: kernelSpec,
      release: kernel.release,
      ...(kernel.debianVersion ? { debianVersion: kernel.debianVersion } : {}),
      ...(kernel.git ? { git: { ...kernel.git } } : {}),
    },
    ...(prepared.rdmaCore ? { rdmaCore: prepared.rdmaCore } : {}),
  };
}
