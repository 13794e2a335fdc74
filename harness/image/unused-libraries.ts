import type { Dirent } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join, posix } from "node:path";
import { type ElfDynamicInfo, findElfFiles, libraryCandidates, readDynamicInfo } from "./elf.ts";
import { resolveInTree } from "./tree.ts";

const SHARED_OBJECT = /\.so(\.\d+)*$/;

/**
 * The shared libraries lying directly in `libraryDirs` that nothing in the tree loads: no program
 * and no plugin (an ELF file elsewhere, or a link from elsewhere to a library, as rdma-core links
 * its providers) needs them over DT_NEEDED, directly or through other libraries, and `keep` does
 * not name them (sonames loaded by dlopen). `canonical` maps an in-tree path to the in-tree path
 * of the file it names, following links, or undefined when it names nothing.
 */
export function unusedLibraries(
  infos: readonly ElfDynamicInfo[],
  libraryDirs: readonly string[],
  canonical: (treePath: string) => string | undefined,
  linkedFromElsewhere: readonly string[],
  keep: readonly string[],
): string[] {
  const dirs = new Set(libraryDirs.map((d) => canonical(d) ?? d));
  const isLibrary = (path: string) =>
    dirs.has(posix.dirname(path)) && SHARED_OBJECT.test(posix.basename(path));
  const byPath = new Map<string, ElfDynamicInfo>();
  for (const info of infos) byPath.set(canonical(info.path) ?? info.path, info);
  const firstFound = (paths: readonly string[]) =>
    paths.map(canonical).find((p): p is string => p !== undefined && byPath.has(p));

  const queue: string[] = [
    ...[...byPath.keys()].filter((p) => !isLibrary(p)),
    ...linkedFromElsewhere.map(canonical).filter((p): p is string => p !== undefined),
    ...keep
      .map((soname) => firstFound(libraryDirs.map((d) => posix.join(d, soname))))
      .filter((p): p is string => p !== undefined),
  ];
  const reached = new Set<string>();
  while (queue.length > 0) {
    const path = queue.pop() as string;
    if (reached.has(path)) continue;
    reached.add(path);
    const info = byPath.get(path);
    if (!info) continue;
    const wanted = info.needed.map((lib) => libraryCandidates(info, lib, libraryDirs));
    if (info.interpreter) wanted.push([info.interpreter]);
    for (const paths of wanted) {
      const found = firstFound(paths);
      if (found && !reached.has(found)) queue.push(found);
    }
  }
  return [...byPath.keys()].filter((p) => isLibrary(p) && !reached.has(p)).sort();
}

/** In-tree paths of the links outside `libraryDirs` (a provider directory's links into them). */
async function linksOutside(root: string, libraryDirs: readonly string[]): Promise<string[]> {
  const dirs = new Set(libraryDirs);
  const links: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isSymbolicLink()) continue;
    const path = `/${join(entry.parentPath, entry.name).slice(root.length).replace(/^\/+/, "")}`;
    if (!dirs.has(posix.dirname(path))) links.push(path);
  }
  return links;
}

/**
 * Removes from the tree the shared libraries nothing loads (unusedLibraries), and the links in
 * `libraryDirs` left pointing at them. Returns the in-tree paths of the removed libraries.
 */
export async function removeUnusedLibraries(
  root: string,
  libraryDirs: readonly string[],
  keep: readonly string[],
): Promise<string[]> {
  const infos = await readDynamicInfo(root, await findElfFiles(root));
  const toTree = (hostPath: string) => `/${hostPath.slice(root.length).replace(/^\/+/, "")}`;
  const canonical = (treePath: string) => {
    const host = resolveInTree(root, treePath);
    return host === undefined ? undefined : toTree(host);
  };
  const unused = unusedLibraries(infos, libraryDirs, canonical, await linksOutside(root, libraryDirs), keep);
  const gone = new Set(unused);
  const linksToGone: string[] = [];
  for (const dir of libraryDirs) {
    const entries = await readdir(join(root, dir), { withFileTypes: true }).catch((): Dirent[] => []);
    for (const entry of entries) {
      const path = posix.join(dir, entry.name);
      const target = entry.isSymbolicLink() ? canonical(path) : undefined;
      if (target !== undefined && gone.has(target)) linksToGone.push(path);
    }
  }
  for (const path of [...unused, ...linksToGone]) await rm(join(root, path));
  return unused;
}
