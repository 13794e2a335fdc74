import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";

/** Why a tmpfs cannot be mounted here (not root), or undefined when it can. */
export function noTmpfs(): string | undefined {
  return process.getuid?.() === 0 ? undefined : "mounting a tmpfs needs root";
}

/**
 * A real tmpfs of `size` (mount(8) syntax: 64k, 4m) on a new directory, unmounted and removed when
 * the test ends, whether it passed or not.
 */
export function smallTmpfs(t: Test, size: string): string {
  const dir = mkdtempSync(join(tmpdir(), "hil-tmpfs-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0755`, "tmpfs", dir]);
  t.teardown(() => {
    // lazily: a process that still has a file open there must not keep the mount
    execFileSync("umount", ["-l", dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}
