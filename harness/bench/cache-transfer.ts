/**
 * What carrying a run's cache entries to another machine costs: `hil cache export` of what a
 * kernel needs (default debian:6.12, executor kernel) from this machine's cache (only read), and
 * `hil cache import` of it into a fresh empty root, beside the two ways of copying the same
 * entries without archives: `cp -a` (a plain copy) and `cp -al` (hard links; the same file system
 * only, and the two caches then share every inode). Prints the selection's time, each step's wall
 * time and size, and ratios; everything it writes goes into one temp dir, removed at the end.
 *
 *   node --import tsx harness/bench/cache-transfer.ts [--kernel debian:6.12] [--executor kernel|user]
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { cacheRoot } from "../../util/cache.ts";
import { APT_KIND, exportEntries, importEntries, megabytes } from "../../util/cache-transfer.ts";
import { run } from "../../util/exec.ts";
import type { ExecutorKind } from "../scenario/schema.ts";
import { selectEntries } from "../workflows/cache/selection.ts";

const { values } = parseArgs({
  options: {
    kernel: { type: "string", default: "debian:6.12" },
    executor: { type: "string", default: "kernel" },
  },
});

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await fn();
  return [value, (performance.now() - started) / 1000];
}

const warm = cacheRoot();
const temp = mkdtempSync(join(tmpdir(), "hil-bench-cache-transfer-"));
const saved = process.env.HIL_CACHE_DIR;
try {
  const [selection, selectS] = await timed(() =>
    selectEntries([
      { kernel: { base: values.kernel, configs: [] }, executor: values.executor as ExecutorKind },
    ]),
  );
  console.log(
    `selection (--kernel ${values.kernel} --executor ${values.executor}): ${selection.entries.length} entries in ${selectS.toFixed(1)} s`,
  );
  const out = join(temp, "export");
  const [index, exportS] = await timed(() =>
    exportEntries(selection.entries, out, `--kernel ${values.kernel}`),
  );
  const bytes = index.entries.reduce((n, e) => n + e.size, 0);
  for (const e of index.entries)
    console.log(`  ${e.kind}/${e.key.slice(0, 16)}\t${megabytes(e.size)}\t${e.what}`);
  console.log(`export: ${megabytes(bytes)} in ${index.entries.length} archives, ${exportS.toFixed(1)} s`);

  process.env.HIL_CACHE_DIR = join(temp, "imported");
  const [outcome, importS] = await timed(() => importEntries(out));
  console.log(`import into an empty root: ${outcome.placed.length} placed, ${importS.toFixed(1)} s`);
  const [again, againS] = await timed(() => importEntries(out));
  console.log(
    `import again (every entry there and intact): ${again.skipped.length} skipped, ${againS.toFixed(1)} s`,
  );

  // the same entries copied as trees (the apt lists' directories whole)
  const places = index.entries.map((e) => join(e.kind, e.key));
  const copy = async (flags: string, to: string) => {
    for (const place of places) {
      mkdirSync(dirname(join(temp, to, place)), { recursive: true });
      await run(`cp ${flags} ${place}`, "cp", [flags, join(warm, place), join(temp, to, place)]);
    }
  };
  const [, cpS] = await timed(() => copy("-a", "copied"));
  console.log(`cp -a of the same entries: ${cpS.toFixed(1)} s`);
  const [, linkS] = await timed(() => copy("-al", "linked"));
  console.log(`cp -al (hard links) of the same entries: ${linkS.toFixed(1)} s`);
  console.log(
    `ratios: export / cp -a ${(exportS / cpS).toFixed(2)}, import / cp -a ${(importS / cpS).toFixed(2)}, cp -al / cp -a ${(linkS / cpS).toFixed(2)}`,
  );
  console.log(
    `(apt entries are the lists only in the archives, the whole ${APT_KIND}/<suite> in the copies)`,
  );
} finally {
  if (saved === undefined) delete process.env.HIL_CACHE_DIR;
  else process.env.HIL_CACHE_DIR = saved;
  rmSync(temp, { recursive: true, force: true });
}
