import { lstatSync, readlinkSync } from "node:fs";
import { join, posix } from "node:path";

/**
 * Resolves an absolute in-tree path as the guest would see it, following symlinks (absolute ones
 * relative to the tree root). Returns the host path of the final file, or undefined if it is missing
 * or a link loop.
 */
export function resolveInTree(root: string, treePath: string, maxLinks = 40): string | undefined {
  let pending = posix.normalize(treePath).split("/").filter(Boolean);
  let resolved: string[] = [];
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift() as string;
    if (part === "..") {
      resolved.pop();
      continue;
    }
    if (part === ".") continue;
    const candidate = [...resolved, part];
    const host = join(root, ...candidate);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(host);
    } catch {
      return undefined;
    }
    if (st.isSymbolicLink()) {
      if (++links > maxLinks) return undefined;
      const target = readlinkSync(host);
      const targetParts = target.split("/").filter(Boolean);
      if (target.startsWith("/")) resolved = [];
      pending = [...targetParts, ...pending];
      continue;
    }
    resolved = candidate;
  }
  return join(root, ...resolved);
}
