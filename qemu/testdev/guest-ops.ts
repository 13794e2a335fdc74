/**
 * What a test or benchmark does inside a guest with hil-testdev: find the device in sysfs, poke
 * BAR0 with busybox devmem, load the guest driver, run its commands, read the MSI-X count.
 */
import { HilError } from "../../util/errors.ts";
import type { Guest } from "../launch/guest.ts";
import { TESTDEV_DEVICE, TESTDEV_VENDOR } from "./device.ts";

type Shell = Pick<Guest, "exec" | "copyTo">;

export interface GuestTestdev {
  /** PCI address, e.g. 0000:00:03.0 */
  bdf: string;
  sysfs: string;
  vendor: number;
  device: number;
  subsystemVendor: number;
  subsystemDevice: number;
  classCode: number;
  /** BAR0 physical address and size (from the sysfs resource file) */
  bar0: bigint;
  bar0Size: bigint;
}

/** Runs a command, failing with its output when it exits non-zero. */
export async function sh(guest: Shell, command: string, timeoutMs = 60_000): Promise<string> {
  const r = await guest.exec(command, { timeoutMs });
  if (r.exitCode !== 0) {
    throw new HilError(`guest command failed (${r.exitCode}): ${command}`, {
      detail: `${r.stdout}\n${r.stderr}`.trim(),
    });
  }
  return r.stdout;
}

const hex = (s: string) => Number.parseInt(s.trim(), 16);

export async function findTestdev(guest: Shell): Promise<GuestTestdev> {
  const out = await sh(
    guest,
    `for d in /sys/bus/pci/devices/*; do if [ "$(cat $d/vendor)" = "0x${TESTDEV_VENDOR.toString(16)}" ] && [ "$(cat $d/device)" = "0x${TESTDEV_DEVICE.toString(16)}" ]; then echo $d; cat $d/vendor $d/device $d/subsystem_vendor $d/subsystem_device $d/class; head -n 1 $d/resource; fi; done`,
  );
  const lines = out.trim().split("\n").filter(Boolean);
  if (lines.length < 7)
    throw new HilError("the guest does not see hil-testdev on its PCI bus", { detail: out });
  const sysfs = lines[0] as string;
  const [start, end] = (lines[6] as string)
    .trim()
    .split(/\s+/)
    .map((x) => BigInt(x));
  return {
    bdf: sysfs.split("/").pop() as string,
    sysfs,
    vendor: hex(lines[1] as string),
    device: hex(lines[2] as string),
    subsystemVendor: hex(lines[3] as string),
    subsystemDevice: hex(lines[4] as string),
    classCode: hex(lines[5] as string),
    bar0: start ?? 0n,
    bar0Size: (end ?? 0n) - (start ?? 0n) + 1n,
  };
}

/** busybox devmem read of `width` bits at a physical address. */
export async function devmemRead(
  guest: Shell,
  address: bigint,
  width: 8 | 16 | 32 | 64 = 32,
): Promise<bigint> {
  const out = await sh(guest, `devmem 0x${address.toString(16)} ${width}`);
  return BigInt(out.trim());
}

export async function devmemWrite(
  guest: Shell,
  address: bigint,
  value: bigint,
  width: 8 | 16 | 32 | 64 = 32,
): Promise<void> {
  await sh(guest, `devmem 0x${address.toString(16)} ${width} 0x${value.toString(16)}`);
}

/** Copies hil_testdev.ko into the guest and loads it; returns the driver's sysfs dir for the device. */
export async function loadTestdevModule(
  guest: Shell,
  koPath: string,
  dev: GuestTestdev,
  params = "",
): Promise<string> {
  await guest.copyTo(koPath, "/tmp/hil_testdev.ko");
  await sh(guest, `insmod /tmp/hil_testdev.ko ${params}`.trim());
  const bound = await sh(guest, `readlink ${dev.sysfs}/driver || true`);
  if (!bound.trim().endsWith("/hil_testdev")) {
    const dmesg = await sh(guest, "dmesg | tail -n 20");
    throw new HilError("hil_testdev did not bind to the device", { detail: dmesg });
  }
  return dev.sysfs;
}

/** Runs one driver command (see guest/testdev/hil_testdev.c); returns its result line. */
export async function testdevCommand(
  guest: Shell,
  dev: GuestTestdev,
  command: string,
  timeoutMs = 120_000,
): Promise<string> {
  const r = await guest.exec(
    `echo '${command}' > ${dev.sysfs}/cmd; rc=$?; cat ${dev.sysfs}/result; exit $rc`,
    {
      timeoutMs,
    },
  );
  const line = r.stdout.trim();
  if (r.exitCode !== 0 || !line.startsWith("ok")) {
    throw new HilError(`hil_testdev command failed: ${command}`, { detail: `${line}\n${r.stderr}`.trim() });
  }
  return line;
}

/** key=value pairs of a result line ("ok ns=12 n=3" -> {ns: "12", n: "3"}). */
export function resultFields(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of line.split(/\s+/).slice(1)) {
    const eq = part.indexOf("=");
    if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
    else out._ = part;
  }
  return out;
}

/** The hil_testdev line of /proc/interrupts: total count over all CPUs, and the line itself. */
export async function interruptCount(guest: Shell): Promise<{ count: number; line: string }> {
  const out = await sh(guest, "grep hil_testdev /proc/interrupts || true");
  const line = out.trim().split("\n")[0] ?? "";
  if (!line) return { count: 0, line: "" };
  const fields = line.trim().split(/\s+/).slice(1);
  let count = 0;
  for (const f of fields) {
    if (!/^\d+$/.test(f)) break;
    count += Number(f);
  }
  return { count, line: line.trim() };
}

/** FNV-1a 32, as the driver's "sum" command computes it. */
export function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The bytes the driver's "seed" command writes: byte i = (seed + 7 i) & 0xff. */
export function seededBytes(len: number, seed: number): Uint8Array {
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) out[i] = (seed + i * 7) & 0xff;
  return out;
}
