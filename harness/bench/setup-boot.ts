/**
 * Benchmark of the foundation: cold setup (QEMU build, kernel build, image build), warm rebuild
 * (nothing should be rebuilt), boot-to-first-SSH-command beside a bare `qemu -kernel`
 * boot-to-init in the same run, and the device server's MMIO read round trip (no guest:
 * mmio-round-trips.ts; the guest's own figure is vfio-user.ts's).
 *
 *   node --import tsx harness/bench/setup-boot.ts [--cold] [--runs N] [--kernel debian:6.12]
 *
 * --cold builds everything in a scratch cache (about 10 minutes on 2 cores) and removes it after;
 * without it the cold figures are skipped and the warm ones use the normal cache.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { probeBoot, resolveAccel } from "../../qemu/launch/accel.ts";
import { startGuest } from "../../qemu/launch/guest.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { buildInitramfs } from "../image/initramfs.ts";
import { buildKernel } from "../kernel/build.ts";
import { measureMmio } from "./mmio-round-trips.ts";

const { values } = parseArgs({
  options: {
    cold: { type: "boolean", default: false },
    runs: { type: "string", default: "3" },
    kernel: { type: "string", default: "debian:6.12" },
  },
});
const runs = Number(values.runs);
const base = values.kernel ?? "debian:6.12";

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await fn();
  return [value, performance.now() - start];
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function buildAll() {
  const [qemu, qemuMs] = await timed(() => ensureQemu());
  const [kernel, kernelMs] = await timed(() => buildKernel({ base, configs: [] }));
  const [image, imageMs] = await timed(() => buildInitramfs(kernel));
  return { qemu, kernel, image, qemuMs, kernelMs, imageMs };
}

const rows: Array<[string, string]> = [];
let scratch: string | undefined;
if (values.cold) {
  scratch = mkdtempSync(join(tmpdir(), "hil-bench-cache-"));
  process.env.HIL_CACHE_DIR = scratch;
  process.once("exit", () => scratch && rmSync(scratch, { recursive: true, force: true }));
  const cold = await buildAll();
  rows.push(["cold: QEMU build", seconds(cold.qemuMs)]);
  rows.push([`cold: kernel build (${base}, incl. source download)`, seconds(cold.kernelMs)]);
  rows.push(["cold: image build (incl. package download)", seconds(cold.imageMs)]);
  rows.push(["cold: total", seconds(cold.qemuMs + cold.kernelMs + cold.imageMs)]);
}
await buildAll(); // makes sure the warm pass below finds everything
const warm = await buildAll();
rows.push(["warm: QEMU (cache hit)", seconds(warm.qemuMs)]);
rows.push(["warm: kernel (cache hit)", seconds(warm.kernelMs)]);
rows.push(["warm: image (cache hit)", seconds(warm.imageMs)]);

const image = { kernel: warm.kernel.bzImage, initrd: warm.image.path };
const { accel } = await resolveAccel(warm.qemu, image);
const bare: number[] = [];
const ssh: number[] = [];
for (let i = 0; i < runs; i++) {
  const outcome = await probeBoot(warm.qemu, image, accel, 60_000);
  if (outcome.kind !== "ok")
    throw new Error(`bare boot ${i + 1} did not reach init: ${JSON.stringify(outcome)}`);
  bare.push(outcome.ms);
  const guest = await startGuest({ qemu: warm.qemu, kernel: image.kernel, initrd: image.initrd, accel });
  try {
    ssh.push(guest.timings.firstCommandMs);
  } finally {
    await guest.dispose();
  }
}
rows.push([`boot (${accel}): bare qemu -kernel to init, median of ${runs}`, seconds(median(bare))]);
rows.push([`boot (${accel}): hil guest to first SSH command, median of ${runs}`, seconds(median(ssh))]);
rows.push(["boot: ratio first-SSH / bare-init", `${(median(ssh) / median(bare)).toFixed(2)}x`]);

const micro = (us: number) => `${us.toFixed(1)} µs`;
for (const [device, trace] of [
  ["hil-testdev", false],
  ["erdma", true],
] as const) {
  const m = await measureMmio(device, trace, 10_000, 1000);
  const what = `${device}${trace ? ", trace on" : ""}`;
  rows.push([`MMIO read round trip via the device server (${what}), median`, micro(m.read.median)]);
  if (m.serverCpuUs !== undefined) rows.push([`  server CPU per round trip (${what})`, micro(m.serverCpuUs)]);
}

const width = Math.max(...rows.map(([k]) => k.length));
for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
if (scratch) rmSync(scratch, { recursive: true, force: true });
