// A cache on a full disk, for real and without touching the machine's warm cache: HIL_CACHE_DIR is
// an overlay whose lower layer is the warm cache (read only: overlayfs writes only to the upper
// layer) and whose upper layer is a small tmpfs. The guest's initramfs entry is hidden in the
// overlay (a whiteout in the upper layer), so `hil run` must build it there and the disk fills up:
// one error naming the cache, exit 3, before any guest starts; no half-written entry, no lock, no
// run directory left. With room on the disk (the tmpfs grown) the next run builds it and passes.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import t, { type Test } from "tap";
import { prepareGuest } from "../../harness/boot.ts";
import { cacheRoot } from "../../util/cache.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { noTmpfs } from "../support/tmpfs.ts";
import { nextRunPasses } from "./live-run.ts";
import { exitText, faultTable } from "./table.ts";

t.setTimeout(30 * 60 * 1000);

const table = faultTable(import.meta.url);
const WARM = cacheRoot();

/** The warm cache under an overlay whose writes go to a tmpfs of `size`; unmounted when `t` ends. */
function overlayCache(t: Test, size: string): { merged: string; upper: string; disk: string } {
  const base = mkdtempSync(join(tmpdir(), "hil-cache-full-"));
  const disk = join(base, "disk");
  const merged = join(base, "cache");
  mkdirSync(disk);
  mkdirSync(merged);
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0755`, "tmpfs", disk]);
  const upper = join(disk, "upper");
  mkdirSync(upper);
  mkdirSync(join(disk, "work"));
  try {
    execFileSync("mount", [
      "-t",
      "overlay",
      "overlay",
      "-o",
      `lowerdir=${WARM},upperdir=${upper},workdir=${join(disk, "work")}`,
      merged,
    ]);
  } catch (err) {
    execFileSync("umount", [disk]);
    rmSync(base, { recursive: true, force: true });
    throw err;
  }
  t.teardown(() => {
    execFileSync("umount", ["-l", merged]);
    execFileSync("umount", ["-l", disk]);
    rmSync(base, { recursive: true, force: true });
  });
  return { merged, upper, disk };
}

/** Lock files, half-built (.tmp-<pid>) and set-aside entries under `dir`. */
function strayEntries(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, encoding: "utf8" }) as string[]).filter((n) =>
    /\.(lock|tmp-\d+|discard-\d+|lock\.(new|stale)-\d+)$/.test(n),
  );
}

const RUN = ["run", "--kernel", "debian:6.12", "--rules", "linux", "--scenario", "drain-qp-idle"];

t.test(
  "the cache's disk full while hil run builds the initramfs: one error, exit 3, nothing half built; with room the next run builds it",
  { skip: noTmpfs() },
  async (t) => {
    const row = table.row(
      t,
      "a full disk for the cache (HIL_CACHE_DIR: the warm cache under an overlay on a 1 MB tmpfs, the initramfs to build)",
    );
    // the warm cache has everything; the initramfs entry is the one the overlay hides
    const prepared = await prepareGuest({ base: "debian:6.12", configs: [] });
    const entry = relative(WARM, dirname(prepared.initrd));
    t.match(entry, /^image\/initramfs\/[0-9a-f]+$/, `the initramfs is a cache entry: ${entry}`);
    const cache = overlayCache(t, "1m");
    rmSync(join(cache.merged, entry), { recursive: true });
    t.notOk(existsSync(join(cache.merged, entry)), "hidden in the overlay");
    t.ok(existsSync(join(WARM, entry)), "and still whole in the warm cache");

    const iso = isolate();
    const root = t.testdir({});
    const runDir = join(root, "run");
    const started = Date.now();
    const full = await hil([...RUN, "--run-dir", runDir], { ...iso.env, HIL_CACHE_DIR: cache.merged });
    row.ms = Date.now() - started;
    row.exit = exitText({ code: full.exitCode, signal: null });
    const errors = full.stderr.split("\n").filter((l) => l.startsWith("hil: "));
    row.verdict = `no verdict: ${errors.join(" ")}`;
    t.equal(full.exitCode, 3, full.stderr.slice(-3000));
    t.equal(full.stdout, "", "no verdict table");
    t.equal(errors.length, 1, `one error: ${errors.join(" | ")}`);
    t.match(
      errors[0],
      // the first write into the full cache fails: apt's package cache (its srcpkgcache.bin,
      // rewritten when apt finds it stale) or the initramfs entry
      new RegExp(
        `^hil: error: ${cache.merged}: no space is left on the cache's file system: (cache entry image/initramfs/[0-9a-f]+ \\(initramfs\\) could not be built|apt could not write its package cache \\(apt/ in the cache\\))$`,
      ),
    );
    t.match(
      full.stderr,
      /^\(ENOSPC\) free space there, or set HIL_CACHE_DIR to a directory on a larger file system/m,
    );
    t.notMatch(full.stderr, /internal error|^\s+at /m, "no stack");
    t.notOk(existsSync(join(cache.merged, entry)), "no entry, whole or half");
    const stray = strayEntries(join(cache.upper, "image"));
    t.same(stray, [], "no half-built entry and no lock in the cache");
    t.notOk(existsSync(runDir), "the run directory it made is gone");
    const left = leftovers(iso);
    row.leftovers = [...left.processes, ...left.entries, ...stray];
    t.same(left, { processes: [], entries: [] }, "no guest was started, no temp dir left");

    await t.test("the same run with room on the cache's disk builds the entry and passes", async (t) => {
      const nextRow = table.row(t, "the next hil run with room in the cache (tmpfs grown to 1 GB)");
      execFileSync("mount", ["-o", "remount,size=1g", cache.disk]);
      const next = join(root, "next");
      await nextRunPasses(t, nextRow, RUN, next, { ...iso.env, HIL_CACHE_DIR: cache.merged });
      t.ok(existsSync(join(cache.upper, entry, ".complete")), "the initramfs entry was built, on the tmpfs");
      const stray = strayEntries(join(cache.upper, "image"));
      const left = leftovers(iso);
      nextRow.leftovers = [...left.processes, ...left.entries, ...stray];
      t.same(stray, [], "no lock or temp entry left in the cache");
      t.same(left, { processes: [], entries: [] });
    });
  },
);
