/**
 * What a one-file erdma series costs once its base kernel is cached: the kernel builder's
 * module-only rebuild against a build of the same patched tree from scratch, in the same run, as
 * a ratio. Each run builds a series of its own (a printk with a fresh tag in erdma_main.c), so no
 * cache entry answers it; the entries it makes are removed at the end.
 *
 *   node --import tsx harness/bench/patched-kernel.ts [--kernel debian:6.12] [--runs N] [--no-scratch]
 *
 * The build from scratch takes as long as the base build (10-20 minutes on 2 cores); --no-scratch
 * leaves it out (no ratio then).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { cachePath } from "../../util/cache.ts";
import { hashFile } from "../../util/hash.ts";
import { PATCHED_CACHE_KIND, patchedTreeKey } from "../kernel/apply.ts";
import { baseKey } from "../kernel/base-source.ts";
import { parseBaseSpec } from "../kernel/base-spec.ts";
import { buildKernel, buildKernelFromScratch } from "../kernel/build.ts";
import { loadSeries } from "../kernel/series.ts";
import type { KernelArtifact } from "../kernel/types.ts";

const { values } = parseArgs({
  options: {
    kernel: { type: "string", default: "debian:6.12" },
    runs: { type: "string", default: "1" },
    "no-scratch": { type: "boolean", default: false },
  },
});
const base = values.kernel ?? "debian:6.12";
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs ${values.runs}: a whole number >= 1`);

const FIXTURE = new URL("../../fixtures/series/erdma-module-only.mbox", import.meta.url);
const ERDMA_KO = "drivers/infiniband/hw/erdma/erdma.ko";
const scratch = mkdtempSync(join(tmpdir(), "hil-bench-patched-"));
const made: string[] = [];
const cleanUp = () => {
  for (const dir of [...made, scratch]) rmSync(dir, { recursive: true, force: true });
};
process.once("exit", cleanUp);

/** The first patch of the fixture (one file: erdma_main.c) with a tag no earlier run used. */
function oneFileSeries(tag: string): string {
  const text = readFileSync(FIXTURE, "utf8");
  const first = text.slice(0, text.indexOf("\nFrom ", 1) + 1);
  const file = join(scratch, `${tag}.mbox`);
  writeFileSync(file, first.replace("erdma rebuilt from a patched tree", `bench ${tag}`));
  return file;
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await fn();
  return [value, performance.now() - start];
}

/** The patched-tree entry a series of this run makes, removed when the run ends. */
function forgetSeries(series: string, sourceKey: string): void {
  made.push(cachePath(PATCHED_CACHE_KIND, patchedTreeKey(sourceKey, loadSeries(series).key)));
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

await buildKernel({ base, configs: [] }); // the base: cached before anything is timed
const sourceKey = await baseKey(parseBaseSpec(base));
const tag = `${Date.now().toString(36)}-${process.pid}`;
const incremental: number[] = [];
let last: { series: string; kernel: KernelArtifact } | undefined;
for (let i = 0; i < runs; i++) {
  const series = oneFileSeries(`${tag}-${i}`);
  forgetSeries(series, sourceKey);
  const [kernel, ms] = await timed(() => buildKernel({ base, series, configs: [] }));
  made.push(kernel.dir);
  if (kernel.rebuild?.mode !== "modules")
    throw new Error(`expected a module-only rebuild, got ${JSON.stringify(kernel.rebuild)}`);
  incremental.push(ms);
  last = { series, kernel };
}
const rows: Array<[string, string]> = [
  [`patched kernel, one-file erdma series, module-only (median of ${runs})`, seconds(median(incremental))],
];
if (!values["no-scratch"] && last) {
  const { series, kernel } = last;
  const [full, ms] = await timed(() =>
    buildKernelFromScratch({ base, series, configs: [] }, join(scratch, "full")),
  );
  const same =
    (await hashFile(join(kernel.buildDir, ERDMA_KO))) === (await hashFile(join(full.buildDir, ERDMA_KO)));
  rows.push(["the same kernel built from scratch", seconds(ms)]);
  rows.push(["ratio module-only / from scratch", (median(incremental) / ms).toFixed(3)]);
  rows.push(["erdma.ko byte-identical to the one built from scratch", same ? "yes" : "NO"]);
}
const width = Math.max(...rows.map(([k]) => k.length));
for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
cleanUp();
