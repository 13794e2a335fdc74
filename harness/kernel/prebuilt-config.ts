/**
 * A prebuilt kernel's config is Debian's: fragments cannot change it, only be checked against it.
 * A fragment's option is met when the image has it as the fragment asks, a module counting for a
 * built-in (the guest has the module: ulp.config's CONFIG_CONFIGFS_FS=y is Debian's =m, which
 * nvmet loads) and a driver built out of tree for its options. What guest/kconfig/base.config sets
 * and Debian's config does not is set at boot where the kernel lets it: the boot arguments below.
 */
import { readFileSync } from "node:fs";
import { HilError } from "../../util/errors.ts";
import {
  type ConfigRequest,
  effectiveRequests,
  type Fragment,
  parseFragment,
  smpBootArgs,
} from "./kconfig.ts";
import { INIT_MODULES, type OutOfTreeDriver } from "./prebuilt-modules.ts";

/** Options whose value is an upper bound: an image with a higher one meets the request. */
const AT_LEAST = new Set(["NR_CPUS"]);

function meets(request: ConfigRequest, actual: string | undefined, outOfTree: ReadonlySet<string>): boolean {
  const has = actual ?? "n";
  if (request.value === "n") return has === "n";
  if (request.value === "y" || request.value === "m")
    return has === "y" || has === "m" || outOfTree.has(request.name);
  if (AT_LEAST.has(request.name)) return Number(has) >= Number(request.value);
  return has === request.value;
}

/** The requests of `fragments` (the last of each name) that the image's config does not meet. */
export function unmetRequests(
  fragments: readonly Fragment[],
  imageConfig: ReadonlyMap<string, string>,
  drivers: readonly OutOfTreeDriver[],
): ConfigRequest[] {
  const outOfTree = new Set(drivers.flatMap((d) => d.options));
  return effectiveRequests(fragments.map((f) => f.requests)).filter(
    (r) => !meets(r, imageConfig.get(r.name), outOfTree),
  );
}

/** Throws one error naming every option of the fragments the image cannot give. */
export function checkFragmentsMet(
  image: string,
  configName: string,
  fragments: readonly Fragment[],
  imageConfig: ReadonlyMap<string, string>,
  drivers: readonly OutOfTreeDriver[],
  compiledBase: string,
): void {
  const unmet = unmetRequests(fragments, imageConfig, drivers);
  if (unmet.length === 0) return;
  const shown = (v: string | undefined) => (v === undefined || v === "n" ? "not set" : `=${v}`);
  throw new HilError(
    `${image} cannot give ${unmet.length} option(s) the config fragments ask for: ${unmet.map((r) => `CONFIG_${r.name}`).join(", ")}`,
    {
      detail: [
        ...unmet.map(
          (r) =>
            `CONFIG_${r.name}=${r.value} (${r.file}:${r.line}): ${shown(imageConfig.get(r.name))} in Debian's ${configName}`,
        ),
        `a prebuilt kernel's config is Debian's; compile one with these options: --kernel ${compiledBase}`,
      ].join("\n"),
    },
  );
}

/** An option's value in base.config (hil's own kernels), undefined when it does not set it. */
export function baseConfigValue(baseConfigPath: string, name: string): string | undefined {
  const requests = parseFragment(readFileSync(baseConfigPath, "utf8"), baseConfigPath);
  return requests.filter((r) => r.name === name).pop()?.value;
}

/**
 * The kernel parameters that make Debian's kernel what base.config makes hil's:
 * - nosmp: one CPU, as hil's own kernels boot, unless a fragment asks for SMP (kconfig.ts smpBootArgs);
 * - sysctl.kernel.hung_task_timeout_secs: CONFIG_DEFAULT_HUNG_TASK_TIMEOUT, 120 in Debian's config
 *   (the sysctl. prefix sets a sysctl from the command line, fs/proc/proc_sysctl.c, Linux >= 5.8);
 * - iomem=relaxed: base.config has no STRICT_DEVMEM, Debian's IO_STRICT_DEVMEM keeps /dev/mem off
 *   the BARs a driver claimed (drivers/char/mem.c, kernel/resource.c iomem_is_exclusive);
 * - hil.modules: the init's modules with virtio_pci and virtio_net first, which Debian builds as modules.
 */
export function prebuiltBootArgs(opts: {
  userFragments: readonly Fragment[];
  hungTaskTimeoutSecs: string | undefined;
}): string[] {
  return [
    ...smpBootArgs(opts.userFragments),
    ...(opts.hungTaskTimeoutSecs ? [`sysctl.kernel.hung_task_timeout_secs=${opts.hungTaskTimeoutSecs}`] : []),
    "iomem=relaxed",
    `hil.modules=${INIT_MODULES.join(",")}`,
  ];
}
