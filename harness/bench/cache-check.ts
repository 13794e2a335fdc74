/**
 * What checking a cache entry costs a run: the cheap check (the marker read, a stat of each hashed
 * file) on every use, and the contents check (their digests, a stat of each bulk file) once per
 * process. The entry is copied into a temp dir first (the original is only read) and its manifest
 * recorded there, as a kernel entry's (bulk: its build tree); the copy is removed at the end.
 *
 *   node --import tsx harness/bench/cache-check.ts <entry dir> [--bulk build] [--runs N]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { describeEntry, inspectEntry, writeMarker } from "../../util/cache-manifest.ts";
import { run } from "../../util/exec.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    bulk: { type: "string", multiple: true, default: ["build"] },
    runs: { type: "string", default: "5" },
  },
});
const source = positionals[0];
if (!source) throw new Error("usage: cache-check.ts <entry dir> [--bulk <dir>...] [--runs N]");

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await fn();
  return [value, performance.now() - started];
}

const temp = mkdtempSync(join(tmpdir(), "hil-cache-check-"));
try {
  const dir = join(temp, basename(source));
  await run("cp -a", "cp", ["-a", source, dir]);
  const [manifest, recordMs] = await timed(() => describeEntry(dir, { bulk: values.bulk }));
  await writeMarker(dir, manifest);
  const hashed = Object.values(manifest.hashed);
  const bytes = hashed.reduce((n, [size]) => n + size, 0);
  console.log(
    `${source}: ${hashed.length} hashed files (${(bytes / 1024 / 1024).toFixed(1)} MB), ${Object.keys(manifest.sized).length} listed by size`,
  );
  console.log(`recording the manifest (adoption): ${recordMs.toFixed(0)} ms`);
  const [, firstCheapMs] = await timed(() => inspectEntry(dir, { contents: false }));
  console.log(`first cheap check (marker parsed, sizes): ${firstCheapMs.toFixed(1)} ms`);
  const [state, contentsMs] = await timed(() => inspectEntry(dir, { contents: true }));
  if (state.state !== "intact") throw new Error(`the copy is ${state.state}`);
  console.log(`contents check, once per process (digests, bulk sizes): ${contentsMs.toFixed(0)} ms`);
  const cheap: number[] = [];
  for (let i = 0; i < Number(values.runs); i++)
    cheap.push((await timed(() => inspectEntry(dir, { contents: true })))[1]);
  console.log(
    `every later use (sizes of the hashed files): ${cheap.map((ms) => ms.toFixed(2)).join(", ")} ms`,
  );
} finally {
  rmSync(temp, { recursive: true, force: true });
}
