import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import t, { type Test } from "tap";
import {
  cacheRoot,
  ensureEntry,
  findIntactEntry,
  isComplete,
  replaceEntry,
  sweepStale,
  withEntry,
  withLock,
} from "../../util/cache.ts";
import type { EntryManifest } from "../../util/cache-manifest.ts";
import { privateCacheDir } from "../support/private-cache.ts";
import { cacheNotices } from "../support/stderr.ts";

const withCacheDir = (t: Test) => privateCacheDir(t, "hil-cache-test-");

t.test("cacheRoot follows HIL_CACHE_DIR, then XDG_CACHE_HOME, then ~/.cache", async (t) => {
  t.equal(cacheRoot({ HIL_CACHE_DIR: "/x/y" }), "/x/y");
  t.equal(cacheRoot({ HIL_CACHE_DIR: "rel/c" }), join(process.cwd(), "rel/c"), "made absolute");
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

t.test(
  "a build that fails on a full disk: one error naming the cache, exit 3, nothing half built",
  async (t) => {
    const root = withCacheDir(t);
    for (const [name, failure, inPlace] of [
      [
        "an errno ENOSPC",
        Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" }),
        false,
      ],
      ["a tool's message", new Error("gzip: stdout: No space left on device"), true],
    ] as const) {
      const err = await ensureEntry(
        "things",
        name.replace(/\W/g, "-"),
        { what: "thing", inPlace },
        async (dir) => {
          writeFileSync(join(dir, "half"), "x");
          throw failure;
        },
      ).catch((e: unknown) => e);
      t.match(
        err,
        {
          name: "HilError",
          exitCode: 3,
          where: root,
          message:
            /^no space is left on the cache's file system: cache entry things\/\S+ \(thing\) could not be built$/,
          detail:
            /^\(ENOSPC\) free space there, or set HIL_CACHE_DIR to a directory on a larger file system; what was half built is removed\nthe build said: /,
        },
        name,
      );
      t.same(readdirSync(join(root, "things")), [], `${name}: no entry, temp dir or lock left`);
    }
    const quota = await ensureEntry("things", "q", { what: "thing" }, async () => {
      throw Object.assign(new Error("EDQUOT: disk quota exceeded"), { code: "EDQUOT" });
    }).catch((e: unknown) => e);
    t.match(quota, { exitCode: 3, message: /^the disk quota is exceeded on the cache's file system/ });
    const other = await ensureEntry("things", "o", { what: "thing" }, async () => {
      throw new Error("compiler said no");
    }).catch((e: unknown) => e);
    t.match(other, { message: "compiler said no" }, "any other failure is passed on as it is");
  },
);

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

/**
 * Another node process whose ensureEntry build of things/<key> writes "half" and never ends;
 * resolves once it is building (the child in an object: the child itself is a promise of its end).
 */
async function startEndlessBuild(root: string, key: string, inPlace: boolean) {
  const { execa } = await import("execa");
  const cacheModule = new URL("../../util/cache.ts", import.meta.url).href;
  const script = `
    import { writeFileSync } from "node:fs";
    import { ensureEntry } from ${JSON.stringify(cacheModule)};
    await ensureEntry("things", ${JSON.stringify(key)}, { what: "slow", inPlace: ${inPlace} }, async (dir) => {
      writeFileSync(dir + "/half", "x");
      console.log("building");
      await new Promise(() => setInterval(() => {}, 1000));
    });`;
  const child = execa("node", ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, HIL_CACHE_DIR: root },
    reject: false,
  });
  await new Promise<void>((resolve) => child.stdout?.once("data", () => resolve()));
  return { child };
}

t.test("a build interrupted by SIGINT leaves no entry, temp dir or lock", async (t) => {
  const root = withCacheDir(t);
  const { child } = await startEndlessBuild(root, "slow", true);
  t.ok(existsSync(join(root, "things", "slow", "half")), "the build had started");
  child.kill("SIGINT");
  const r = await child;
  t.equal(r.signal, "SIGINT", "the process still dies of the signal");
  t.same(readdirSync(join(root, "things")), [], "nothing left in the cache");
});

/** The [cache] lines written to stderr while `fn` runs. */
const notices = cacheNotices;

function manifestOf(dir: string): EntryManifest {
  return JSON.parse(readFileSync(join(dir, ".complete"), "utf8")) as EntryManifest;
}

/** A builder that counts its runs and writes a "kernel" entry: an image and a bulk build tree. */
function kernelLikeBuilder() {
  const calls: string[] = [];
  const build = async (dir: string) => {
    calls.push(dir);
    writeFileSync(join(dir, "bzImage"), "x".repeat(11 * 1024 * 1024));
    mkdirSync(join(dir, "build"));
    writeFileSync(join(dir, "build", "vmlinux.o"), "object");
  };
  return { calls, build };
}

t.test("a completed entry's marker is its manifest: boot files hashed, bulk trees by size", async (t) => {
  withCacheDir(t);
  const { build } = kernelLikeBuilder();
  const { dir } = await ensureEntry(
    "kernel",
    "m1",
    { what: "kernel", inPlace: true, bulk: ["build"] },
    build,
  );
  const m = manifestOf(dir);
  t.same(Object.keys(m.hashed), ["bzImage"]);
  t.equal(m.hashed.bzImage?.[0], 11 * 1024 * 1024);
  t.match(m.hashed.bzImage?.[1], /^[0-9a-f]{64}$/);
  t.same(m.sized, { "build/vmlinux.o": 6 });
  t.notOk(m.adopted);
});

t.test(
  "a damaged entry is rebuilt under its lock, with one notice naming the entry and the file",
  async (t) => {
    const root = withCacheDir(t);
    const { calls, build } = kernelLikeBuilder();
    const opts = { what: "kernel debian:6.12", inPlace: true, bulk: ["build"] };
    const key = "82bc32fddf7b6e8c0383d42e1ea6a6b7";
    const first = await ensureEntry("kernel", key, opts, build);
    truncateSync(join(first.dir, "bzImage"), 3 * 1024 * 1024);
    const again = await notices(() => ensureEntry("kernel", key, opts, build));
    t.same(again.lines, [
      "[cache] cache entry kernel/82bc32fddf7b6e8c (kernel debian:6.12): bzImage is 3.0 MB, recorded 11 MB: rebuilding",
    ]);
    t.ok(again.value.built);
    t.equal(calls.length, 2, "the builder ran again");
    t.equal(readFileSync(join(first.dir, "bzImage")).length, 11 * 1024 * 1024);
    t.same(readdirSync(join(root, "kernel")), [key], "nothing set aside, no lock left");
    const third = await notices(() => ensureEntry("kernel", key, opts, build));
    t.notOk(third.value.built);
    t.same(third.lines, [], "the rebuilt entry is used silently");
  },
);

t.test("a same-size change found by the digest in a new process rebuilds the entry", async (t) => {
  const root = withCacheDir(t);
  const built = await ensureEntry("things", "d1", { what: "thing" }, async (dir) => {
    writeFileSync(join(dir, "image"), "good bytes");
  });
  writeFileSync(join(built.dir, "image"), "evil bytes");
  const { execa } = await import("execa");
  const cacheModule = new URL("../../util/cache.ts", import.meta.url).href;
  const script = `
    import { writeFileSync } from "node:fs";
    import { ensureEntry } from ${JSON.stringify(cacheModule)};
    const r = await ensureEntry("things", "d1", { what: "thing" }, async (dir) => {
      writeFileSync(dir + "/image", "good bytes");
    });
    console.log(JSON.stringify(r));`;
  const child = await execa("node", ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, HIL_CACHE_DIR: root },
  });
  t.match(child.stderr, /things\/d1 \(thing\): image differs from its recorded sha256: rebuilding/);
  t.equal(JSON.parse(child.stdout).built, true);
  t.equal(readFileSync(join(built.dir, "image"), "utf8"), "good bytes");
});

