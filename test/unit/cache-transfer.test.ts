// hil cache export/import on a small synthetic cache built with the cache's own ensureEntry in a
// temp HIL_CACHE_DIR: exported, imported into another empty root (entries equal, intact, their
// relative records resolving into the new root), imported again (skipped), and corrupt or
// truncated exports refused with one error naming the entry and nothing placed.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join, relative } from "node:path";
import t, { type Test } from "tap";
import { readArtifactRecord, writeArtifactRecord } from "../../harness/kernel/artifact-record.ts";
import type { KernelArtifact } from "../../harness/kernel/types.ts";
import { cacheRoot, ensureEntry } from "../../util/cache.ts";
import { inspectEntry } from "../../util/cache-manifest.ts";
import {
  allEntries,
  exportEntries,
  INDEX_FILE,
  importEntries,
  readExportIndex,
  type TransferEntry,
} from "../../util/cache-transfer.ts";
import { HilError } from "../../util/errors.ts";
import { hil } from "../support/cli.ts";
import { tempDir } from "../support/temp-dir.ts";

const BASE_KEY = "b".repeat(64);
const KERNEL_KEY = "k".repeat(64);
const LAYER_KEY = "c".repeat(64);

/** Sets HIL_CACHE_DIR to `root` for the rest of the test. */
function useRoot(t: Test, root: string): void {
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = root;
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });
}

/**
 * A cache like a real one in shape: a source tree (bulk), a kernel whose artifact.json names it
 * relative to its own directory, an image layer (nested kind), and apt package lists.
 */
async function syntheticCache(root: string): Promise<void> {
  await ensureEntry("kernel-base", BASE_KEY, { what: "kernel source", bulk: ["src"] }, async (work) => {
    mkdirSync(join(work, "src", "drivers"), { recursive: true });
    writeFileSync(join(work, "src", "Makefile"), "VERSION = 6\nPATCHLEVEL = 12\n");
    writeFileSync(join(work, "src", "drivers", "erdma.c"), "int x;\n".repeat(5000));
    writeFileSync(join(work, "base.json"), "{}\n");
  });
  await ensureEntry(
    "kernel",
    KERNEL_KEY,
    { what: "kernel", inPlace: true, bulk: ["build"] },
    async (work) => {
      mkdirSync(join(work, "build"));
      writeFileSync(join(work, "build", "vmlinux.o"), Buffer.alloc(200_000, 7));
      writeFileSync(join(work, "bzImage"), Buffer.alloc(100_000, 3));
      writeFileSync(join(work, "config"), "CONFIG_X=y\n");
      const srcDir = join(root, "kernel-base", BASE_KEY, "src");
      const artifact: KernelArtifact = {
        key: KERNEL_KEY,
        dir: work,
        bzImage: join(work, "bzImage"),
        modulesRoot: join(work, "modules"),
        release: "6.12.0",
        buildDir: join(work, "build"),
        srcDir,
        kbuildNames: { srcDir, buildDir: join(work, "build") },
        config: join(work, "config"),
        describe: "debian:6.12",
      };
      await writeArtifactRecord(work, artifact);
    },
  );
  await ensureEntry("image/modules", LAYER_KEY, { what: "modules layer" }, async (work) => {
    writeFileSync(join(work, "modules.cpio.gz"), Buffer.alloc(5000, 1));
  });
  const apt = join(root, "apt", "bookworm");
  mkdirSync(join(apt, "lists", "partial"), { recursive: true });
  mkdirSync(join(apt, "sources.list.d"), { recursive: true });
  writeFileSync(join(apt, "lists", "deb.debian.org_Packages"), "Package: busybox\n");
  writeFileSync(join(apt, "sources.list.d", "hil.sources"), "Types: deb\n");
  writeFileSync(join(apt, "updated"), "2026-12-02T10:00:00.000Z");
  mkdirSync(join(apt, "debs"));
  writeFileSync(join(apt, "debs", "big.deb"), "not carried");
}

/** Every file below `dir` with its bytes, relative paths sorted (what two caches must agree on). */
function treeOf(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path);
      else out.set(path, readFileSync(join(dir, path)).toString("base64"));
    }
  };
  walk("");
  return out;
}

