/**
 * The boot limits a built kernel needs from its config. A KASAN kernel (`--config debug`) under TCG
 * boots several times slower than the others: its initramfs alone takes 40 s or more to unpack on a
 * busy 2-core host (harness/console/slow-boot.ts), and SSH answers after 100 s or more.
 */
import { readFileSync } from "node:fs";
import type { KernelArtifact } from "./types.ts";

function isKasanKernel(kernel: Pick<KernelArtifact, "config">): boolean {
  try {
    return /^CONFIG_KASAN=y$/m.test(readFileSync(kernel.config, "utf8"));
  } catch {
    return false;
  }
}

/** Absent: the launcher's defaults (under TCG, 120 s to SSH and 45 s of console silence). */
export function kernelBootLimits(kernel: Pick<KernelArtifact, "config">): {
  bootTimeoutMs?: number;
  stallMs?: number;
} {
  return isKasanKernel(kernel) ? { bootTimeoutMs: 480_000, stallMs: 180_000 } : {};
}
