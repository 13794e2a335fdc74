/**
 * Which modules a prebuilt kernel's guest gets. hil's config (guest/kconfig) builds in what Debian
 * builds as modules (virtio-net) and builds drivers Debian leaves out (erdma, siw, RTRS and RNBD
 * in 6.12's config-6.12.95+deb12-amd64): the former are taken from the image's /lib/modules, the
 * latter built out of tree from the same version's linux-source. The guest gets the modules hil's
 * own kernels have (their modules.order: the RDMA core, erdma, siw, rxe, the ULPs) and what they
 * need, no more: the image's /lib/modules holds 4228 modules, 101 MB compressed.
 */

/** A driver built out of tree when the image's config does not set its options. */
export interface OutOfTreeDriver {
  /** its directory in the kernel source */
  dir: string;
  /** the Kconfig options (without CONFIG_) its Makefile reads, given as =m on make's command line */
  options: readonly string[];
  /** the modules it makes, as <dir>/<name>.ko */
  modules: readonly string[];
  /** source directories its files include from, added to the compiler's include path */
  includes?: readonly string[];
}

/** Drivers of drivers/infiniband and drivers/block that guest/kconfig builds and Debian may not. */
export const OUT_OF_TREE_DRIVERS: readonly OutOfTreeDriver[] = [
  { dir: "drivers/infiniband/hw/erdma", options: ["INFINIBAND_ERDMA"], modules: ["erdma"] },
  { dir: "drivers/infiniband/sw/siw", options: ["RDMA_SIW"], modules: ["siw"] },
  {
    dir: "drivers/infiniband/ulp/rtrs",
    options: ["INFINIBAND_RTRS", "INFINIBAND_RTRS_CLIENT", "INFINIBAND_RTRS_SERVER"],
    modules: ["rtrs-core", "rtrs-client", "rtrs-server"],
  },
  {
    // drivers/block/rnbd/Makefile: ccflags-y := -I$(srctree)/drivers/infiniband/ulp/rtrs
    dir: "drivers/block/rnbd",
    options: ["BLK_DEV_RNBD_CLIENT", "BLK_DEV_RNBD_SERVER"],
    modules: ["rnbd-client", "rnbd-server"],
    includes: ["drivers/infiniband/ulp/rtrs"],
  },
];

/**
 * The modules the guest must be able to load: the modules.order of hil's debian:6.12 kernels
 * (base, + config rxe, + config ulp) and virtio_net, which base.config builds in (the init
 * configures the first NIC before anything else).
 */
export const GUEST_MODULES: readonly string[] = [
  // the virtio transport: built in on 6.12 (Debian's config), a module on 6.1 and 7.2
  "virtio_pci",
  "virtio_net",
  "ib_core",
  "ib_cm",
  "iw_cm",
  "rdma_cm",
  "ib_uverbs",
  "rdma_ucm",
  "erdma",
  "siw",
  "rdma_rxe",
  "crc32c_generic",
  "crc32_generic",
  "libcrc32c",
  "null_blk",
  "nvme-rdma",
  "nvmet-rdma",
  "rtrs-client",
  "rtrs-server",
  "rnbd-client",
  "rnbd-server",
];

/**
 * The modules the guest's init loads (its default set, guest/initramfs/init), with the virtio
 * transport and virtio_net first: given as hil.modules, which replaces that set.
 */
export const INIT_MODULES = [
  "virtio_pci",
  "virtio_net",
  "ib_core",
  "ib_uverbs",
  "rdma_ucm",
  "erdma",
] as const;

/** A module's name as the kernel compares them: '-' and '_' are the same. */
export function moduleName(name: string): string {
  return name.replaceAll("-", "_");
}

/** A module file's name ("nvme-rdma.ko.xz") as a module name ("nvme_rdma"). */
export function moduleNameOfFile(file: string): string {
  const base = file.split("/").pop() ?? file;
  return moduleName(base.replace(/\.ko(\.xz|\.zst|\.gz)?$/, ""));
}

/** The drivers to build: those with an option the image's config leaves unset. */
export function driversToBuild(imageConfig: ReadonlyMap<string, string>): OutOfTreeDriver[] {
  return OUT_OF_TREE_DRIVERS.filter((d) =>
    d.options.some((o) => !["y", "m"].includes(imageConfig.get(o) ?? "n")),
  );
}

/**
 * The modules `roots` need, themselves included: each one's dependencies, transitively. A root that
 * `known` lacks is returned in `missing` (built in, or not in this kernel at all).
 */
export async function moduleClosure(
  roots: readonly string[],
  known: ReadonlySet<string>,
  dependsOf: (name: string) => Promise<readonly string[]>,
): Promise<{ modules: string[]; missing: string[] }> {
  const seen = new Set<string>();
  const missing: string[] = [];
  const queue = roots.map(moduleName);
  while (queue.length > 0) {
    const name = queue.shift() as string;
    if (seen.has(name)) continue;
    if (!known.has(name)) {
      missing.push(name);
      seen.add(name);
      continue;
    }
    seen.add(name);
    for (const dep of await dependsOf(name)) queue.push(moduleName(dep));
  }
  return { modules: [...seen].filter((n) => !missing.includes(n)).sort(), missing };
}
