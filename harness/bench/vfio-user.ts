/**
 * Benchmark of the vfio-user server with hil-testdev, measured from inside a real guest:
 * MMIO round trips (a BAR0 register read; a posted write) and DMA throughput (device fill and
 * copy between the driver's coherent buffers), for both DMA paths (shared memory, messages).
 *
 *   node --import tsx harness/bench/vfio-user.ts [--kernel debian:6.12] [--mmio 2000] [--json]
 *
 * Progress goes to stderr, the table (or JSON) to stdout.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startServerProcess } from "../../qemu/device-server/process.ts";
import { vfioUserPciArgs } from "../../qemu/launch/cmdline.ts";
import { type Guest, startGuest } from "../../qemu/launch/guest.ts";
import {
  findTestdev,
  loadTestdevModule,
  resultFields,
  testdevCommand,
} from "../../qemu/testdev/guest-ops.ts";
import { isHilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { buildImageFor } from "./vfio-user-guest.ts";

interface DmaFigure {
  op: "fill" | "copy";
  bytes: number;
  count: number;
  /** MB/s (10^6 bytes per second) over the whole commands, doorbell to interrupt */
  mbPerS: number;
  /** µs per command */
  usPerOp: number;
}

interface PathFigures {
  path: "shared" | "messages";
  accel: string;
  mmioReadUs: number;
  mmioPostedWriteUs: number;
  dma: DmaFigure[];
}

const DMA_CASES: { op: "fill" | "copy"; bytes: number; count: number }[] = [
  { op: "fill", bytes: 4096, count: 50 },
  { op: "copy", bytes: 4096, count: 50 },
  { op: "fill", bytes: 65536, count: 20 },
  { op: "copy", bytes: 65536, count: 20 },
  { op: "fill", bytes: 1 << 20, count: 5 },
  { op: "copy", bytes: 1 << 20, count: 5 },
];

async function measure(kernelSpec: string, shared: boolean, mmioCount: number): Promise<PathFigures> {
  const image = await buildImageFor(kernelSpec);
  const dir = mkdtempSync(join(tmpdir(), "hil-vfu-bench-"));
  const socket = join(dir, "testdev.sock");
  const server = await startServerProcess({ socketPath: socket });
  let guest: Guest | undefined;
  try {
    guest = await startGuest({
      qemu: image.qemu,
      kernel: image.kernel.bzImage,
      initrd: image.initrd,
      memoryMiB: 1024,
      sharedMemory: shared,
      extraQemuArgs: vfioUserPciArgs(socket, "testdev"),
    });
    const dev = await findTestdev(guest);
    await loadTestdevModule(guest, image.module.path, dev);
    const step = progress.step(`[bench] ${shared ? "shared memory" : "messages"}`);
    // Warm up (JIT, first touch of the buffers) before measuring.
    await testdevCommand(guest, dev, "bench_dma fill 65536 5");
    await testdevCommand(guest, dev, "bench_dma copy 65536 5");
    const mmio = resultFields(await testdevCommand(guest, dev, `bench_mmio ${mmioCount}`));
    const dma: DmaFigure[] = [];
    for (const [i, c] of DMA_CASES.entries()) {
      step.update(i, DMA_CASES.length, `${c.op} ${c.bytes} B`);
      const r = resultFields(
        await testdevCommand(guest, dev, `bench_dma ${c.op} ${c.bytes} ${c.count}`, 600_000),
      );
      const ns = Number(r.ns);
      dma.push({ ...c, mbPerS: (c.bytes * c.count * 1000) / ns, usPerOp: ns / c.count / 1000 });
    }
    step.succeed();
    return {
      path: shared ? "shared" : "messages",
      accel: guest.timings.accel,
      mmioReadUs: Number(mmio.read_ns) / 1000,
      mmioPostedWriteUs: Number(mmio.write_ns) / 1000,
      dma,
    };
  } finally {
    await guest?.dispose();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(results: PathFigures[]): string {
  const lines: string[] = [];
  const f = (n: number, d = 1) => n.toFixed(d).padStart(9);
  lines.push(`vfio-user hil-testdev, measured in the guest (${results[0]?.accel ?? "?"})`);
  lines.push("");
  lines.push(`${"".padEnd(28)}${results.map((r) => r.path.padStart(12)).join("")}`);
  lines.push(
    `${"MMIO read round trip (µs)".padEnd(28)}${results.map((r) => `   ${f(r.mmioReadUs)}`).join("")}`,
  );
  lines.push(
    `${"MMIO posted write (µs)".padEnd(28)}${results.map((r) => `   ${f(r.mmioPostedWriteUs)}`).join("")}`,
  );
  for (const [i, c] of DMA_CASES.entries()) {
    const label = `DMA ${c.op} ${c.bytes >= 1 << 20 ? `${c.bytes >> 20} MiB` : `${c.bytes >> 10} KiB`} (MB/s)`;
    lines.push(`${label.padEnd(28)}${results.map((r) => `   ${f(r.dma[i]?.mbPerS ?? 0)}`).join("")}`);
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kernel: { type: "string", default: "debian:6.12" },
      mmio: { type: "string", default: "2000" },
      json: { type: "boolean", default: false },
    },
  });
  const mmio = Number(values.mmio);
  const results: PathFigures[] = [];
  for (const shared of [true, false]) results.push(await measure(values.kernel as string, shared, mmio));
  process.stdout.write(values.json ? `${JSON.stringify(results, null, 2)}\n` : `${table(results)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
  process.exit(1);
});
