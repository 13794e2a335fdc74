import type { QemuInstall } from "../qemu/launch/types.ts";
import { ensureQemu } from "../qemu/provision/qemu.ts";
import { ensureHostPackages } from "../util/apt.ts";
import { DEFAULT_KERNEL } from "./defaults.ts";
import { TOOLS_HOST_PACKAGES } from "./image/guest-tools.ts";
import { IMAGE_HOST_PACKAGES } from "./image/initramfs.ts";
import { ensureBaseSource, KERNEL_HOST_PACKAGES } from "./kernel/build.ts";
import { BROWSER_HOST_PACKAGES } from "./report/browser.ts";

export interface SetupReport {
  installedPackages: string[];
  qemu: QemuInstall;
  kernelSource: { base: string; dir: string };
}

/** Everything a fresh machine needs before `hil boot` or `hil run`; each part is a no-op when present. */
export async function runSetup(): Promise<SetupReport> {
  // QEMU's build dependencies are installed by ensureQemu, and only when it has to build.
  // chromium draws the HTML report's screenshot (hil report --format html --screenshot)
  const wanted = [
    ...new Set([
      ...KERNEL_HOST_PACKAGES,
      ...IMAGE_HOST_PACKAGES,
      ...TOOLS_HOST_PACKAGES,
      ...BROWSER_HOST_PACKAGES,
    ]),
  ];
  const installedPackages = await ensureHostPackages(wanted);
  const qemu = await ensureQemu();
  const kernelSource = { base: DEFAULT_KERNEL, dir: await ensureBaseSource(DEFAULT_KERNEL) };
  return { installedPackages, qemu, kernelSource };
}
