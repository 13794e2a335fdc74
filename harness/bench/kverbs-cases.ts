/**
 * The in-kernel verbs workload both verbs benchmarks run (hil_kverbs's bench command on a loopback
 * RC pair with direct-polled CQs): the cases, the pair set-up, and one figure per case.
 */

import { progress } from "../../util/progress.ts";
import type { KverbsDriver } from "../executor/kverbs-driver.ts";
import { commandLine } from "../protocol/commands.ts";
import { type BenchRecord, recordsOf } from "../protocol/trace.ts";

export const GUEST_IP = "10.0.2.15";
const BUF = 65536;

export interface BenchCase {
  label: string;
  op: "send" | "write";
  len: number;
  depth: number;
  signal: number;
  /** fraction of --iters */
  share: number;
}

export const CASES: BenchCase[] = [
  { label: "rate, 64 B, depth 32", op: "send", len: 64, depth: 32, signal: 8, share: 1 },
  { label: "rate, 64 B, depth 32", op: "write", len: 64, depth: 32, signal: 8, share: 1 },
  { label: "latency, 64 B, depth 1", op: "send", len: 64, depth: 1, signal: 1, share: 0.1 },
  { label: "latency, 64 B, depth 1", op: "write", len: 64, depth: 1, signal: 1, share: 0.1 },
  { label: "bandwidth, 64 KiB, depth 16", op: "send", len: 65536, depth: 16, signal: 4, share: 0.05 },
  { label: "bandwidth, 64 KiB, depth 16", op: "write", len: 65536, depth: 16, signal: 4, share: 0.05 },
];

export interface Figure {
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

/** Connects the loopback pair a<->b on the device that owns GUEST_IP, with a warm-up. */
export async function connectPair(kv: KverbsDriver, port = 7471): Promise<void> {
  const qp = { pd: "pd0", sq: 128, rq: 128, buf: BUF };
  await kv.run(
    [
      commandLine("device", { addr: GUEST_IP }),
      commandLine("pd", { name: "pd0", rkey: "global" }),
      commandLine("cq", { name: "ca", depth: 1024 }),
      commandLine("cq", { name: "cb", depth: 1024 }),
      commandLine("listen", { name: "L", addr: GUEST_IP, port, qp: "b", scq: "cb", rcq: "cb", ...qp }),
      commandLine("connect", { name: "a", addr: GUEST_IP, port, scq: "ca", rcq: "ca", ...qp }),
      commandLine("bench", { qp: "a", op: "send", iters: 200, depth: 8, len: 64, signal: 1 }),
    ],
    { timeoutMs: 120_000 },
  );
}

/**
 * Runs every case on the connected pair; `iters` scales each case by its share. Each case runs
 * once unmeasured first, as many WRs: the device model's JIT compiles its hot paths over the first
 * thousands of WRs, so a short run measured its warm-up (a SEND rate 0.43 of siw's at 4000 WRs,
 * 0.53 at 20000, one session of 2026-12-07), not the rate it keeps.
 */
export async function runCases(kv: KverbsDriver, iters: number, title: string): Promise<Figure[]> {
  const step = progress.step(title);
  const figures: Figure[] = [];
  for (const [i, c] of CASES.entries()) {
    step.update(i, CASES.length, `${c.op} ${c.label}`);
    const n = Math.max(100, Math.round(iters * c.share));
    await benchOnce(kv, c, n);
    const rec = await benchOnce(kv, c, n);
    figures.push(figure(c, rec));
  }
  step.succeed();
  return figures;
}

async function benchOnce(kv: KverbsDriver, c: BenchCase, n: number): Promise<BenchRecord> {
  const r = await kv.run(
    [
      commandLine("bench", {
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
  return rec;
}

export function num(n: number | undefined, d = 1, width = 10): string {
  return (n === undefined ? "-" : n.toFixed(d)).padStart(width);
}
