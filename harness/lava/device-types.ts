import { existsSync } from "node:fs";
import { rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { aptContext, downloadPackages, packageUri } from "../../util/apt.ts";
import { ensureEntry, sweepStale } from "../../util/cache.ts";
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { hashFile } from "../../util/hash.ts";

/** Debian's package that ships LAVA's device-type templates (only its files are used, never installed). */
export const LAVA_SERVER_PACKAGE = "lava-server";
const DEVICE_TYPES_IN_DEB = join("usr", "share", "lava-server", "device-types");
const KIND = "lava-device-types";

export interface LavaDeviceTypes {
  /** the directory holding base.jinja2, qemu.jinja2 and the other device types */
  dir: string;
  /** the .deb they came from */
  deb: string;
  /** whether this call downloaded them (false: the cache had them) */
  fetched: boolean;
}

/** A cache key from a .deb's file name (`lava-server_2023.01-2_all.deb`): its version names the entry. */
export function deviceTypesKey(debFilename: string): string {
  return debFilename.replace(/\.deb$/, "").replace(/[^A-Za-z0-9._-]/g, "_");
}

/**
 * LAVA's device-type templates from Debian bookworm's lava-server .deb, unpacked into the cache
 * once per package version.
 */
export async function ensureLavaDeviceTypes(): Promise<LavaDeviceTypes> {
  const ctx = await aptContext("bookworm");
  const uri = await packageUri(ctx, LAVA_SERVER_PACKAGE);
  await sweepStale(KIND);
  const { dir, built } = await ensureEntry(
    KIND,
    deviceTypesKey(uri.filename),
    { what: `LAVA device types (${uri.filename})` },
    async (work) => {
      const dl = join(work, "download");
      const [deb] = await downloadPackages(ctx, [LAVA_SERVER_PACKAGE], dl);
      if (!deb) throw new HilError(`apt-get download ${LAVA_SERVER_PACKAGE} produced no file`, { where: dl });
      const got = await hashFile(deb);
      if (got !== uri.sha256) {
        throw new HilError(
          `${uri.filename} changed on the mirror while it was being fetched; run the command again`,
          {
            detail: `expected sha256 ${uri.sha256}, got ${got}`,
          },
        );
      }
      const root = join(dl, "root");
      await run(`unpacking ${uri.filename}`, "dpkg-deb", ["-x", deb, root]);
      const types = join(root, DEVICE_TYPES_IN_DEB);
      if (!existsSync(join(types, "qemu.jinja2")))
        throw new HilError(`${uri.filename} holds no ${DEVICE_TYPES_IN_DEB}/qemu.jinja2`);
      await rename(types, join(work, "device-types"));
      await rm(dl, { recursive: true, force: true });
      await writeFile(
        join(work, "source.json"),
        `${JSON.stringify({ deb: uri.filename, sha256: uri.sha256 }, null, 2)}\n`,
      );
    },
  );
  return { dir: join(dir, "device-types"), deb: uri.filename, fetched: built };
}