t.test("an entry made before manifests is adopted once, under its lock, then checked like any", async (t) => {
  const root = withCacheDir(t);
  const dir = join(root, "kernel", "old1");
  mkdirSync(join(dir, "build"), { recursive: true });
  writeFileSync(join(dir, "bzImage"), "an old kernel");
  writeFileSync(join(dir, "build", "x.o"), "obj");
  writeFileSync(join(dir, ".complete"), "2026-12-01T20:37:00.000Z\n");
  let builds = 0;
  const opts = { what: "kernel debian:6.12", inPlace: true, bulk: ["build"] };
  const build = async () => {
    builds++;
  };
  t.ok(await findIntactEntry(dir), "a lookup takes it as it is");
  const first = await notices(() => ensureEntry("kernel", "old1", opts, build));
  t.notOk(first.value.built);
  t.equal(builds, 0, "not rebuilt");
  t.same(first.lines, [
    "[cache] cache entry kernel/old1 (kernel debian:6.12): made before cache entries were recorded; recording its files as they are (trusted once)",
  ]);
  const m = manifestOf(dir);
  t.equal(m.adopted, true);
  t.same(Object.keys(m.hashed), ["bzImage"]);
  t.same(m.sized, { "build/x.o": 3 });
  const second = await notices(() => ensureEntry("kernel", "old1", opts, build));
  t.same(second.lines, [], "adopted once: the next use is silent");
  truncateSync(join(dir, "bzImage"), 3);
  t.notOk(await findIntactEntry(dir), "from now on damage shows, to lookups too");
  await ensureEntry("kernel", "old1", opts, build);
  t.equal(builds, 1, "and is rebuilt");
});

