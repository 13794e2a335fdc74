/**
 * Paths in the records cache entries keep about themselves (a kernel's artifact.json): stored
 * relative to the entry, resolved against the entry's own directory, so a copied or moved cache
 * uses its own files. Records written before stored absolute paths; those keep working: a path
 * into the cache the record was written in is moved onto the cache the entry is in now.
 */
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { HilError } from "./errors.ts";

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** `path` as the record of the entry in `entryDir` stores it; `root` is the cache root. */
export function recordedPath(root: string, entryDir: string, path: string): string {
  if (!inside(root, path))
    throw new HilError(`a cache record would name ${path}, outside the cache`, { where: entryDir });
  return relative(entryDir, path) || ".";
}

/**
 * The root of the cache a record with absolute paths was written in: found in any path of the
 * record that names the entry itself at its place below the root (e.g. ".../kernel/<key>/bzImage"
 * for the entry kernel/<key>); undefined if none does.
 */
export function writtenRoot(root: string, entryDir: string, paths: readonly string[]): string | undefined {
  const place = relative(root, entryDir);
  for (const p of paths) {
    if (!isAbsolute(p)) continue;
    const parts = p.split("/");
    const own = place.split("/");
    for (let i = parts.length - own.length; i >= 1; i--) {
      if (own.every((part, j) => parts[i + j] === part)) return parts.slice(0, i).join("/") || "/";
    }
  }
  return undefined;
}

/**
 * A path the record of the entry in `entryDir` names, as a path of this cache (`root`): a relative
 * one against the entry; an absolute one below `oldRoot` (see writtenRoot) at the same place below
 * `root`. A path that would lead outside the cache is an error naming the record.
 */
export function resolveRecorded(
  root: string,
  entryDir: string,
  recorded: string,
  oldRoot: string | undefined,
  record: string,
): string {
  let path: string;
  if (!isAbsolute(recorded)) path = resolve(entryDir, recorded);
  else if (oldRoot !== undefined && inside(oldRoot, recorded)) path = join(root, relative(oldRoot, recorded));
  else path = recorded;
  if (!inside(root, path))
    throw new HilError(`the cache record names ${recorded}, outside the cache it is in (${root})`, {
      where: join(entryDir, record),
    });
  return path;
}
