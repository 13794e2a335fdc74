import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AptContextName } from "../../util/apt.ts";
import { HilError } from "../../util/errors.ts";

/** The Debian source packages a `debian:X.Y` base names. */
export const DEBIAN_BASES = {
  "debian:6.1": { package: "linux-source-6.1", suite: "bookworm" },
  "debian:6.12": { package: "linux-source-6.12", suite: "bookworm-backports" },
  "debian:7.2": { package: "linux-source-7.2", suite: "sid" },
} as const satisfies Record<string, { package: string; suite: AptContextName }>;

export type DebianBaseName = keyof typeof DEBIAN_BASES;

/**
 * The kernels Debian built that a user can name instead of a base (harness/kernel/prebuilt.ts), each
 * with the base whose linux-source package gives its version and the drivers built out of tree.
 * Not 7.2: sid builds it with gcc-16 (its headers' .kernelvariables) and its config turns on
 * flags the gcc of a bookworm host refuses (-fmin-function-alignment), so its drivers cannot be
 * built here; its image is also split (linux-binary-, linux-modules-<abi>).
 */
export const DEBIAN_IMAGES = {
  "debian-image:6.1": { sourceBase: "debian:6.1", flavour: "amd64" },
  "debian-image:6.12": { sourceBase: "debian:6.12", flavour: "amd64" },
} as const satisfies Record<string, { sourceBase: DebianBaseName; flavour: string }>;

/** Whether `base` is in the prebuilt kernels' namespace (a name, never a path). */
export function isPrebuiltBase(base: string): boolean {
  return base.startsWith("debian-image:");
}

/** Whether `base` names a kernel rather than a path: a Debian base or a prebuilt image. */
export function isNamedKernel(base: string): boolean {
  return base.startsWith("debian:") || isPrebuiltBase(base);
}

export type BaseSpec =
  | { kind: "debian"; name: DebianBaseName; package: string; suite: AptContextName }
  | { kind: "git"; path: string }
  /** a commit of a git repository (a work tree or a bare one), named by a branch, tag or hash */
  | { kind: "git-ref"; repo: string; ref: string }
  | { kind: "dir"; path: string }
  | { kind: "tarball"; path: string };

const TARBALL_SUFFIXES = [".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar"];

export const ACCEPTED_BASE_FORMS = [
  ...Object.keys(DEBIAN_BASES),
  ...Object.keys(DEBIAN_IMAGES).map((name) => `${name} (Debian's built kernel, booted as it is)`),
  "a kernel source directory (a git work tree or a plain directory)",
  "<git repository>@<ref>: the kernel of a branch, tag or commit (the work tree is not used)",
  `a kernel source tarball (${TARBALL_SUFFIXES.join(", ")})`,
];

function acceptedFormsText(): string {
  return `accepted forms:\n${ACCEPTED_BASE_FORMS.map((f) => `  ${f}`).join("\n")}`;
}

export function isTarballName(path: string): boolean {
  return TARBALL_SUFFIXES.some((s) => path.endsWith(s));
}

function looksLikeKernelTree(dir: string): boolean {
  return (
    existsSync(join(dir, "Makefile")) &&
    existsSync(join(dir, "Kconfig")) &&
    existsSync(join(dir, "scripts", "kconfig"))
  );
}

function isGitRepository(dir: string): boolean {
  return (
    existsSync(join(dir, ".git")) ||
    (existsSync(join(dir, "HEAD")) && existsSync(join(dir, "objects")) && existsSync(join(dir, "refs")))
  );
}

/**
 * `<repo>@<ref>` when some `@` of `base` ends the path of an existing directory: the leftmost such,
 * so that a ref may hold `@` (`main@{1}`). The ref itself is resolved when the base's key is made.
 */
function gitRefSpec(base: string, cwd: string): BaseSpec | undefined {
  for (let at = base.indexOf("@"); at > 0; at = base.indexOf("@", at + 1)) {
    const repo = resolve(cwd, base.slice(0, at));
    if (!existsSync(repo) || !statSync(repo).isDirectory()) continue;
    const ref = base.slice(at + 1);
    if (!isGitRepository(repo))
      throw new HilError(`base ${base}: ${repo} is not a git repository (no .git, and not a bare one)`, {
        detail: acceptedFormsText(),
      });
    if (ref === "" || ref.startsWith("-"))
      throw new HilError(`base ${base}: "${ref}" is not a ref (give a branch, tag or commit after the @)`, {
        detail: acceptedFormsText(),
      });
    return { kind: "git-ref", repo, ref };
  }
  return undefined;
}

/** Decides what kind of base `base` names; every input that is none of the accepted forms is one error. */
export function parseBaseSpec(base: string, cwd = process.cwd()): BaseSpec {
  if (base in DEBIAN_BASES) {
    const name = base as DebianBaseName;
    return { kind: "debian", name, ...DEBIAN_BASES[name] };
  }
  if (isPrebuiltBase(base))
    throw new HilError(`${base} is a kernel Debian built: it has no source tree to build from`, {
      detail: `this command needs a base it can build; the same version's source is ${DEBIAN_IMAGES[base as keyof typeof DEBIAN_IMAGES]?.sourceBase ?? Object.keys(DEBIAN_BASES).join(", ")}`,
    });
  const path = resolve(cwd, base);
  const stat = existsSync(path) ? statSync(path) : undefined;
  const atRef = stat ? undefined : gitRefSpec(base, cwd);
  if (atRef) return atRef;
  if (stat?.isDirectory()) {
    if (!looksLikeKernelTree(path)) {
      throw new HilError(
        `base ${base} is a directory but not a kernel source tree (no Makefile, Kconfig, scripts/kconfig)`,
        {
          where: path,
          detail: acceptedFormsText(),
        },
      );
    }
    return { kind: existsSync(join(path, ".git")) ? "git" : "dir", path };
  }
  if (stat?.isFile() && isTarballName(path)) return { kind: "tarball", path };
  const why = base.startsWith("debian:")
    ? `unknown Debian base ${base}`
    : stat
      ? `base ${base} is neither a directory nor a tarball`
      : `base ${base} is not a known base, and no such file or directory exists`;
  throw new HilError(why, { detail: acceptedFormsText() });
}

/** The base as the run names it: `debian:6.12`, `git <path>`, `dir <path>`, `tarball <path>`, `<repo>@<ref>`. */
export function describeBase(spec: BaseSpec): string {
  if (spec.kind === "debian") return spec.name;
  if (spec.kind === "git-ref") return `${spec.repo}@${spec.ref}`;
  return `${spec.kind} ${spec.path}`;
}
