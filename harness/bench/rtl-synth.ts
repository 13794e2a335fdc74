/**
 * The RTL queue engine, FPGA-ready, measured (issue 32): Verilator's lint (`--lint-only -Wall`,
 * clean or the first warnings), a yosys synthesis for Lattice ECP5 (`synth_ecp5`) with its LUT,
 * flip-flop and cell counts and a check that no latch is inferred (before and after mapping), the
 * RTL's size in lines, and the co-simulation's cost per request beside the TypeScript engine's
 * (the same CQE and flush-step requests, timed in this process). One run:
 *   node --import tsx harness/bench/rtl-synth.ts [--json] [--requests N]
 * Exit 1 when the lint has warnings, a latch is inferred or a tool is missing.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type QueueEngine, tsQueueEngine } from "../../qemu/erdma/queue-engine.ts";
import {
  ensureRtlEngine,
  RTL_DIR,
  RTL_SOURCES,
  RTL_TOP,
  verilatorVersion,
} from "../../qemu/erdma/rtl/build.ts";
import { loadRtlEngine } from "../../qemu/erdma/rtl/engine.ts";
import { isHilError } from "../../util/errors.ts";
import { probe } from "../../util/exec.ts";

const SOURCES = RTL_SOURCES.map((f) => join(RTL_DIR, f));

export interface SynthFigures {
  verilator: string;
  lint: { clean: boolean; warnings: string[] };
  yosys: string;
  family: "ecp5";
  cells: Record<string, number>;
  luts: number;
  flipFlops: number;
  latches: boolean;
  rtlLines: number;
  /** ns per request, same inputs: the verilated engine through koffi, the TypeScript engine */
  perRequestNs: { rtl: number; ts: number };
}

async function lint(): Promise<SynthFigures["lint"]> {
  const r = await probe("verilator", ["--lint-only", "-Wall", "--top-module", RTL_TOP, ...SOURCES]);
  const warnings = r.stderr.split("\n").filter((l) => /^%(Warning|Error)/.test(l));
  return { clean: r.exitCode === 0 && warnings.length === 0, warnings };
}

/** yosys: latches checked after `proc` (inferred) and after mapping; the mapped design's statistics. */
async function synthesize(): Promise<
  Pick<SynthFigures, "yosys" | "cells" | "luts" | "flipFlops" | "latches">
> {
  const version = (await probe("yosys", ["-V"]).catch(() => undefined))?.stdout.trim();
  if (!version)
    throw new Error("yosys is not installed: run `hil setup` (it installs Debian's verilator and yosys)");
  const noLatch = "select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$_DLATCH_* t:$_DLATCHSR_*";
  const script = [
    `read_verilog -sv ${SOURCES.join(" ")}`,
    `hierarchy -check -top ${RTL_TOP}`,
    "proc",
    noLatch,
    `synth_ecp5 -top ${RTL_TOP}`,
    noLatch,
    "stat",
  ].join("; ");
  const r = await probe("yosys", ["-p", script]);
  const latches =
    r.exitCode !== 0 && /Assertion failed: selection is not empty|Latch inferred/.test(r.stdout + r.stderr);
  if (r.exitCode !== 0 && !latches) throw new Error(`yosys failed:\n${(r.stdout + r.stderr).slice(-2000)}`);
  const stat = r.stdout.slice(r.stdout.lastIndexOf("Number of cells:"));
  const cells: Record<string, number> = {};
  for (const m of stat.matchAll(/^\s+(\S+)\s+(\d+)$/gm)) if (m[1] && m[2]) cells[m[1]] = Number(m[2]);
  return {
    yosys: version,
    cells,
    luts: cells.LUT4 ?? 0,
    flipFlops: Object.entries(cells).reduce((n, [k, v]) => n + (/FF/.test(k) ? v : 0), 0),
    latches,
  };
}

function timePerRequest(engine: QueueEngine, requests: number): number {
  let sink = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < requests; i++) {
    sink ^= engine.cqe(i, 6, i * 7).header;
    sink ^= engine.flushStep(i & 0xffff, (i + 5) & 0xffff, 1 + (i & 3), 8).next;
  }
  const ns = Number(process.hrtime.bigint() - started) / (2 * requests);
  if (sink === 0.5) process.stdout.write(""); // keeps the work observable
  return ns;
}

export async function measureRtl(requests: number): Promise<SynthFigures> {
  const verilator = await verilatorVersion();
  const rtl = loadRtlEngine(await ensureRtlEngine());
  timePerRequest(rtl, 1000);
  timePerRequest(tsQueueEngine, 1000);
  return {
    verilator,
    lint: await lint(),
    family: "ecp5",
    ...(await synthesize()),
    rtlLines: SOURCES.reduce((n, f) => n + readFileSync(f, "utf8").split("\n").length - 1, 0),
    perRequestNs: { rtl: timePerRequest(rtl, requests), ts: timePerRequest(tsQueueEngine, requests) },
  };
}

function table(f: SynthFigures): string {
  return [
    `${f.verilator}: lint -Wall ${f.lint.clean ? "clean" : `${f.lint.warnings.length} warnings\n  ${f.lint.warnings.slice(0, 5).join("\n  ")}`}`,
    `${f.yosys}: synth_ecp5 ${RTL_TOP}: ${f.luts} LUT4, ${f.flipFlops} FF, ${Object.values(f.cells).reduce((a, b) => a + b, 0)} cells (${Object.entries(
      f.cells,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}); latches: ${f.latches ? "INFERRED" : "none"}`,
    `RTL: ${f.rtlLines} lines of SystemVerilog in ${SOURCES.length} files`,
    `per request (CQE or flush step): RTL co-simulation ${f.perRequestNs.rtl.toFixed(0)} ns, TypeScript engine ${f.perRequestNs.ts.toFixed(0)} ns (${(f.perRequestNs.rtl / f.perRequestNs.ts).toFixed(1)}x)`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { json: { type: "boolean", default: false }, requests: { type: "string", default: "200000" } },
  });
  measureRtl(Number(values.requests))
    .then((f) => {
      process.stdout.write(values.json ? `${JSON.stringify(f, null, 2)}\n` : `${table(f)}\n`);
      if (!f.lint.clean || f.latches) process.exit(1);
    })
    .catch((err: unknown) => {
      process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).message}\n`);
      process.exit(1);
    });
}
