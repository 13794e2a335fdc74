import { open, readdir } from "node:fs/promises";
import { join, posix } from "node:path";
import { HilError } from "../../util/errors.ts";
import { probe } from "../../util/exec.ts";
import { resolveInTree } from "./tree.ts";

/** What the dynamic loader needs to start an ELF file; paths are inside the tree, absolute. */
export interface ElfDynamicInfo {
  path: string;
  interpreter?: string;
  needed: string[];
  /** DT_RUNPATH or DT_RPATH entries, $ORIGIN not yet expanded */
  searchPath: string[];
}

export interface UnresolvedLibrary {
  binary: string;
  library: string;
}

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

async function isElf(file: string): Promise<boolean> {
  const fh = await open(file, "r");
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await fh.read(head, 0, 4, 0);
    return bytesRead === 4 && head.equals(ELF_MAGIC);
  } finally {
    await fh.close();
  }
}

/** Every regular ELF file under `root`, as absolute in-tree paths ("/usr/bin/rdma"). */
export async function findElfFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    if (await isElf(full)) found.push(`/${full.slice(root.length).replace(/^\/+/, "")}`);
  }
  return found.sort();
}

/** Parses `readelf -d -l -W` output for one or more files (each introduced by "File: <name>"). */
export function parseReadelf(text: string, toTreePath: (file: string) => string): ElfDynamicInfo[] {
  const infos: ElfDynamicInfo[] = [];
  let current: ElfDynamicInfo | undefined;
  for (const line of text.split("\n")) {
    const file = /^File: (.+)$/.exec(line);
    if (file) {
      current = { path: toTreePath(file[1] ?? ""), needed: [], searchPath: [] };
      infos.push(current);
      continue;
    }
    if (!current) continue;
    const interp = /\[Requesting program interpreter: (.+)\]/.exec(line);
    if (interp) current.interpreter = interp[1];
    const needed = /\(NEEDED\)\s+Shared library: \[(.+)\]/.exec(line);
    if (needed) current.needed.push(needed[1] ?? "");
    const rpath = /\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.*)\]/.exec(line);
    if (rpath) current.searchPath.push(...(rpath[1] ?? "").split(":").filter(Boolean));
  }
  return infos;
}

/** The dynamic sections of `files` (absolute in-tree paths), read with readelf in batches. */
export async function readDynamicInfo(root: string, files: readonly string[]): Promise<ElfDynamicInfo[]> {
  const byPath = new Map<string, ElfDynamicInfo>();
  const batch = 200;
  for (let i = 0; i < files.length; i += batch) {
    const slice = files.slice(i, i + batch);
    // readelf prints "File:" headers only for two or more files: name a lone file twice.
    const hostPaths = (slice.length === 1 ? [...slice, ...slice] : slice).map((f) => join(root, f));
    const r = await probe("readelf", ["-d", "-l", "-W", ...hostPaths]);
    if (r.stdout.trim() === "") {
      throw new HilError("cannot read the dynamic sections of the guest binaries", {
        detail: r.stderr.trim(),
      });
    }
    const toTreePath = (f: string) => `/${f.slice(root.length).replace(/^\/+/, "")}`;
    for (const info of parseReadelf(r.stdout, toTreePath)) byPath.set(info.path, info);
  }
  return [...byPath.values()];
}

/**
 * The libraries (and interpreters) that would not be found at run time inside the tree.
 * `exists` answers for absolute in-tree paths, following symlinks within the tree.
 */
/**
 * Where the dynamic loader looks for `library` on behalf of `from`, in order: a path as given
 * (relative to `from`'s directory), else `from`'s run paths ($ORIGIN expanded), then `libraryDirs`.
 */
export function libraryCandidates(
  from: ElfDynamicInfo,
  library: string,
  libraryDirs: readonly string[],
): string[] {
  const origin = posix.dirname(from.path);
  if (library.includes("/")) return [posix.resolve(origin, library)];
  const runPaths = from.searchPath.map((d) => d.replace(/\$\{ORIGIN\}|\$ORIGIN/g, origin));
  return [...runPaths, ...libraryDirs].map((d) => posix.join(d, library));
}

export function findUnresolved(
  infos: readonly ElfDynamicInfo[],
  libraryDirs: readonly string[],
  exists: (treePath: string) => boolean,
): UnresolvedLibrary[] {
  const missing: UnresolvedLibrary[] = [];
  for (const info of infos) {
    if (info.interpreter && !exists(info.interpreter)) {
      missing.push({ binary: info.path, library: info.interpreter });
    }
    for (const lib of info.needed) {
      if (!libraryCandidates(info, lib, libraryDirs).some(exists))
        missing.push({ binary: info.path, library: lib });
    }
  }
  return missing;
}

/** Checks that every ELF file in the tree finds its interpreter and every DT_NEEDED library in the tree. */
export async function verifyElfClosure(root: string, libraryDirs: readonly string[]): Promise<number> {
  const files = await findElfFiles(root);
  const infos = await readDynamicInfo(root, files);
  const missing = findUnresolved(infos, libraryDirs, (p) => resolveInTree(root, p) !== undefined);
  if (missing.length > 0) {
    const lines = missing.map((m) => `${m.binary} needs ${m.library}`);
    const first = missing[0] as UnresolvedLibrary;
    throw new HilError(`guest image: ${first.binary} needs ${first.library}, which is not in the image`, {
      detail: lines.length > 1 ? `all unresolved:\n${lines.join("\n")}` : undefined,
    });
  }
  return files.length;
}
