/**
 * SEND and RDMA WRITE work request throughput and latency over the emulated erdma (the upstream
 * driver, the model behind vfio-user) beside the same workload on soft-iWARP in the same guest, as
 * ratios. One guest: the erdma loopback pair is measured first; then the erdma module is removed,
 * siw is attached to the same NIC and the pair is measured again. Measured in the kernel by
 * hil_kverbs (bench command, direct-polled CQs).
 *
 *   node --import tsx harness/bench/erdma-vs-siw.ts [--kernel debian:6.12] [--config smp] [--iters 4000] [--json]
 */

import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { type BootedGuest, bootPrepared } from "../boot.ts";
import { addSiwLink, KverbsDriver } from "../executor/kverbs-driver.ts";
import { buildGuestToolsLayer } from "../image/guest-tools.ts";
import { buildInitramfs } from "../image/initramfs.ts";
import { buildGuestModulesLayer } from "../image/kmod.ts";
import { buildKverbsModule } from "../image/kverbs-module.ts";
import { buildKernel } from "../kernel/build.ts";
import type { KernelRequest } from "../kernel/types.ts";
import { commandLine } from "../protocol/commands.ts";
import { runBench } from "./bench-cli.ts";
import { connectPair, type Figure, num, runCases } from "./kverbs-cases.ts";

interface Result {
  release: string;
  accel: string;
  erdma: Figure[];
  siw: Figure[];
}

async function measure(req: KernelRequest, iters: number): Promise<Result> {
  const kernel = await buildKernel(req);
  const mod = await buildKverbsModule(kernel);
  const layer = await buildGuestModulesLayer([mod]);
  const [qemu, tools] = await Promise.all([ensureQemu(), buildGuestToolsLayer()]);
  const image = await buildInitramfs(kernel, { extraLayers: [tools, layer] });
  let guest: BootedGuest | undefined;
  try {
    guest = await bootPrepared({ qemu, kernel, initrd: image.path }, { memoryMiB: 1024 });
    const kv = await KverbsDriver.load(guest, mod, { inImage: true });
    await connectPair(kv);
    const erdma = await runCases(kv, iters, `[bench] erdma model loopback on Linux ${kernel.release}`);
    await kv.run([commandLine("reset")]);
    const rm = await guest.exec("rmmod erdma && rdma link", { timeoutMs: 30_000 });
    if (rm.exitCode !== 0) throw new Error(`rmmod erdma failed: ${rm.stderr}`);
    await addSiwLink(guest);
    await connectPair(kv, 7472);
    const siw = await runCases(kv, iters, `[bench] siw loopback on Linux ${kernel.release}`);
    await kv.unload();
    return { release: kernel.release, accel: guest.timings.accel, erdma, siw };
  } finally {
    await guest?.dispose();
  }
}

function table(r: Result): string {
  const lines = [
    `erdma model vs soft-iWARP, loopback in one guest (Linux ${r.release}, ${r.accel}), hil_kverbs in the kernel`,
    "",
    `${"case".padEnd(30)}${"op".padEnd(7)}${"erdma WR/s".padStart(12)}${"siw WR/s".padStart(12)}${"ratio".padStart(8)}${"erdma p50".padStart(11)}${"siw p50".padStart(10)}${"ratio".padStart(8)}`,
  ];
  for (const [i, e] of r.erdma.entries()) {
    const s = r.siw[i];
    if (!s) continue;
    const lat = e.latP50Us !== undefined && s.latP50Us ? e.latP50Us / s.latP50Us : undefined;
    lines.push(
      `${e.label.padEnd(30)}${e.op.padEnd(7)}${num(e.wrsPerS, 0, 12)}${num(s.wrsPerS, 0, 12)}${num(e.wrsPerS / s.wrsPerS, 3, 8)}${num(e.latP50Us, 0, 11)}${num(s.latP50Us, 0, 10)}${num(lat, 1, 8)}`,
    );
  }
  lines.push("", "ratio: erdma / siw (throughput: below 1 is slower; latency: above 1 is slower); p50 in µs");
  return lines.join("\n");
}

runBench(4000, measure, table);
