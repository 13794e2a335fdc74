/**
 * SEND and RDMA WRITE work request throughput and latency over soft-iWARP loopback in a guest,
 * measured in the kernel by hil_kverbs (its bench command: poll=direct CQs, the worker posts and
 * polls). The baseline the erdma model is later compared with.
 *
 *   node --import tsx harness/bench/kverbs-siw.ts [--kernel debian:6.12] [--config smp] [--iters 20000] [--json]
 *
 * Progress goes to stderr, the table (or JSON) to stdout.
 */
import { type Guest, startGuest } from "../../qemu/launch/guest.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { addSiwLink, KverbsDriver } from "../executor/kverbs-driver.ts";
import { buildInitramfs } from "../image/initramfs.ts";
import { buildGuestModulesLayer } from "../image/kmod.ts";
import { buildKverbsModule } from "../image/kverbs-module.ts";
import { buildKernel } from "../kernel/build.ts";
import type { KernelRequest } from "../kernel/types.ts";
import { runBench } from "./bench-cli.ts";
import { connectPair, type Figure, num, runCases } from "./kverbs-cases.ts";

async function measure(
  req: KernelRequest,
  iters: number,
): Promise<{ release: string; accel: string; figures: Figure[] }> {
  const kernel = await buildKernel(req);
  const mod = await buildKverbsModule(kernel);
  const layer = await buildGuestModulesLayer([mod]);
  const [qemu, initrd] = await Promise.all([ensureQemu(), buildInitramfs(kernel, { extraLayers: [layer] })]);
  let guest: Guest | undefined;
  try {
    guest = await startGuest({ qemu, kernel: kernel.bzImage, initrd: initrd.path, memoryMiB: 1024 });
    await addSiwLink(guest);
    const kv = await KverbsDriver.load(guest, mod, { inImage: true });
    await connectPair(kv);
    const figures = await runCases(kv, iters, `[bench] siw loopback on Linux ${kernel.release}`);
    await kv.unload();
    return { release: kernel.release, accel: guest.timings.accel, figures };
  } finally {
    await guest?.dispose();
  }
}

function table(release: string, accel: string, figures: Figure[]): string {
  const lines = [
    `siw loopback in the guest (Linux ${release}, ${accel}), measured by hil_kverbs in the kernel`,
    "",
    `${"case".padEnd(30)}${"op".padEnd(7)}${"WR/s".padStart(10)}${"MB/s".padStart(10)}${"p50 µs".padStart(10)}${"p99 µs".padStart(10)}`,
  ];
  for (const f of figures)
    lines.push(
      `${f.label.padEnd(30)}${f.op.padEnd(7)}${num(f.wrsPerS, 0)}${num(f.mbPerS)}${num(f.latP50Us)}${num(f.latP99Us)}`,
    );
  lines.push("", "latency: post to completion polled, signaled WRs only");
  return lines.join("\n");
}

runBench(20000, measure, (r) => table(r.release, r.accel, r.figures));
