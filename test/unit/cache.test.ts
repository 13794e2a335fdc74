import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { cacheRoot, ensureEntry, isComplete, sweepStale, withLock } from "../../util/cache.ts";

function withCacheDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), "hil-cache-test-"));
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = dir;
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

t.test("cacheRoot follows HIL_CACHE_DIR, then XDG_CACHE_HOME, then ~/.cache", async (t) => {
  t.equal(cacheRoot({ HIL_CACHE_DIR: "/x/y" }), "/x/y");
  t.equal(cacheRoot({ XDG_CACHE_HOME: "/xdg" }), "/xdg/erdma-hil");
  t.match(cacheRoot({}), /\/\.cache\/erdma-hil$/);
});

t.test("ensureEntry builds once, then hits", async (t) => {
  const root = withCacheDir(t);
  let builds = 0;
  const build = async (dir: string) => {
    builds++;
    writeFileSync(join(dir, "artifact"), "content");
  };
  const first = await ensureEntry("things", "k1", { what: "thing" }, build);
  const second = await ensureEntry("things", "k1", { what: "thing" }, build);
  t.equal(builds, 1);
  t.ok(first.built);
  t.notOk(second.built);
  t.equal(first.dir, join(root, "things", "k1"));
  t.equal(await readFile(join(first.dir, "artifact"), "utf8"), "content");
  t.ok(isComplete(first.dir));
  t.same(readdirSync(join(root, "things")).sort(), ["k1"], "no lock or temp dirs left");
});

t.test("a failed build leaves nothing behind, and a retry builds", async (t) => {
  const root = withCacheDir(t);
  await t.rejects(
    ensureEntry("things", "k2", { what: "thing" }, async (dir) => {
      writeFileSync(join(dir, "half"), "x");
      throw new Error("boom");
    }),
    /boom/,
  );
  t.same(readdirSync(join(root, "things")), [], "no partial entry, temp dir or lock");
  const ok = await ensureEntry("things", "k2", { what: "thing" }, async () => {});
  t.ok(ok.built);
});

t.test("an in-place build that fails is removed too", async (t) => {
  const root = withCacheDir(t);
  await t.rejects(
    ensureEntry("things", "k3", { what: "thing", inPlace: true }, async (dir) => {
      t.equal(dir, join(root, "things", "k3"), "builds in the final directory");
      throw new Error("nope");
    }),
  );
  t.notOk(existsSync(join(root, "things", "k3")));
});

t.test("an incomplete entry (killed mid-build) is rebuilt", async (t) => {
  const root = withCacheDir(t);
  const first = await ensureEntry("things", "k4", { what: "thing", inPlace: true }, async (dir) => {
    writeFileSync(join(dir, "v"), "1");
  });
  rmSync(join(first.dir, ".complete"));
  const again = await ensureEntry("things", "k4", { what: "thing", inPlace: true }, async (dir) => {
    t.notOk(existsSync(join(dir, "v")), "starts from an empty directory");
    writeFileSync(join(dir, "v"), "2");
  });
  t.ok(again.built);
  t.equal(await readFile(join(root, "things", "k4", "v"), "utf8"), "2");
});

t.test("concurrent requests for one key build it once", async (t) => {
  withCacheDir(t);
  let builds = 0;
  const build = async (dir: string) => {
    builds++;
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(join(dir, "a"), "a");
  };
  const results = await Promise.all([
    ensureEntry("things", "k5", { what: "thing" }, build),
    ensureEntry("things", "k5", { what: "thing" }, build),
  ]);
  t.equal(builds, 1);
  t.equal(results.filter((r) => r.built).length, 1);
});

t.test("a lock held by a dead process is taken over", async (t) => {
  const root = withCacheDir(t);
  const lock = join(root, "stale.lock");
  writeFileSync(lock, "999999999");
  const value = await withLock(lock, "stale", async () => 42);
  t.equal(value, 42);
  t.notOk(existsSync(lock));
});

t.test("sweepStale removes temp dirs of dead processes only", async (t) => {
  const root = withCacheDir(t);
  await ensureEntry("things", "keep", { what: "thing" }, async () => {});
  const { mkdirSync } = await import("node:fs");
  mkdirSync(join(root, "things", "x.tmp-999999999"));
  mkdirSync(join(root, "things", `y.tmp-${process.pid}`));
  await sweepStale("things");
  t.same(readdirSync(join(root, "things")).sort(), ["keep", `y.tmp-${process.pid}`]);
});

t.test("a build interrupted by SIGINT leaves no entry, temp dir or lock", async (t) => {
  const root = withCacheDir(t);
  const { execa } = await import("execa");
  const cacheModule = new URL("../../util/cache.ts", import.meta.url).href;
  const script = `
    import { ensureEntry } from ${JSON.stringify(cacheModule)};
    await ensureEntry("things", "slow", { what: "slow", inPlace: true }, async (dir) => {
      const { writeFileSync } = await import("node:fs");
      writeFileSync(dir + "/half", "x");
      console.log("building");
      await new Promise(() => setInterval(() => {}, 1000));
    });`;
  const child = execa("node", ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, HIL_CACHE_DIR: root },
    reject: false,
  });
  await new Promise<void>((resolve) => child.stdout?.once("data", () => resolve()));
  t.ok(existsSync(join(root, "things", "slow", "half")), "the build had started");
  child.kill("SIGINT");
  const r = await child;
  t.equal(r.signal, "SIGINT", "the process still dies of the signal");
  t.same(readdirSync(join(root, "things")), [], "nothing left in the cache");
});
