/**
 * The erdma-hil package itself: where it is installed and what it is, found from this file's own
 * location, never from the working directory (hil runs from a kernel tree, under `git bisect run`,
 * through a symlink on PATH or a global install).
 */
import { existsSync, readFileSync } from "node:fs";
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

/** Where bin/hil.mjs says its bundle is (bin/cli-bundle.mjs: BUNDLE_DIR_ENV), for the processes it starts. */
const BUNDLE_DIR_ENV = "HIL_BUNDLE_DIR";

/**
 * How to start one of the package's TypeScript programs that the bundle also holds: `node
 * <bundle>/<bundled>` when this hil runs from its bundle, else `node --import tsx <source>`.
 */
export function nodeArgsFor(source: string, bundled: string): string[] {
  const dir = process.env[BUNDLE_DIR_ENV];
  const file = dir ? join(dir, bundled) : undefined;
  if (file && existsSync(file)) return [file];
  return ["--import", tsxLoaderUrl(), source];
}
