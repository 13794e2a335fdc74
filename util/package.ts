/**
 * The erdma-hil package itself: where it is installed and what it is, found from this file's own
 * location, never from the working directory (hil runs from a kernel tree, under `git bisect run`,
 * through a symlink on PATH or a global install).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's root directory (where package.json is), with a trailing separator. */
export const PACKAGE_ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A file or directory of the package, e.g. packagePath("fixtures", "scenarios"). */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}

let version: string | undefined;

/** The package's version (package.json). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(packagePath("package.json"), "utf8")) as { version: string }).version;
  return version;
}

/**
 * The file URL of tsx's loader as this package resolves it, for `node --import <it>` in a child
 * process: the bare `--import tsx` is resolved from the child's working directory, which may be
 * anywhere.
 */
export function tsxLoaderUrl(): string {
  return import.meta.resolve("tsx");
}