t.test("an old entry its validate check finds wrong is rebuilt instead of adopted", async (t) => {
  const root = withCacheDir(t);
  const dir = join(root, "things", "old2");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "bzImage"), "short");
  writeFileSync(join(dir, ".complete"), "2026-12-01T20:37:00.000Z\n");
  const opts = {
    what: "thing",
    validate: async (d: string) =>
      readFileSync(join(d, "bzImage"), "utf8").length < 10
        ? { file: "bzImage", what: "is shorter than its header says" }
        : undefined,
  };
  const r = await notices(() =>
    ensureEntry("things", "old2", opts, async (d) => writeFileSync(join(d, "bzImage"), "a whole image")),
  );
  t.ok(r.value.built);
  t.same(r.lines, [
    "[cache] cache entry things/old2 (thing): bzImage is shorter than its header says: rebuilding",
  ]);
  t.equal(manifestOf(dir).adopted, undefined);
});

t.test("a build killed before its marker leaves no complete entry; the next use builds it", async (t) => {
  const root = withCacheDir(t);
  for (const inPlace of [true, false]) {
    const key = inPlace ? "killed-in-place" : "killed";
    const { child } = await startEndlessBuild(root, key, inPlace);
    child.kill("SIGKILL"); // no cleanup runs: what a power cut leaves
    await child;
    const dir = join(root, "things", key);
    t.notOk(isComplete(dir), `${key}: not complete`);
    t.notOk(await findIntactEntry(dir), `${key}: not found by a lookup`);
    const r = await ensureEntry("things", key, { what: "slow", inPlace }, async (d) => {
      t.notOk(existsSync(join(d, "half")), `${key}: the rebuild starts from an empty directory`);
      writeFileSync(join(d, "whole"), "y");
    });
    t.ok(r.built, `${key}: built by the next use`);
  }
  await sweepStale("things");
  t.same(
    readdirSync(join(root, "things")).sort(),
    ["killed", "killed-in-place"],
    "and sweepStale clears the rest",
  );
});

