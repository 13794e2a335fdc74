/** What every kernel hil builds must carry, as the kernel tests check it. */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Test } from "tap";
import type { KernelArtifact } from "../../harness/kernel/types.ts";

function moduleFile(a: KernelArtifact, rel: string): string {
  return join(a.modulesRoot, "lib", "modules", a.release, "kernel", rel);
}

/** A bootable kernel of `release` with erdma and siw as modules, depmod run and the harness's options. */
export function assertKernel(t: Test, a: KernelArtifact, release: RegExp) {
  t.match(a.release, release);
  t.ok(statSync(a.bzImage).size > 500_000, "bzImage");
  t.ok(existsSync(moduleFile(a, "drivers/infiniband/hw/erdma/erdma.ko")), "erdma.ko");
  t.ok(existsSync(moduleFile(a, "drivers/infiniband/sw/siw/siw.ko")), "siw.ko");
  t.ok(existsSync(join(a.modulesRoot, "lib", "modules", a.release, "modules.dep")), "depmod ran");
  const config = readFileSync(a.config, "utf8");
  for (const line of [
    "CONFIG_INFINIBAND_ERDMA=m",
    "CONFIG_RDMA_SIW=m",
    "CONFIG_ACPI=y",
    "CONFIG_DEFAULT_HUNG_TASK_TIMEOUT=10",
  ]) {
    t.ok(config.includes(`${line}\n`), line);
  }
  t.ok(existsSync(join(a.buildDir, "Module.symvers")), "the build tree can build external modules");
}
