// hil's bundle (bin/cli-bundle.mjs), built for real into a private cache: it is keyed by the
// sources (an edit builds a new one, nothing else does), the bundled hil behaves as the sources
// run through tsx (same help, same error naming the package's own fixtures), its device server
// serves a device, concurrent first starts agree on one bundle, old bundles are pruned, and a
// cache that cannot be written leaves hil on tsx.
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { execa } from "execa";
import t from "tap";
import { bundleCacheDir, bundleKey } from "../../bin/cli-bundle.mjs";
import { startDevicesProcess } from "../../qemu/device-server/process.ts";
import { VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { PACKAGE_ROOT } from "../../util/package.ts";
import { HIL_BIN } from "../support/cli.ts";
import { tempDir } from "../support/temp-dir.ts";

function hil(args: string[], env: Record<string, string>) {
  return execa(HIL_BIN, args, {
    env: { ...process.env, HIL_BUNDLE_DIR: "", ...env },
    reject: false,
    cwd: tmpdir(),
  });
}

const bundlesIn = (cache: string) =>
  existsSync(join(cache, "cli-bundle"))
    ? readdirSync(join(cache, "cli-bundle")).filter((n) => /^[0-9a-f]{64}$/.test(n))
    : [];

/** A private place for bundles, as a directory `cli-bundle` under `cache`. */
const inCache = (cache: string) => ({ HIL_BUNDLE_CACHE: join(cache, "cli-bundle") });

t.test("the key follows the sources and their place, and nothing else", async (t) => {
  const root = tempDir(t, "hil-bundle-key-");
  for (const dir of ["harness/cli", "qemu", "util", "bin", "fixtures"])
    mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, "harness/cli/main.ts"), "export const a = 1;\n");
  writeFileSync(join(root, "qemu/x.ts"), "export const b = 2;\n");
  writeFileSync(join(root, "util/y.ts"), "export const c = 3;\n");
  for (const f of ["package-lock.json", "tsconfig.json", "bin/cli-bundle.mjs"])
    writeFileSync(join(root, f), "{}\n");
  const first = bundleKey(root, "0.0.1");
  t.match(first, /^[0-9a-f]{64}$/);
  t.equal(bundleKey(root, "0.0.1"), first, "the same sources, the same key");
  writeFileSync(join(root, "fixtures/s.yaml"), "name: s\n");
  writeFileSync(join(root, "harness/cli/README.md"), "words\n");
  t.equal(bundleKey(root, "0.0.1"), first, "data and prose are not built into it");
  writeFileSync(join(root, "qemu/x.ts"), "export const b = 3;\n");
  const edited = bundleKey(root, "0.0.1");
  t.not(edited, first, "an edited source");
  t.not(bundleKey(root, "0.0.2"), edited, "another esbuild");
  writeFileSync(join(root, "package-lock.json"), '{"v":2}\n');
  t.not(bundleKey(root, "0.0.2"), bundleKey(root, "0.0.1"), "still keyed by esbuild");
  t.not(bundleKey(root, "0.0.1"), edited, "other locked dependencies");
  const copy = join(tempDir(t, "hil-bundle-copy-"), "checkout");
  cpSync(root, copy, { recursive: true });
  t.not(
    bundleKey(copy, "0.0.1"),
    bundleKey(root, "0.0.1"),
    "the same sources in another checkout: its bundle names that checkout's files",
  );
});

t.test("the bundled hil is the same hil as the sources through tsx", async (t) => {
  const cache = tempDir(t, "hil-bundle-cache-");
  const bundled = await hil(["--help"], inCache(cache));
  const [key] = bundlesIn(cache);
  t.ok(key, "the first start built a bundle");
  t.same(readdirSync(join(cache, "cli-bundle", key ?? "")).sort(), [
    "device-server.mjs",
    "device-server.mjs.map",
    "hil.mjs",
    "hil.mjs.map",
  ]);
  const sources = await hil(["--help"], { ...inCache(cache), HIL_NO_BUNDLE: "1" });
  t.equal(bundled.exitCode, 0);
  t.equal(bundled.stdout, sources.stdout, "the same help");

  // modules find the package's files from their own place, not from the bundle's
  const missing = await hil(["run", "--scenario", "no-such-scenario"], inCache(cache));
  t.equal(missing.exitCode, 2);
  t.equal(
    missing.stderr.trim(),
    `hil: error: ${join(PACKAGE_ROOT, "fixtures", "scenarios")}/: no scenario matches "no-such-scenario"`,
  );
  const viaTsx = await hil(["run", "--scenario", "no-such-scenario"], {
    ...inCache(cache),
    HIL_NO_BUNDLE: "1",
  });
  t.equal(viaTsx.stderr, missing.stderr, "the same error as through tsx");
  t.same(bundlesIn(cache), [key], "a second start reuses it");

  // the device server from the bundle, as hil starts it
  const dir = tempDir(t, "hil-bundle-dev-");
  const saved = process.env.HIL_BUNDLE_DIR;
  process.env.HIL_BUNDLE_DIR = join(cache, "cli-bundle", key ?? "");
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_BUNDLE_DIR;
    else process.env.HIL_BUNDLE_DIR = saved;
  });
  const server = await startDevicesProcess({
    device: "erdma",
    devices: [{ socketPath: join(dir, "erdma.sock"), mac: "52:54:00:fa:b0:09" }],
  });
  t.teardown(() => server.stop());
  const cmdline = spawnSync("cat", [`/proc/${server.pid}/cmdline`])
    .stdout.toString()
    .split("\0");
  t.equal(cmdline[1], join(cache, "cli-bundle", key ?? "", "device-server.mjs"), "started from the bundle");
  const c = VfioUserClient.connect(server.socketPath);
  await c.negotiate();
  await c.close();
  t.same(await server.stop(), { code: 0, signal: null }, "served a session, exit 0 on SIGTERM");
});

