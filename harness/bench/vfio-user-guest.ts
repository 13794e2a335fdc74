/**
 * Shared setup for the vfio-user guest test and benchmark: kernel, initramfs, QEMU and the
 * hil_testdev module for a kernel spec.
 */
import { buildInitramfs } from "../../harness/image/initramfs.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import type { KernelArtifact } from "../../harness/kernel/types.ts";
import type { QemuInstall } from "../../qemu/launch/types.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { type BuiltModule, buildTestdevModule } from "../image/testdev-module.ts";

export interface TestdevImage {
  qemu: QemuInstall;
  kernel: KernelArtifact;
  initrd: string;
  module: BuiltModule;
}

export async function buildImageFor(base: string): Promise<TestdevImage> {
  const kernel = await buildKernel({ base, configs: [] });
  const [qemu, initramfs, module] = await Promise.all([
    ensureQemu(),
    buildInitramfs(kernel),
    buildTestdevModule(kernel),
  ]);
  return { qemu, kernel, initrd: initramfs.path, module };
}
