import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import t from "tap";

const APT_MODULE = new URL("../../util/apt.ts", import.meta.url).href;

/** aptContext("sid") in a child whose mirror is a closed loopback port, so `apt-get update` fails. */
async function contextWithDeadMirror(cacheDir: string) {
  const script = `
    import { aptContext } from ${JSON.stringify(APT_MODULE)};
    try { await aptContext("sid"); console.log("CONTEXT-OK"); }
    catch (err) { console.log("CONTEXT-ERROR " + err.message); }`;
  return execa("node", ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, HIL_CACHE_DIR: cacheDir, HIL_DEBIAN_MIRROR: "http://127.0.0.1:9/debian" },
    reject: false,
    all: true,
  });
}

t.test("a failed list update is an error on a machine that never had lists", async (t) => {
  const cache = mkdtempSync(join(tmpdir(), "hil-apt-test-"));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  const r = await contextWithDeadMirror(cache);
  t.match(r.stdout, /CONTEXT-ERROR apt-get update \(sid\) failed/);
});

t.test("with lists from an earlier update, a failed update warns and goes on", async (t) => {
  const cache = mkdtempSync(join(tmpdir(), "hil-apt-test-"));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  const base = join(cache, "apt", "sid");
  mkdirSync(base, { recursive: true });
  const stamp = join(base, "updated");
  writeFileSync(stamp, "2026-01-01T00:00:00.000Z");
  const old = new Date("2026-01-01T00:00:00Z");
  utimesSync(stamp, old, old);
  const r = await contextWithDeadMirror(cache);
  t.match(r.stdout, /CONTEXT-OK/);
  t.match(r.all, /updating package lists \(sid\): failed; using the lists of 2026-01-01T00:00:00\.000Z/);
});

t.test("apt finding the cache's disk full is that error, not a missing package", async (t) => {
  const bin = mkdtempSync(join(tmpdir(), "hil-apt-test-"));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  // apt-get as it fails when srcpkgcache.bin cannot be written (seen on a full cache)
  writeFileSync(
    join(bin, "apt-get"),
    "#!/bin/sh\necho 'E: Write error - write (28: No space left on device)' >&2\necho 'E: IO Error saving source cache' >&2\nexit 100\n",
    { mode: 0o755 },
  );
  const script = `
    import { packageUris } from ${JSON.stringify(APT_MODULE)};
    try { await packageUris({ name: "sid", options: [] }, ["linux-source-6.12"]); console.log("URIS-OK"); }
    catch (err) { console.log(JSON.stringify({ message: err.message, exitCode: err.exitCode, detail: err.detail })); }`;
  const r = await execa("node", ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, HIL_CACHE_DIR: "/var/cache/x" },
    reject: false,
  });
  const out = JSON.parse(r.stdout);
  t.equal(
    out.message,
    "no space is left on the cache's file system: apt could not write its package cache (apt/ in the cache)",
  );
  t.equal(out.exitCode, 3);
  t.match(
    out.detail,
    /^\(ENOSPC\) free space there, .*\napt said: E: Write error - write \(28: No space left on device\)$/,
  );
});
