import { existsSync, readFileSync } from "node:fs";
import type { Test } from "tap";
import {
  type BootedGuest,
  type BootOptions,
  bootPrepared,
  type PreparedGuest,
  prepareGuest,
} from "../../harness/boot.ts";

export type BootArtifacts = PreparedGuest;

/** QEMU, a kernel (default debian:6.12) and its initramfs, built or taken from the cache. */
export function bootArtifacts(base = "debian:6.12"): Promise<BootArtifacts> {
  return prepareGuest({ base, configs: [] });
}

/** A guest booted from `prepared` for `t`, disposed of when `t` ends. */
export async function bootForTest(t: Test, prepared: PreparedGuest, opts: BootOptions): Promise<BootedGuest> {
  const guest = await bootPrepared(prepared, opts);
  t.teardown(() => guest.dispose());
  return guest;
}

/** True while a process with this pid runs; a zombie (dead, not yet reaped by init) does not count. */
export function processExists(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Waits up to `ms` for a process to be gone (a killed orphan is reaped by init in its own time). */
export async function processGone(pid: number, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processExists(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

export function gone(path: string): boolean {
  return !existsSync(path);
}
