/**
 * The erdma-hil package itself: where it is installed and what it is, found from this file's own
 * location, never from the working directory (hil runs from a kernel tree, under `git bisect run`,
 * through a symlink on PATH or a global install).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { sourceDigest } from "./source-digest.ts";

/** The package's root directory (where package.json is), with a trailing separator. */
export const PACKAGE_ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A file or directory of the package, e.g. packagePath("fixtures", "scenarios"). */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}

let version: string | undefined;

/** The source entries whose content is this hil (what a run was judged by). */
const SOURCE_ENTRIES = ["bin", "guest", "harness", "qemu", "util", "fixtures", "package.json"];

/**
 * Which code this is, as build metadata: the git commit of the package's own checkout (with
 * `.dirty` when tracked files differ from it), or else a digest of its sources (an install
 * without git), so a run record names the code that judged it.
 */
function buildIdentity(): string {
  try {
    const git = (args: string[]) =>
      execFileSync("git", ["-C", PACKAGE_ROOT, ...args], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim();
    if (resolve(git(["rev-parse", "--show-toplevel"])) === resolve(PACKAGE_ROOT)) {
      const commit = git(["rev-parse", "--short=12", "HEAD"]);
      const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
      return `g${commit}${dirty ? ".dirty" : ""}`;
    }
  } catch {
    // no git, or not a checkout of its own
  }
  return `src.${sourceDigest(PACKAGE_ROOT, SOURCE_ENTRIES).slice(0, 16)}`;
}

/** The package's version (package.json) with the code it is at: 0.1.0+g9bf0029a1b2c or 0.1.0+src.<digest>. */
export function packageVersion(): string {
  version ??= `${(JSON.parse(readFileSync(packagePath("package.json"), "utf8")) as { version: string }).version}+${buildIdentity()}`;
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
