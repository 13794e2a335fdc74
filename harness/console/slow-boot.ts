/**
 * Hung-task reports that say the guest booted slowly, not that its kernel is broken: init
 * (swapper/1) blocked in populate_rootfs, waiting for the initramfs to be unpacked
 * (init/initramfs.c). A KASAN kernel (`--config debug`) under TCG unpacks the image for 40 s or
 * more, past the 10 s hung-task timeout of guest/kconfig/base.config, at every boot; a very busy
 * host can do the same to any kernel. The boot-time console checks leave them out and say so.
 */
import type { ConsoleEvent } from "./parse.ts";

export function isSlowBootWait(e: Pick<ConsoleEvent, "kind" | "frames">): boolean {
  return e.kind === "hung-task" && e.frames.some((f) => f.reliable && f.fn === "populate_rootfs");
}

/** The events that are findings, and how many slow-boot waits were left out. */
export function withoutSlowBootWaits<E extends Pick<ConsoleEvent, "kind" | "frames">>(
  events: readonly E[],
): { events: E[]; slowBootWaits: number } {
  const kept = events.filter((e) => !isSlowBootWait(e));
  return { events: kept, slowBootWaits: events.length - kept.length };
}

export function slowBootNote(count: number): string {
  return count === 0
    ? ""
    : ` (${count} hung-task report(s) of init waiting for the initramfs to unpack, a boot slower than the 10 s detector, left out)`;
}
