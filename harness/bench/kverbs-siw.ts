/**
 * SEND and RDMA WRITE work request throughput and latency over soft-iWARP loopback in a guest,
 * measured in the kernel by hil_kverbs (its bench command: poll=direct CQs, the worker posts and
 * polls). The baseline the erdma model is later compared with.
 *
 *   node --import tsx harness/bench/kverbs-siw.ts [--kernel debian:6.12] [--iters 20000] [--json]
 *
 * Progress goes to stderr, the table (or JSON) to stdout.
 */
import { parseArgs } from "node:util";
import { type Guest, startGuest } from "../../qemu/launch/guest.ts";
import { ensureQemu } from "../../qemu/provision/qemu.ts";
import { buildInitramfs } from "../image/initramfs.ts";
import { buildGuestModulesLayer } from "../image/kmod.ts";
import { buildKernel } from "../kernel/build.ts";
import { addSiwLink, KverbsDriver, kvCommand } from "../kverbs/driver.ts";
import { buildKverbsModule } from "../kverbs/module.ts";
import { type BenchRecord, recordsOf } from "../kverbs/trace.ts";
import { isHilError } from "../util/errors.ts";
import { progress } from "../util/progress.ts";

const GUEST_IP = "10.0.2.15";
const BUF = 65536;

interface BenchCase {
  label: string;
  op: "send" | "write";
  len: number;
  depth: number;
  signal: number;
  /** fraction of --iters */
  share: number;
}

const CASES: BenchCase[] = [
  { label: "rate, 64 B, depth 32", op: "send", len: 64, depth: 32, signal: 8, share: 1 },
  { label: "rate, 64 B, depth 32", op: "write", len: 64, depth: 32, signal: 8, share: 1 },
  { label: "latency, 64 B, depth 1", op: "send", len: 64, depth: 1, signal: 1, share: 0.1 },
  { label: "latency, 64 B, depth 1", op: "write", len: 64, depth: 1, signal: 1, share: 0.1 },
  { label: "bandwidth, 64 KiB, depth 16", op: "send", len: 65536, depth: 16, signal: 4, share: 0.05 },
  { label: "bandwidth, 64 KiB, depth 16", op: "write", len: 65536, depth: 16, signal: 4, share: 0.05 },
];

interface Figure {
  label: string;
  op: string;
  len: number;
  depth: number;
  iters: number;
  wrsPerS: number;
  mbPerS: number;
  latP50Us: number | undefined;
  latP99Us: number | undefined;
}

function figure(c: BenchCase, r: BenchRecord): Figure {
  return {
    label: c.label,
    op: c.op,
    len: c.len,
    depth: c.depth,
    iters: r.iters,
    wrsPerS: r.wrs_per_s,
    mbPerS: r.ns ? (r.bytes * 1000) / r.ns : 0,
    latP50Us: r.lat_p50_ns === undefined ? undefined : r.lat_p50_ns / 1000,
    latP99Us: r.lat_p99_ns === undefined ? undefined : r.lat_p99_ns / 1000,
  };
}

async function measure(
  base: string,
  iters: number,
): Promise<{ release: string; accel: string; figures: Figure[] }> {
  const kernel = await buildKernel({ base, configs: [] });
  const mod = await buildKverbsModule(kernel);
  const layer = await buildGuestModulesLayer([mod]);
  const [qemu, initrd] = await Promise.all([ensureQemu(), buildInitramfs(kernel, { extraLayers: [layer] })]);
  let guest: Guest | undefined;
  try {
    guest = await startGuest({ qemu, kernel: kernel.bzImage, initrd: initrd.path, memoryMiB: 1024 });
    await addSiwLink(guest);
    const kv = await KverbsDriver.load(guest, mod, { inImage: true });
    const qp = { pd: "pd0", sq: 128, rq: 128, buf: BUF };
    await kv.run([
      kvCommand("device", { addr: GUEST_IP }),
      kvCommand("pd", { name: "pd0", rkey: "global" }),
      kvCommand("cq", { name: "ca", depth: 1024 }),
      kvCommand("cq", { name: "cb", depth: 1024 }),
      kvCommand("listen", { name: "L", addr: GUEST_IP, port: 7471, qp: "b", scq: "cb", rcq: "cb", ...qp }),
      kvCommand("connect", { name: "a", addr: GUEST_IP, port: 7471, scq: "ca", rcq: "ca", ...qp }),
      // warm-up
      kvCommand("bench", { qp: "a", op: "send", iters: 500, depth: 8, len: 64, signal: 1 }),
    ]);
    const step = progress.step(`[bench] siw loopback on Linux ${kernel.release}`);
    const figures: Figure[] = [];
    for (const [i, c] of CASES.entries()) {
      step.update(i, CASES.length, `${c.op} ${c.label}`);
      const n = Math.max(100, Math.round(iters * c.share));
      const r = await kv.run(
        [
          kvCommand("bench", {
            qp: "a",
            op: c.op,
            iters: n,
            depth: c.depth,
            len: c.len,
            signal: c.signal,
            timeout: 600_000,
          }),
        ],
        { timeoutMs: 660_000 },
      );
      const rec = recordsOf(r.records, "bench")[0];
      if (!rec) throw new Error(`no bench record for ${c.op} ${c.label}`);
      figures.push(figure(c, rec));
    }
    step.succeed();
    await kv.unload();
    return { release: kernel.release, accel: guest.timings.accel, figures };
  } finally {
    await guest?.dispose();
  }
}

function table(release: string, accel: string, figures: Figure[]): string {
  const num = (n: number | undefined, d = 1) => (n === undefined ? "-" : n.toFixed(d)).padStart(10);
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kernel: { type: "string", default: "debian:6.12" },
      iters: { type: "string", default: "20000" },
      json: { type: "boolean", default: false },
    },
  });
  const iters = Number(values.iters);
  if (!Number.isInteger(iters) || iters < 100)
    throw new Error(`--iters ${values.iters}: a whole number >= 100`);
  const r = await measure(values.kernel as string, iters);
  process.stdout.write(
    values.json ? `${JSON.stringify(r, null, 2)}\n` : `${table(r.release, r.accel, r.figures)}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
  process.exit(1);
});
