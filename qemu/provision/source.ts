import { join } from "node:path";
import { ensureEntry, sweepStale } from "../../util/cache.ts";
import { downloadVerified } from "./download.ts";

/** Debian's QEMU source, pinned: sid's newer index entries have pointed at files the mirror no longer has. */
export const QEMU_SOURCE = {
  version: "10.2.2",
  debianVersion: "1:10.2.2+ds-1",
  poolPath: "pool/main/q/qemu/qemu_10.2.2+ds.orig.tar.xz",
  sha256: "be05230fe47a6937cd29f28f562932c8125f9c93c2a82c625198f7a4aa601dfb",
  size: 38_669_728,
} as const;

const DEFAULT_MIRROR = "http://deb.debian.org/debian";

export function debianMirror(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HIL_DEBIAN_MIRROR || DEFAULT_MIRROR).replace(/\/+$/, "");
}

export function qemuSourceUrl(env: NodeJS.ProcessEnv = process.env): string {
  return `${debianMirror(env)}/${QEMU_SOURCE.poolPath}`;
}

const SOURCE_KIND = "qemu-source";

/** The verified source tarball in the cache (downloaded once, kept for rebuilds); returns its path. */
export async function ensureQemuSourceTarball(): Promise<string> {
  await sweepStale(SOURCE_KIND);
  const name = QEMU_SOURCE.poolPath.split("/").pop() ?? "qemu.orig.tar.xz";
  const { dir } = await ensureEntry(
    SOURCE_KIND,
    QEMU_SOURCE.sha256,
    { what: `QEMU ${QEMU_SOURCE.version} source` },
    (work) =>
      downloadVerified(
        qemuSourceUrl(),
        join(work, name),
        QEMU_SOURCE,
        `QEMU ${QEMU_SOURCE.debianVersion} source`,
      ),
  );
  return join(dir, name);
}
