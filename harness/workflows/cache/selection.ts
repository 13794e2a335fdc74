/**
 * The cache entries a run needs, found by the keys the builders compute (nothing is built,
 * fetched or locked): the QEMU build, each kernel with the source tree its record names, the
 * guest image's layers and initramfs, the in-kernel executor module, and the apt package lists
 * the Debian keys are computed from. `hil cache export` carries them to other machines.
 */
import { join, relative } from "node:path";
import { BUILD_KIND as QEMU_BUILD_KIND, qemuBuildKey } from "../../../qemu/provision/build.ts";
import { QEMU_SOURCE } from "../../../qemu/provision/source.ts";
import { type AptContext, type AptContextName, cachedAptContext, packageUri } from "../../../util/apt.ts";
import { cachePath, cacheRoot, isComplete } from "../../../util/cache.ts";
import type { DependenciesOf } from "../../../util/cache-prune.ts";
import { APT_KIND, type TransferEntry } from "../../../util/cache-transfer.ts";
import { HilError } from "../../../util/errors.ts";
import { shortKey } from "../../../util/hash.ts";
import { GUEST_TOOLS_KIND, guestToolsKey } from "../../image/guest-tools.ts";
import { INITRAMFS_KIND, initramfsKey } from "../../image/initramfs.ts";
import { guestModuleKind } from "../../image/kmod.ts";
import { KVERBS_MODULE, kverbsModuleKey } from "../../image/kverbs-module.ts";
import { MODULES_LAYER_KIND, modulesLayerKey } from "../../image/modules.ts";
import { USERSPACE_SUITE } from "../../image/recipe.ts";
import { resolveUserspace, USERSPACE_KIND } from "../../image/userspace.ts";
import { readArtifactRecord } from "../../kernel/artifact-record.ts";
import { type BaseIdentity, baseKey, debianBaseIdentity } from "../../kernel/base-source.ts";
import { type BaseSpec, describeBase, parseBaseSpec } from "../../kernel/base-spec.ts";
import { KERNEL_CACHE_KIND, kernelKeyFor } from "../../kernel/build.ts";
import type { KernelRequest } from "../../kernel/types.ts";
import type { ExecutorKind } from "../../scenario/schema.ts";

/** What one run boots: a kernel and the executor that runs the scenarios in it. */
export interface RunNeeds {
  kernel: KernelRequest;
  executor: ExecutorKind;
}

export interface Selection {
  entries: TransferEntry[];
  /** what could not be exported, and why (a QEMU this cache did not build) */
  notes: string[];
}

/** A suite's package lists as the last update left them; never updated here. */
function listsOf(suite: AptContextName): AptContext {
  const ctx = cachedAptContext(suite);
  if (!ctx)
    throw new HilError(`the cache holds no package lists of Debian ${suite}`, {
      where: join(cacheRoot(), APT_KIND, suite),
      detail: "a hil run (or hil setup) fetches them; run one here first, then export",
    });
  return ctx;
}

async function identityOf(spec: BaseSpec): Promise<BaseIdentity> {
  if (spec.kind === "debian") return debianBaseIdentity(await packageUri(listsOf(spec.suite), spec.package));
  return { key: await baseKey(spec) };
}

function describeKernel(req: KernelRequest): string {
  return [
    describeBase(parseBaseSpec(req.base)),
    req.series ? `+ ${req.series}` : undefined,
    req.configs.length > 0 ? `+ config ${req.configs.join(", ")}` : undefined,
  ]
    .filter(Boolean)
    .join(" ");
}

/** The entry holding the source tree a kernel entry's record names (kernel-base or kernel-patched). */
async function sourceEntryOf(kernelDir: string, what: string): Promise<TransferEntry> {
  const artifact = await readArtifactRecord(kernelDir);
  const entry = relative(cacheRoot(), join(artifact.srcDir, ".."));
  const cut = entry.lastIndexOf("/");
  return { kind: entry.slice(0, cut), key: entry.slice(cut + 1), what: `kernel source of ${what}` };
}

/** What an entry needs to be used again, for hil cache prune: a kernel, the source tree its record names. */
export const entriesNeededBy: DependenciesOf = async (entry, dir) =>
  entry.kind === KERNEL_CACHE_KIND ? [await sourceEntryOf(dir, entry.what)] : [];

/**
 * The entries `needs` use, by their keys as the builders compute them. An entry that is not in
 * the cache is an error listing every such entry: an export without it would leave the shards
 * to build it.
 */
export async function selectEntries(needs: readonly RunNeeds[]): Promise<Selection> {
  const entries = new Map<string, TransferEntry>();
  const add = (e: TransferEntry) => entries.set(`${e.kind}/${e.key}`, e);
  const notes: string[] = [];

  const qemuKey = qemuBuildKey();
  if (isComplete(cachePath(QEMU_BUILD_KIND, qemuKey)))
    add({ kind: QEMU_BUILD_KIND, key: qemuKey, what: `QEMU ${QEMU_SOURCE.version} build` });
  else
    notes.push(
      `QEMU: this cache holds no build of QEMU ${QEMU_SOURCE.version} (qemu/${shortKey(qemuKey)}); a machine without a usable QEMU ($HIL_QEMU, PATH) builds one`,
    );

  const suites = new Set<AptContextName>([USERSPACE_SUITE]);
  const userspaceKey = (await resolveUserspace(listsOf(USERSPACE_SUITE))).key;
  const toolsKey = await guestToolsKey();
  add({ kind: USERSPACE_KIND, key: userspaceKey, what: "guest userspace" });
  add({ kind: GUEST_TOOLS_KIND, key: toolsKey, what: "guest tools" });

  const missing: TransferEntry[] = [];
  for (const need of needs) {
    const spec = parseBaseSpec(need.kernel.base);
    if (spec.kind === "debian") suites.add(spec.suite);
    const what = `kernel ${describeKernel(need.kernel)}`;
    const key = kernelKeyFor(need.kernel, await identityOf(spec));
    const kernel = { kind: KERNEL_CACHE_KIND, key, what };
    add(kernel);
    const dir = cachePath(KERNEL_CACHE_KIND, key);
    if (!isComplete(dir)) {
      missing.push(kernel);
      continue;
    }
    add(await sourceEntryOf(dir, what));
    const modules = modulesLayerKey(key);
    add({ kind: MODULES_LAYER_KIND, key: modules, what: `modules of ${what}` });
    add({
      kind: INITRAMFS_KIND,
      key: initramfsKey([userspaceKey, modules, toolsKey]),
      what: `initramfs of ${what}`,
    });
    if (need.executor === "kernel")
      add({
        kind: guestModuleKind(KVERBS_MODULE),
        key: await kverbsModuleKey({ key }),
        what: `${KVERBS_MODULE}.ko for ${what}`,
      });
  }
  for (const suite of suites) add({ kind: APT_KIND, key: suite, what: `package lists of Debian ${suite}` });

  for (const e of entries.values())
    if (e.kind !== APT_KIND && !missing.includes(e) && !isComplete(cachePath(e.kind, e.key))) missing.push(e);
  if (missing.length > 0)
    throw new HilError(
      `${missing.length} cache entr${missing.length === 1 ? "y" : "ies"} the selection needs ${missing.length === 1 ? "is" : "are"} not in the cache`,
      {
        where: cacheRoot(),
        detail: [
          ...missing.map((e) => `  ${e.kind}/${shortKey(e.key)}: ${e.what}`),
          "run the selection here once (hil run, hil matrix) so that it builds them, then export",
        ].join("\n"),
      },
    );
  return { entries: [...entries.values()], notes };
}