/** A synthetic cache exported: the roots and the export directory. */
async function exported(
  t: Test,
): Promise<{ from: string; to: string; out: string; entries: TransferEntry[] }> {
  const from = tempDir(t, "hil-cache-from-");
  const to = tempDir(t, "hil-cache-to-");
  const out = join(tempDir(t, "hil-cache-export-"), "export");
  useRoot(t, from);
  await syntheticCache(from);
  const entries = await allEntries();
  await exportEntries(entries, out, "--all");
  process.env.HIL_CACHE_DIR = to;
  return { from, to, out, entries };
}

/** Whatever lies in a cache root: entries, and leftovers of a half-done import. */
function contentsOf(root: string): string[] {
  return existsSync(root) ? [...treeOf(root).keys()] : [];
}

t.test(
  "an exported cache imported into an empty root is equal, intact, and its records resolve there",
  async (t) => {
    const { from, to, out, entries } = await exported(t);
    t.same(
      entries.map((e) => `${e.kind}/${e.key}`),
      ["apt/bookworm", `image/modules/${LAYER_KEY}`, `kernel/${KERNEL_KEY}`, `kernel-base/${BASE_KEY}`],
      "--all finds every entry, nested kinds and the apt lists included",
    );
    const index = await readExportIndex(out);
    t.equal(index.entries.length, 4);
    t.same(
      readdirSync(out).sort(),
      [INDEX_FILE, ...index.entries.map((e) => e.file)].sort(),
      "an archive per entry",
    );

    const { placed, skipped } = await importEntries(out);
    t.equal(placed.length, 4, "every entry placed");
    t.equal(skipped.length, 0);
    for (const place of [`kernel/${KERNEL_KEY}`, `kernel-base/${BASE_KEY}`, `image/modules/${LAYER_KEY}`]) {
      t.same(
        treeOf(join(to, place)),
        treeOf(join(from, place)),
        `${place.slice(0, 20)}: the same files and bytes`,
      );
      t.equal(
        (await inspectEntry(join(to, place), { contents: true })).state,
        "intact",
        `${place.slice(0, 20)}: intact`,
      );
    }
    const lists = treeOf(join(to, "apt", "bookworm"));
    t.same([...lists.keys()].sort(), [
      "lists/deb.debian.org_Packages",
      "sources.list.d/hil.sources",
      "updated",
    ]);
    t.equal(
      Math.floor(statSync(join(to, "apt", "bookworm", "updated")).mtimeMs / 1000),
      Math.floor(statSync(join(from, "apt", "bookworm", "updated")).mtimeMs / 1000),
      "the lists' stamp keeps its time (their age decides when apt updates them)",
    );
    const artifact = await readArtifactRecord(join(cacheRoot(), "kernel", KERNEL_KEY));
    t.equal(
      relative(to, artifact.srcDir),
      `kernel-base/${BASE_KEY}/src`,
      "the kernel's source resolves into the new root",
    );
    t.same(
      readdirSync(join(to, "kernel")),
      [KERNEL_KEY],
      "no staging directory or lock left beside the entry",
    );

    const again = await importEntries(out);
    t.equal(again.placed.length, 0, "a second import places nothing");
    t.equal(again.skipped.length, 4, "every entry is already there and intact: skipped");
  },
);

t.test("an entry damaged in the cache is replaced by the intact one of the export", async (t) => {
  const { to, out } = await exported(t);
  await importEntries(out);
  truncateSync(join(to, "image", "modules", LAYER_KEY, "modules.cpio.gz"), 10);
  const { placed } = await importEntries(out);
  t.same(
    placed.map((e) => e.kind),
    ["image/modules"],
    "only the damaged entry is placed again",
  );
  t.equal((await inspectEntry(join(to, "image", "modules", LAYER_KEY), { contents: true })).state, "intact");
});

/** Flips one byte in the middle of a file, keeping its size. */
function flipByte(file: string): void {
  const fd = openSync(file, "r+");
  const at = Math.floor(statSync(file).size / 3);
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, at);
  b[0] = (b[0] ?? 0) ^ 0xff;
  writeSync(fd, b, 0, 1, at);
  closeSync(fd);
}

