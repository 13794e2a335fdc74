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

export type BaseSpec =
  | { kind: "debian"; name: DebianBaseName; package: string; suite: AptContextName }
  | { kind: "git"; path: string }
  | { kind: "dir"; path: string }
  | { kind: "tarball"; path: string };

const TARBALL_SUFFIXES = [".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar"];

export const ACCEPTED_BASE_FORMS = [
  ...Object.keys(DEBIAN_BASES),
  "a kernel source directory (a git work tree or a plain directory)",
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

/** Decides what kind of base `base` names; every input that is none of the accepted forms is one error. */
export function parseBaseSpec(base: string, cwd = process.cwd()): BaseSpec {
  if (base in DEBIAN_BASES) {
    const name = base as DebianBaseName;
    return { kind: "debian", name, ...DEBIAN_BASES[name] };
  }
  const path = resolve(cwd, base);
  const stat = existsSync(path) ? statSync(path) : undefined;
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

export function describeBase(spec: BaseSpec): string {
  return spec.kind === "debian" ? spec.name : `${spec.kind} ${spec.path}`;
}