t.test("sweepStale also removes set-aside entries and lock side files of dead processes", async (t) => {
  const root = withCacheDir(t);
  mkdirSync(join(root, "things", "a.discard-999999999"), { recursive: true });
  writeFileSync(join(root, "things", "a.lock.new-999999999"), "999999999");
  writeFileSync(join(root, "things", "a.lock.stale-999999999"), "1");
  writeFileSync(join(root, "things", `a.lock.new-${process.pid}`), String(process.pid));
  await sweepStale("things");
  t.same(readdirSync(join(root, "things")), [`a.lock.new-${process.pid}`]);
});

t.test("two processes wanting one damaged entry: one rebuilds it, the other waits and uses it", async (t) => {
  const root = withCacheDir(t);
  const first = await ensureEntry("things", "shared", { what: "thing" }, async (dir) => {
    writeFileSync(join(dir, "image"), "the whole image");
  });
  truncateSync(join(first.dir, "image"), 3);
  const log = join(root, "builds.log");
  const { execa } = await import("execa");
  const cacheModule = new URL("../../util/cache.ts", import.meta.url).href;
  const script = `
    import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
    import { ensureEntry } from ${JSON.stringify(cacheModule)};
    const r = await ensureEntry("things", "shared", { what: "thing" }, async (dir) => {
      appendFileSync(${JSON.stringify(log)}, process.pid + "\\n");
      await new Promise((r) => setTimeout(r, 1500));
      writeFileSync(dir + "/image", "the whole image");
    });
    console.log(readFileSync(r.dir + "/image", "utf8"));`;
  const runs = await Promise.all(
    [0, 1].map(() =>
      execa("node", ["--import", "tsx", "--input-type=module", "-e", script], {
        env: { ...process.env, HIL_CACHE_DIR: root },
      }),
    ),
  );
  t.same(
    runs.map((r) => r.stdout),
    ["the whole image", "the whole image"],
  );
  t.equal(
    runs.flatMap((r) => r.stderr.split("\n").filter((l) => l.includes("rebuilding"))).length,
    1,
    "one notice: by the process that rebuilt it",
  );
  t.equal(readFileSync(log, "utf8").trim().split("\n").length, 1, "built once");
  t.same(readdirSync(join(root, "things")), ["shared"]);
});

t.test("replaceEntry puts a new complete entry in place of the old one, nothing left aside", async (t) => {
  const root = withCacheDir(t);
  const write = (text: string) => async (dir: string) => writeFileSync(join(dir, "seen"), text);
  const first = await replaceEntry("obs", "k", { what: "observation" }, write("one"));
  t.equal(readFileSync(join(first.dir, "seen"), "utf8"), "one");
  await replaceEntry("obs", "k", { what: "observation" }, write("two, longer"));
  t.equal(readFileSync(join(first.dir, "seen"), "utf8"), "two, longer");
  const state = await withEntry("obs", "k", "observation", async (_dir, s) => s);
  t.match(state, { state: "intact", manifest: { hashed: { seen: [11] } } }, "recorded and checked");
  await t.rejects(
    replaceEntry("obs", "k", { what: "observation" }, async () => {
      throw new Error("boom");
    }),
    /boom/,
  );
  t.equal(
    readFileSync(join(first.dir, "seen"), "utf8"),
    "two, longer",
    "a failed replacement keeps the old one",
  );
  t.same(readdirSync(join(root, "obs")), ["k"], "no temp dir, discarded entry or lock");
  t.same(await withEntry("obs", "none", "observation", async (_dir, s) => s), { state: "absent" });
});

t.test("a cache that cannot be made (HIL_CACHE_DIR under /proc): one error naming it, at once", async (t) => {
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = "/proc/hil-nope/cache";
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });
  const err = await ensureEntry("things", "k", { what: "thing" }, async () => {}).catch((e: unknown) => e);
  t.match(err, {
    name: "HilError",
    exitCode: 2,
    where: "/proc/hil-nope/cache",
    message: "the cache's directories cannot be made",
    detail: /^ENOENT: .*mkdir '\/proc\/hil-nope'\nset HIL_CACHE_DIR to a directory hil can write/,
  });
});