for (const [how, damage] of [
  ["a byte flipped", flipByte],
  ["truncated", (f: string) => truncateSync(f, Math.floor(statSync(f).size / 2))],
  ["missing", (f: string) => rmSync(f)],
] as const) {
  t.test(
    `an export with the kernel source's archive ${how}: one error naming it, nothing placed`,
    async (t) => {
      const { to, out } = await exported(t);
      const index = await readExportIndex(out);
      const base = index.entries.find((e) => e.kind === "kernel-base");
      if (!base) throw new Error("no kernel-base entry exported");
      damage(join(out, base.file));
      const err = await importEntries(out).then(
        () => undefined,
        (e: unknown) => e,
      );
      t.ok(err instanceof HilError, "a HilError");
      const e = err as HilError;
      t.match(
        e.message,
        /^the export is corrupt: the archive of kernel-base\/bbbbbbbbbbbbbbbb \(kernel-base entry\) /,
      );
      t.equal(e.where, join(out, base.file), "it names the archive");
      t.equal(e.exitCode, 2);
      t.same(contentsOf(to), [], "nothing is placed in the cache, no staging directory is left");
    },
  );
}

t.test("an archive whose entry does not match its own manifest is refused", async (t) => {
  const { to, out } = await exported(t);
  // a consistent archive (its sha256 in the index matches) of an entry whose file was changed after it was recorded
  const index = await readExportIndex(out);
  const layer = index.entries.find((e) => e.kind === "image/modules");
  if (!layer) throw new Error("no layer exported");
  const from = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = tempDir(t, "hil-cache-tampered-");
  const root = cacheRoot();
  const dir = join(root, "image", "modules", LAYER_KEY);
  await ensureEntry("image/modules", LAYER_KEY, { what: "modules layer" }, async (work) => {
    writeFileSync(join(work, "modules.cpio.gz"), Buffer.alloc(5000, 1));
  });
  flipByte(join(dir, "modules.cpio.gz"));
  const out2 = join(tempDir(t, "hil-cache-export-"), "export");
  // exported without a check, as another tool could have: the marker no longer matches the file
  const { spawnSync } = await import("node:child_process");
  mkdirSync(out2);
  spawnSync("tar", ["-c", "-C", join(root, "image", "modules"), "-f", join(out2, layer.file), LAYER_KEY]);
  const { createHash } = await import("node:crypto");
  const bytes = readFileSync(join(out2, layer.file));
  const entry = { ...layer, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
  writeFileSync(join(out2, INDEX_FILE), JSON.stringify({ ...index, entries: [entry] }));
  process.env.HIL_CACHE_DIR = to;
  await t.rejects(importEntries(out2), {
    message:
      /the archive of image\/modules\/cccccccccccccccc \(image\/modules entry\) holds an entry that does not match its manifest: modules\.cpio\.gz differs from its recorded sha256/,
  });
  t.same(contentsOf(to), [], "nothing placed");
  process.env.HIL_CACHE_DIR = from;
});

t.test("export refuses a directory that is not empty, and a damaged entry", async (t) => {
  const root = tempDir(t, "hil-cache-from-");
  useRoot(t, root);
  await syntheticCache(root);
  const busy = tempDir(t, "hil-cache-busy-");
  writeFileSync(join(busy, "something"), "x");
  await t.rejects(exportEntries(await allEntries(), busy, "--all"), {
    message: /the export directory is not empty/,
    where: busy,
  });
  t.same(readdirSync(busy), ["something"], "what was there is left alone");

  truncateSync(join(root, "kernel", KERNEL_KEY, "bzImage"), 10);
  const out = join(tempDir(t, "hil-cache-export-"), "export");
  await t.rejects(exportEntries(await allEntries(), out, "--all"), {
    message:
      /cache entry kernel\/kkkkkkkkkkkkkkkk \(kernel entry\) is damaged: bzImage is 10 bytes, recorded/,
  });
  t.notOk(existsSync(out), "a failed export removes the directory it made");
  await t.rejects(
    exportEntries([{ kind: "kernel", key: "0".repeat(64), what: "kernel debian:7.2" }], out, "x"),
    { message: /cache entry kernel\/0000000000000000 \(kernel debian:7.2\) is not in the cache/ },
  );
});

t.test("hil cache import of a directory that is no export: exit 2 naming it", async (t) => {
  const root = tempDir(t, "hil-cache-to-");
  const missing = join(root, "no-such-export");
  const r = await hil(["cache", "import", missing], { HIL_CACHE_DIR: root });
  t.equal(r.exitCode, 2, r.stderr);
  t.match(r.stderr, `hil: error: ${missing}: the export directory does not exist`);
  const empty = tempDir(t, "hil-cache-empty-");
  const e = await hil(["cache", "import", empty], { HIL_CACHE_DIR: root });
  t.equal(e.exitCode, 2, e.stderr);
  t.match(e.stderr, `hil: error: ${empty}: no index.json: not a directory written by hil cache export`);
  writeFileSync(
    join(empty, INDEX_FILE),
    '{"format":"hil-cache-export/1","entries":[{"kind":"../x","key":"k"}]}',
  );
  const bad = await hil(["cache", "import", empty], { HIL_CACHE_DIR: root });
  t.equal(bad.exitCode, 2, bad.stderr);
  t.match(bad.stderr, `${join(empty, INDEX_FILE)}: entry 1 of the export's index is malformed`);
  t.same(readdirSync(root), [], "nothing written into the cache");
});

t.test("hil cache export --all and import through the CLI", async (t) => {
  const from = tempDir(t, "hil-cache-from-");
  const to = tempDir(t, "hil-cache-to-");
  useRoot(t, from);
  await syntheticCache(from);
  const out = join(tempDir(t, "hil-cache-export-"), "export");
  const ex = await hil(["cache", "export", out, "--all"], { HIL_CACHE_DIR: from });
  t.equal(ex.exitCode, 0, ex.stderr);
  t.match(ex.stdout, /hil cache export: 4 entries, [\d.]+ MB in [\d.]+ s/);
  t.match(ex.stderr, /\[cache\] exporting kernel-base\/bbbbbbbbbbbbbbbb \(kernel-base entry\): [\d.]+ MB in/);
  const im = await hil(["cache", "import", out], { HIL_CACHE_DIR: to });
  t.equal(im.exitCode, 0, im.stderr);
  t.match(im.stdout, /hil cache import: 4 placed/);
  const again = await hil(["cache", "import", out], { HIL_CACHE_DIR: to });
  t.match(again.stdout, /hil cache import: 0 placed \(0\.0 MB\), 4 already there/);
  const both = await hil(["cache", "export", join(out, "x"), "--all", "--kernel", "debian:6.1"], {
    HIL_CACHE_DIR: from,
  });
  t.equal(both.exitCode, 2);
  t.match(both.stderr, "--kernel and --all select in different ways: give one of them");
});

t.test(
  "hil cache list on a cache without the package lists the keys come from: exit 2 naming them",
  async (t) => {
    const root = tempDir(t, "hil-cache-empty-");
    const r = await hil(["cache", "list", "--kernel", "debian:6.12"], { HIL_CACHE_DIR: root });
    t.equal(r.exitCode, 2, r.stderr);
    t.match(
      r.stderr,
      `hil: error: ${join(root, "apt", "bookworm")}: the cache holds no package lists of Debian bookworm`,
    );
    const shard = await hil(["cache", "list", "--shard", "1/2"], { HIL_CACHE_DIR: root });
    t.equal(shard.exitCode, 2);
    t.match(shard.stderr, "--shard needs --plan");
    t.same(readdirSync(root), [], "nothing written into the cache");
  },
);

/** The processes of group `pgid` that are not zombies (/proc/<pid>/stat: state, ppid, pgrp after the name). */
function liveInGroup(pgid: number): number[] {
  const live: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // it ended while we looked
    }
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pgid && state !== "Z") live.push(Number(name));
  }
  return live;
}

