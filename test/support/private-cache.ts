/** A test's own cache: HIL_CACHE_DIR pointed at a new temp dir until the test ends, then removed. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";

export function privateCacheDir(t: Test, prefix = "hil-cache-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = dir;
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}
