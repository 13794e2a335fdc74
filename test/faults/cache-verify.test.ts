// The cache checks what it serves, on a copy of the machine's real default kernel entry (copied,
// never linked; the warm cache is only read): the copy, made before entries were recorded, is
// adopted once; its artifact.json resolves into the copy; a real part built from it (the guest
// modules layer, quick to pack) is cut short, found and rebuilt byte for byte; the kernel's
// bzImage is cut short, found, and the rebuild is called (with a builder standing in for the 40
// minute kernel build, copying the warm bzImage back).
import { copyFileSync, readdirSync, readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { buildModulesLayer } from "../../harness/image/modules.ts";
import { readArtifactRecord } from "../../harness/kernel/artifact-record.ts";
import { KERNEL_CACHE_KIND, kernelEntryOptions } from "../../harness/kernel/build.ts";
import { cacheRoot, ensureEntry } from "../../util/cache.ts";
import { hashFile, shortKey } from "../../util/hash.ts";
import { privateCacheDir } from "../support/private-cache.ts";
import { cacheNotices } from "../support/stderr.ts";
import { copyWarm, warmDefaultKernel } from "../support/warm-cache.ts";
import { faultTable } from "./table.ts";

t.setTimeout(20 * 60 * 1000);

const table = faultTable(import.meta.url);
const WARM = cacheRoot();
const warm = await warmDefaultKernel(WARM);

/** The [cache] lines written to stderr while `fn` runs (still written out). */
const notices = <T>(fn: () => Promise<T>) => cacheNotices(fn, { passOn: true });

t.test("a cut file in a copy of the cached default kernel is found and rebuilt", async (t) => {
  const modulesRow = table.row(t, "a truncated cache entry: the guest modules layer cut in half");
  const kernelRow = table.row(t, "a truncated cached bzImage (cut to 1 MB)");
  modulesRow.exit = kernelRow.exit = "- (library: ensureEntry)";
  const temp = privateCacheDir(t, "hil-cache-verify-");
  const warmMarker = readFileSync(join(warm.dir, ".complete"));
  const warmImage = await hashFile(join(warm.dir, "bzImage"));
  const copy = await copyWarm(WARM, temp, join(KERNEL_CACHE_KIND, warm.key));

  const builds: string[] = [];
  const standIn = async (work: string) => {
    builds.push(work);
    for (const f of ["bzImage", "artifact.json"]) copyFileSync(join(warm.dir, f), join(work, f));
  };
  const opts = kernelEntryOptions("kernel debian:6.12");
  const label = `cache entry kernel/${shortKey(warm.key)} (kernel debian:6.12)`;

  const adopted = await notices(() => ensureEntry(KERNEL_CACHE_KIND, warm.key, opts, standIn));
  t.same(builds, [], "an entry made before entries were recorded is not rebuilt");
  const recordedAlready = warmMarker.toString().trimStart().startsWith("{");
  t.same(
    adopted.lines,
    recordedAlready
      ? []
      : [
          `[cache] ${label}: made before cache entries were recorded; recording its files as they are (trusted once)`,
        ],
    recordedAlready ? "a recorded entry is used silently" : "an older entry is adopted, with a notice",
  );

  const kernel = await readArtifactRecord(copy);
  for (const f of ["dir", "bzImage", "modulesRoot", "buildDir", "srcDir", "config"] as const)
    t.ok(kernel[f].startsWith(`${temp}/`), `${f} resolves into the copy: ${kernel[f]}`);

  const layer = await buildModulesLayer(kernel);
  t.ok(layer.path.startsWith(`${temp}/`));
  const packed = await hashFile(layer.path);
  const size = statSync(layer.path).size;
  truncateSync(layer.path, Math.floor(size / 2));
  const cutAt = Date.now();
  const repacked = await notices(() => buildModulesLayer(kernel));
  modulesRow.ms = Date.now() - cutAt;
  modulesRow.verdict = `detected (${repacked.lines.join(" ").replace(/^\[cache\] /, "")}), repacked`;
  t.equal(repacked.lines.length, 1, "one notice");
  t.match(
    repacked.lines[0],
    new RegExp(
      `^\\[cache\\] cache entry image/modules/[0-9a-f]{16} \\(modules ${kernel.release}\\): modules\\.cpio\\.gz is .+, recorded .+: rebuilding$`,
    ),
  );
  t.equal(await hashFile(repacked.value.path), packed, "packed again, the same bytes");

  truncateSync(kernel.bzImage, 1024 * 1024);
  const bzCutAt = Date.now();
  const rebuilt = await notices(() => ensureEntry(KERNEL_CACHE_KIND, warm.key, opts, standIn));
  kernelRow.ms = Date.now() - bzCutAt;
  kernelRow.verdict = `detected (${rebuilt.lines.join(" ").replace(/^\[cache\] /, "")}), the builder called in place (a stand-in copying the warm bzImage)`;
  t.same(rebuilt.lines, [
    `[cache] ${label}: bzImage is 1.0 MB, recorded ${(statSync(join(warm.dir, "bzImage")).size / 1024 / 1024).toFixed(1)} MB: rebuilding`,
  ]);
  t.ok(rebuilt.value.built);
  t.same(builds, [copy], "the kernel's builder was called once, for the copy, in place");
  t.equal(await hashFile(join(copy, "bzImage")), warmImage, "the rebuilt entry has a whole image");
  t.same(await notices(async () => (await ensureEntry(KERNEL_CACHE_KIND, warm.key, opts, standIn)).built), {
    value: false,
    lines: [],
  });

  t.same(readFileSync(join(warm.dir, ".complete")), warmMarker, "the warm entry's marker is untouched");
  t.equal(await hashFile(join(warm.dir, "bzImage")), warmImage, "and so is its bzImage");
  const stray = readdirSync(join(temp, KERNEL_CACHE_KIND)).filter((n) => n !== warm.key);
  t.same(stray, [], "no lock, temp or set-aside entry beside the rebuilt kernel");
  modulesRow.leftovers = kernelRow.leftovers = stray;
});