/**
 * A kernel-base-like entry big enough that tar reads it for a while, and a process beside the
 * export doing to it, over and over until stopped, what `sh -c` is given ($1: the entry's src).
 */
async function exportBeside(
  t: Test,
  script: string,
): Promise<{ results: Array<Awaited<ReturnType<typeof hil>>>; root: string }> {
  const root = tempDir(t, "hil-cache-busy-root-");
  useRoot(t, root);
  await ensureEntry("kernel-base", BASE_KEY, { what: "kernel source", bulk: ["src"] }, async (work) => {
    mkdirSync(join(work, "src", "drivers"), { recursive: true });
    for (let i = 0; i < 400; i++)
      writeFileSync(join(work, "src", "drivers", `f${i}.c`), Buffer.alloc(64 * 1024, i));
    // one file tar takes a while to read, whatever the machine's load
    writeFileSync(join(work, "src", "drivers", "big.c"), Buffer.alloc(48 << 20, 7));
  });
  const scratch = tempDir(t, "hil-cache-busy-");
  const { spawn } = await import("node:child_process");
  const src = join(root, "kernel-base", BASE_KEY, "src");
  // its own process group: stopping it stops what the loop started too (a perl, a cp)
  const busy = spawn("sh", ["-c", `while :; do ${script}; done`, "sh", src, scratch], {
    stdio: "ignore",
    detached: true,
  });
  const stop = () => {
    try {
      process.kill(-(busy.pid as number), "SIGKILL");
    } catch {
      // already gone
    }
  };
  t.teardown(stop);
  const results: Array<Awaited<ReturnType<typeof hil>>> = [];
  // each export is a new chance for the race; a few are enough for the writer to hit a read
  for (let i = 0; i < 6; i++) {
    const out = join(tempDir(t, "hil-cache-export-"), "export");
    results.push(await hil(["cache", "export", out, "--all"], { HIL_CACHE_DIR: root }));
    rmSync(out, { recursive: true, force: true });
  }
  const exited = new Promise((r) => busy.once("exit", r));
  stop();
  await exited;
  // a killed cp or rm is a zombie until init reaps it, which takes a while on a loaded host: only
  // a process of the group that is not a zombie is left running
  const gone = async (): Promise<boolean> => {
    for (let i = 0; i < 200; i++) {
      if (liveInGroup(busy.pid as number).length === 0) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  };
  t.ok(await gone(), "nothing the busy loop started is left running", {
    left: liveInGroup(busy.pid as number),
  });
  return { results, root };
}

t.test("an export while a patched tree is hard-linked from the entry (cp -al) succeeds", async (t) => {
  const { results } = await exportBeside(t, 'rm -rf "$2/p"; cp -al "$1" "$2/p"');
  for (const r of results) t.equal(r.exitCode, 0, r.stderr.slice(-1000));
  t.ok(
    results.some((r) =>
      /file\(s\) gained or lost a hard link meanwhile; their bytes did not change/.test(r.stderr),
    ),
    "tar saw a file's links change while it read it at least once, and that was not a failure",
  );
});

t.test("an export while a file of the entry is written fails in one line naming the entry", async (t) => {
  // in place and the same size: what the entry's size check before the archive cannot see
  const { results } = await exportBeside(
    t,
    `perl -e 'open(my $f, "+<", shift) or die; while (1) { sysseek($f, 100, 0); syswrite($f, "x") }' "$1/drivers/big.c"`,
  );
  const failed = results.filter((r) => r.exitCode !== 0);
  t.ok(failed.length > 0, "a write during the read is seen");
  for (const r of failed) {
    t.equal(r.exitCode, 3, r.stderr);
    const errors = r.stderr.split("\n").filter((l) => l.startsWith("hil: "));
    t.equal(errors.length, 1, r.stderr);
    t.match(
      errors[0],
      /^hil: error: .*kernel-base\/b{64}: cache entry kernel-base\/b{16} \(kernel-base entry\) cannot be exported: \d+ file\(s\) written while they were archived, first src\/drivers\/big\.c/,
    );
    t.notMatch(r.stderr, /internal error|\n\s+at /, "no stack trace");
  }
});
