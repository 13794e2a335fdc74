// The check tap runs after the suite (test/support/after-suite.ts) finds what a test left behind:
// a hil-* temp dir without a live owner, and a cache lock or half-built entry of a dead process;
// what a live process owns is not a leftover.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { tsxLoaderUrl } from "../../util/package.ts";

const CHECK = fileURLToPath(new URL("../support/after-suite.ts", import.meta.url));

/** A pid no process has: one that just exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(r.stdout.toString());
}

t.test("leftovers made since the check's parent started are listed, owned ones are not", async (t) => {
  const cache = mkdtempSync(join(tmpdir(), "hil-after-cache-"));
  const orphan = mkdtempSync(join(tmpdir(), "hil-leftover-probe-"));
  const owned = mkdtempSync(join(tmpdir(), "hil-owned-probe-"));
  t.teardown(() => {
    for (const d of [cache, orphan, owned]) rmSync(d, { recursive: true, force: true });
  });
  writeFileSync(join(owned, "owner.pid"), `${process.pid}\n`);
  writeFileSync(join(cache, "owner.pid"), `${process.pid}\n`);
  mkdirSync(join(cache, "kernel"));
  const dead = deadPid();
  writeFileSync(join(cache, "kernel", "abc.lock"), String(dead));
  mkdirSync(join(cache, "kernel", `def.tmp-${dead}`));
  writeFileSync(join(cache, "kernel", "live.lock"), String(process.pid));

  const r = spawnSync(process.execPath, ["--import", tsxLoaderUrl(), CHECK], {
    env: { ...process.env, HIL_CACHE_DIR: cache },
    encoding: "utf8",
  });
  t.equal(r.status, 1, "leftovers fail the suite");
  t.match(r.stderr, `temp: ${orphan}`);
  t.notMatch(r.stderr, owned, "a dir whose owner lives is not a leftover");
  t.match(r.stderr, `cache: lock of a dead process ${join(cache, "kernel", "abc.lock")}`);
  t.match(r.stderr, `cache: half-built entry ${join(cache, "kernel", `def.tmp-${dead}`)}`);
  t.notMatch(r.stderr, "live.lock", "a lock a live process holds is not a leftover");
});
