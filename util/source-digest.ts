/**
 * A content digest of source files: every file below the named entries of a root (directories
 * walked, files taken as they are), by path and bytes. Dot-names (.git, editor files) and
 * Markdown (documentation) are left out, so are node_modules: what it digests is code and data
 * a program runs, not what describes it.
 */
import { createHash } from "node:crypto";
import { type Dirent, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

function skipped(name: string): boolean {
  return name.startsWith(".") || name === "node_modules" || name.endsWith(".md");
}

function filesBelow(root: string, rel: string, out: string[]): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(join(root, rel), { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (skipped(e.name)) continue;
    const path = `${rel}/${e.name}`;
    if (e.isDirectory()) filesBelow(root, path, out);
    else if (e.isFile()) out.push(path);
  }
}

/** The files the digest covers, relative to `root`, sorted; a missing entry contributes none. */
export function sourceFiles(root: string, entries: readonly string[]): string[] {
  const out: string[] = [];
  for (const entry of entries) {
    let isDir: boolean;
    try {
      isDir = statSync(join(root, entry)).isDirectory();
    } catch {
      continue;
    }
    if (isDir) filesBelow(root, entry, out);
    else if (!skipped(entry)) out.push(entry);
  }
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** sha256 over every covered file's path and bytes. */
export function sourceDigest(root: string, entries: readonly string[]): string {
  const h = createHash("sha256");
  for (const path of sourceFiles(root, entries)) {
    const bytes = readFileSync(join(root, path));
    h.update(`${path}\0${bytes.length}\0`);
    h.update(bytes);
  }
  return h.digest("hex");
}
