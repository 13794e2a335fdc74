/**
 * User-level SEND and RDMA WRITE message rate and latency (perftest, rdma_cm connections) over the
 * emulated erdma, in loopback inside one guest and between two guests on the fabric, beside the
 * same workload over soft-iWARP in the same guests (siw attached to the same NICs after the erdma
 * module is removed), as ratios.
 *
 *   node --import tsx harness/bench/perftest-pair.ts [--kernel debian:6.12] [--config smp] [--iters 2000] [--json]
 */

import { progress } from "../../util/progress.ts";
import { type BootedPair, bootPair, type PairedGuest, prepareGuest } from "../boot.ts";
import type { KernelRequest } from "../kernel/types.ts";
import { runBench } from "./bench-cli.ts";
import { PERFTEST_PORT, startServer } from "./guest-listen.ts";
import { num } from "./kverbs-cases.ts";
import { MPA_REPLY_RACE, MPA_REPLY_TIMEOUT } from "./mpa-reply-race.ts";

type Tool = "ib_send_bw" | "ib_write_bw" | "ib_send_lat" | "ib_write_lat";
const TOOLS: Tool[] = ["ib_send_bw", "ib_write_bw", "ib_send_lat", "ib_write_lat"];

interface Figure {
  tool: Tool;
  where: "loopback" | "two guests";
  /** bw tools: messages per second; lat tools: typical latency in µs */
  value: number;
}

/** Runs one perftest pair (server in `server`, client in `client`) and returns its figure. */
async function perftest(
  server: PairedGuest,
  client: PairedGuest,
  tool: Tool,
  dev: string,
  iters: number,
): Promise<number> {
  const args = `-R -d ${dev} -n ${iters} -s 64`;
  const up = await server.exec(startServer(`${tool} ${args}`, PERFTEST_PORT, `/tmp/${tool}.srv`));
  if (up.exitCode !== 0) throw new Error(`${tool} on ${dev}: its server did not start: ${up.stderr}`);
  let r = await client.exec(`timeout 300 ${tool} ${args} ${server.fabricIp}`, { timeoutMs: 330_000 });
  if (r.exitCode !== 0 && MPA_REPLY_TIMEOUT.test(r.stderr)) {
    progress.info(`[bench] ${tool}: ${MPA_REPLY_RACE}; once more`);
    await server.exec(
      `killall -q ${tool}; ${startServer(`${tool} ${args}`, PERFTEST_PORT, `/tmp/${tool}.srv`)}`,
    );
    r = await client.exec(`timeout 300 ${tool} ${args} ${server.fabricIp}`, { timeoutMs: 330_000 });
  }
  if (r.exitCode !== 0) throw new Error(`${tool} on ${dev} exited ${r.exitCode}: ${r.stdout}\n${r.stderr}`);
  const line = r.stdout.split("\n").find((l) => /^\s*64\s+\d+\s/.test(l));
  const cols = line?.trim().split(/\s+/).map(Number) ?? [];
  // bw: #bytes #iterations BW-peak BW-average MsgRate[Mpps]; lat: #bytes #iterations t_min t_max t_typical ...
  const value = tool.endsWith("_bw") ? (cols[4] ?? Number.NaN) * 1e6 : (cols[4] ?? Number.NaN);
  if (!Number.isFinite(value)) throw new Error(`${tool}: no result line in\n${r.stdout}`);
  await server.exec(`sleep 1; killall -q ${tool}; true`);
  return value;
}

async function measureDriver(pair: BootedPair, dev: string, iters: number, label: string): Promise<Figure[]> {
  const [g0, g1] = pair.guests;
  const step = progress.step(`[bench] perftest over ${label}`);
  const figures: Figure[] = [];
  const jobs = TOOLS.flatMap((tool) => [
    { tool, where: "loopback" as const, server: g0, client: g0 },
    { tool, where: "two guests" as const, server: g0, client: g1 },
  ]);
  for (const [i, j] of jobs.entries()) {
    step.update(i, jobs.length, `${j.tool} ${j.where}`);
    figures.push({
      tool: j.tool,
      where: j.where,
      value: await perftest(j.server, j.client, j.tool, dev, iters),
    });
  }
  step.succeed();
  return figures;
}

async function measure(req: KernelRequest, iters: number) {
  const prepared = await prepareGuest(req);
  let pair: BootedPair | undefined;
  try {
    pair = await bootPair(prepared, { memoryMiB: 1024 });
    const erdma = await measureDriver(pair, "erdma_0", iters, "the erdma model");
    for (const g of pair.guests) {
      const r = await g.exec("rmmod erdma && rdma link add siw0 type siw netdev eth1 && rdma link", {
        timeoutMs: 30_000,
      });
      if (r.exitCode !== 0) throw new Error(`switching guest ${g.index} to siw failed: ${r.stderr}`);
    }
    const siw = await measureDriver(pair, "siw0", iters, "siw");
    return { release: prepared.kernel.release, accel: pair.guests[0].timings.accel, erdma, siw };
  } finally {
    await pair?.dispose();
  }
}

function table(r: Awaited<ReturnType<typeof measure>>): string {
  const lines = [
    `perftest over the erdma model vs soft-iWARP (Linux ${r.release}, ${r.accel}), 64-byte messages`,
    "",
    `${"tool".padEnd(14)}${"where".padEnd(12)}${"erdma".padStart(12)}${"siw".padStart(12)}${"ratio".padStart(9)}  unit`,
  ];
  for (const [i, e] of r.erdma.entries()) {
    const s = r.siw[i];
    if (!s) continue;
    const bw = e.tool.endsWith("_bw");
    lines.push(
      `${e.tool.padEnd(14)}${e.where.padEnd(12)}${num(e.value, bw ? 0 : 1, 12)}${num(s.value, bw ? 0 : 1, 12)}${num(e.value / s.value, 3, 9)}  ${bw ? "msg/s" : "µs typical"}`,
    );
  }
  lines.push("", "ratio: erdma / siw (msg/s: below 1 is slower; latency: above 1 is slower)");
  return lines.join("\n");
}

runBench(2000, measure, table);
