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
