import { chmod, copyFile, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type AptContext, aptContext, debFileVersion } from "../../util/apt.ts";
import { ensureEntry } from "../../util/cache.ts";
import { run } from "../../util/exec.ts";
import { hashParts } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { resolvePackageClosure } from "./closure.ts";
import { type CpioEntry, walkTree, writeCpioGz } from "./cpio.ts";
import { fetchPackages, type ResolvedPackage, resolvePackages, unpackDeb } from "./debs.ts";
import { verifyElfClosure } from "./elf.ts";
import {
  DLOPENED_LIBRARIES,
  INIT_SCRIPT_PATH,
  LIBRARY_DIRS,
  PACKAGING_ONLY,
  PRUNED_PATHS,
  RDMA_CORE_PACKAGE,
  RECIPE_VERSION,
  ROOT_PACKAGES,
  SKELETON_DIRS,
  USERSPACE_SUITE,
} from "./recipe.ts";
import { removeUnusedLibraries } from "./unused-libraries.ts";

export interface ImageLayer {
  /** a gzip-compressed newc archive */
  path: string;
  key: string;
}

/** The userspace layer and the rdma-core version it carries (Debian's, e.g. "44.0-2"). */
export type UserspaceLayer = ImageLayer & { rdmaCore: string | undefined };

export const USERSPACE_ARCHIVE = "userspace.cpio.gz";

/** The kernel opens /dev/console for init before anything is mounted, so the archive carries it. */
const DEVICE_NODES: CpioEntry[] = [
  { kind: "chardev", path: "dev/console", mode: 0o600, major: 5, minor: 1 },
  { kind: "chardev", path: "dev/null", mode: 0o666, major: 1, minor: 3 },
];

/** The recipe's own choices, so editing them changes the key without a version bump. */
const RECIPE_TEXT = JSON.stringify({
  PRUNED_PATHS,
  DLOPENED_LIBRARIES,
  LIBRARY_DIRS,
  SKELETON_DIRS,
  DEVICE_NODES,
});

export function userspaceKey(packages: readonly ResolvedPackage[], initScript: Uint8Array): string {
  const digests = packages.map((p) => p.sha256).sort();
  return hashParts([RECIPE_VERSION, RECIPE_TEXT, ...digests, initScript]);
}

async function stageTree(root: string, debs: readonly string[], initScript: Uint8Array): Promise<void> {
  const step = progress.step("[image] unpacking guest packages");
  let done = 0;
  for (const deb of debs) {
    await unpackDeb(deb, root);
    step.update(++done, debs.length);
  }
  step.succeed(`${debs.length} packages`);
  for (const p of PRUNED_PATHS) await rm(join(root, p), { recursive: true, force: true });
  const prune = progress.step("[image] leaving out the shared libraries nothing loads");
  const unused = await removeUnusedLibraries(root, LIBRARY_DIRS, DLOPENED_LIBRARIES).catch((err: unknown) => {
    prune.fail();
    throw err;
  });
  prune.succeed(`${unused.length} libraries`);
  for (const d of SKELETON_DIRS) await makeDir(join(root, d));
  await chmod(join(root, "root"), 0o700);
  await chmod(join(root, "tmp"), 0o1777);
  await writeFile(join(root, "init"), initScript, { mode: 0o755 });
  await chmod(join(root, "init"), 0o755);
  await writeFile(
    join(root, "etc/ld.so.conf"),
    `${LIBRARY_DIRS.join("\n")}\ninclude /etc/ld.so.conf.d/*.conf\n`,
  );
  await run("ldconfig in the guest tree", "ldconfig", ["-r", root]);
}

async function* userspaceEntries(root: string): AsyncGenerator<CpioEntry> {
  yield* walkTree(root);
  yield* DEVICE_NODES;
}

export const USERSPACE_KIND = "image/userspace";

/** The guest packages the package lists of `ctx` resolve to, the init script, and the layer's key. */
export async function resolveUserspace(ctx: AptContext) {
  const names = await resolvePackageClosure(ctx, ROOT_PACKAGES, PACKAGING_ONLY);
  const packages = await resolvePackages(ctx, names);
  const initScript = await readFile(INIT_SCRIPT_PATH);
  return { packages, initScript, key: userspaceKey(packages, initScript) };
}

/** The kernel-independent layer: Debian userspace, the init script, device nodes. Cached by content. */
export async function buildUserspaceLayer(): Promise<UserspaceLayer> {
  const ctx = await aptContext(USERSPACE_SUITE);
  const { packages, initScript, key } = await resolveUserspace(ctx);
  const { dir } = await ensureEntry(USERSPACE_KIND, key, { what: "guest userspace" }, async (work) => {
    const debs = await fetchPackages(ctx, packages);
    const root = join(work, "root");
    await stageTree(root, debs, initScript);
    const check = progress.step("[image] checking shared libraries (DT_NEEDED)");
    const elfCount = await verifyElfClosure(root, LIBRARY_DIRS).catch((err: unknown) => {
      check.fail();
      throw err;
    });
    check.succeed(`${elfCount} ELF files resolve`);
    const pack = progress.step("[image] packing the userspace archive");
    const entries = await writeCpioGz(join(work, USERSPACE_ARCHIVE), userspaceEntries(root));
    pack.succeed(`${entries} entries`);
    await writeFile(
      join(work, "packages.txt"),
      packages
        .map((p) => `${p.filename} ${p.sha256}`)
        .join("\n")
        .concat("\n"),
    );
    await rm(root, { recursive: true, force: true });
    await copyFile(INIT_SCRIPT_PATH, join(work, "init"));
  });
  const rdmaCore = packages.find((p) => p.name === RDMA_CORE_PACKAGE);
  return { path: join(dir, USERSPACE_ARCHIVE), key, rdmaCore: rdmaCore && debFileVersion(rdmaCore.filename) };
}
