import { RTL_HOST_PACKAGES } from "../qemu/erdma/rtl/build.ts";
import type { QemuInstall } from "../qemu/launch/types.ts";
import { ensureQemu } from "../qemu/provision/qemu.ts";
import { ensureHostPackages } from "../util/apt.ts";
import { DEFAULT_KERNEL } from "./defaults.ts";
import { TOOLS_HOST_PACKAGES } from "./image/guest-tools.ts";
import { IMAGE_HOST_PACKAGES } from "./image/initramfs.ts";
import { ensureBaseSource, KERNEL_HOST_PACKAGES } from "./kernel/build.ts";
import { ensureLavaDeviceTypes } from "./lava/device-types.ts";
import { findLavaRun, LAVA_HOST_PACKAGES } from "./lava/dispatcher.ts";
import { BROWSER_HOST_PACKAGES, type FoundChromium, findChromium } from "./report/browser-find.ts";

export interface SetupOptions {
  /** also install Debian's chromium (hil report --screenshot, the report tests): only when asked */
  browser?: boolean;
  /** also install Debian's lava-dispatcher and fetch LAVA's device-type templates: only when asked */
  lava?: boolean;
}

export interface LavaSetup {
  /** lava-run's path; undefined: not installed (hil setup --lava installs it) */
  lavaRun: string | undefined;
  /** LAVA's device-type templates in the cache and the .deb they came from (fetched by --lava only) */
  deviceTypes?: { dir: string; deb: string };
}

export interface SetupReport {
  installedPackages: string[];
  qemu: QemuInstall;
  kernelSource: { base: string; dir: string };
  /** the headless Chromium the report would use; undefined: none (hil setup --browser installs one) */
  browser: FoundChromium | undefined;
  lava: LavaSetup;
}

/**
 * The Debian packages setup installs when missing (QEMU's build dependencies: ensureQemu's, when it
 * builds); Verilator and yosys for --device-rtl and the RTL's synthesis check.
 */
export function setupPackages(opts: SetupOptions = {}): string[] {
  return [
    ...new Set([
      ...KERNEL_HOST_PACKAGES,
      ...IMAGE_HOST_PACKAGES,
      ...TOOLS_HOST_PACKAGES,
      ...RTL_HOST_PACKAGES,
      ...(opts.browser ? BROWSER_HOST_PACKAGES : []),
      ...(opts.lava ? LAVA_HOST_PACKAGES : []),
    ]),
  ];
}

/** Everything a fresh machine needs before `hil boot` or `hil run`; each part is a no-op when present. */
export async function runSetup(opts: SetupOptions = {}): Promise<SetupReport> {
  const installedPackages = await ensureHostPackages(setupPackages(opts));
  const qemu = await ensureQemu();
  const kernelSource = { base: DEFAULT_KERNEL, dir: await ensureBaseSource(DEFAULT_KERNEL) };
  const lava: LavaSetup = { lavaRun: findLavaRun() };
  if (opts.lava) {
    const types = await ensureLavaDeviceTypes();
    lava.deviceTypes = { dir: types.dir, deb: types.deb };
  }
  return { installedPackages, qemu, kernelSource, browser: findChromium(), lava };
}