t.test(
  "first starts at once agree on one bundle; old ones are pruned to the newest 8, dead builds swept",
  async (t) => {
    const cache = tempDir(t, "hil-bundle-race-");
    const runs = await Promise.all([0, 1, 2].map(() => hil(["--help"], inCache(cache))));
    t.same(
      runs.map((r) => r.exitCode),
      [0, 0, 0],
    );
    const [key] = bundlesIn(cache);
    t.equal(bundlesIn(cache).length, 1, "one bundle");
    t.same(
      readdirSync(join(cache, "cli-bundle")).filter((n) => n.includes(".tmp-")),
      [],
      "no build directory left",
    );
    // ten older bundles of other sources, then a new build
    const old = Date.now() / 1000 - 3600;
    for (let i = 0; i < 10; i++) {
      const name = `${i}`.repeat(64);
      cpSync(join(cache, "cli-bundle", key ?? ""), join(cache, "cli-bundle", name), { recursive: true });
      utimesSync(join(cache, "cli-bundle", name), old + i, old + i);
    }
    rmSync(join(cache, "cli-bundle", key ?? ""), { recursive: true });
    // what a hil killed while it built leaves (pid 2^22 + 1: above pid_max, never alive)
    const dead = join(cache, "cli-bundle", `${key}.tmp-4194305`);
    mkdirSync(dead);
    t.equal((await hil(["--help"], inCache(cache))).exitCode, 0);
    t.notOk(existsSync(dead), "a dead builder's directory swept");
    const kept = bundlesIn(cache);
    t.equal(kept.length, 8, "the newest 8 kept");
    t.ok(kept.includes(key ?? ""), "the one just built among them");
    t.notOk(kept.includes("0".repeat(64)), "the oldest gone");
    // a bundle in use is marked as new, so other checkouts' builds prune it last
    const bundle = join(cache, "cli-bundle", key ?? "");
    utimesSync(bundle, old - 100, old - 100);
    t.equal((await hil(["--help"], inCache(cache))).exitCode, 0);
    t.ok(statSync(bundle).mtimeMs > Date.now() - 60_000, "the bundle just used is the newest");
  },
);

t.test("a cache that cannot be written: hil runs from its sources", async (t) => {
  const file = join(tempDir(t, "hil-bundle-ro-"), "a-file");
  writeFileSync(file, "");
  const r = await hil(["--help"], { HIL_BUNDLE_CACHE: join(file, "cli-bundle") });
  t.equal(r.exitCode, 0);
  t.match(r.stdout, /^Usage: hil /);
});

t.test("bundles live in the user's cache, not in HIL_CACHE_DIR", async (t) => {
  const xdg = tempDir(t, "hil-bundle-xdg-");
  const runCache = tempDir(t, "hil-bundle-run-cache-");
  const env = { XDG_CACHE_HOME: xdg, HIL_CACHE_DIR: runCache, HIL_BUNDLE_CACHE: "" };
  t.equal(bundleCacheDir(env), join(xdg, "erdma-hil", "cli-bundle"));
  t.equal(bundleCacheDir({ ...env, HIL_BUNDLE_CACHE: "rel/b" }), resolve("rel/b"));
  const r = await hil(["--help"], env);
  t.equal(r.exitCode, 0, r.stderr);
  t.equal(bundlesIn(join(xdg, "erdma-hil")).length, 1, "built in $XDG_CACHE_HOME/erdma-hil/cli-bundle");
  t.same(readdirSync(runCache), [], "the run cache untouched");
});
