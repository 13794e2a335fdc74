/**
 * The reference for a patched kernel's continued build (harness/kernel/rebuild.ts): the same
 * erdma-only series on debian:6.12, built from scratch, makes byte-identical modules and the same
 * configuration. A whole kernel compiled again, so it is in the nightly tier; the continued build
 * itself is checked by test/integration/kernel-incremental.test.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { readArtifactRecord, writeArtifactRecord } from "../../harness/kernel/artifact-record.ts";
import { buildKernel, buildKernelFromScratch, kernelEntryOptions } from "../../harness/kernel/build.ts";
import { ensureEntry } from "../../util/cache.ts";
import { hashFile } from "../../util/hash.ts";

t.setTimeout(4 * 3600_000);

const BASE = "debian:6.12";
const fixture = (name: string) => new URL(`../../fixtures/series/${name}`, import.meta.url).pathname;

t.test("the same series built from scratch makes byte-identical modules", async (t) => {
  const req = { base: BASE, series: fixture("erdma-module-only.mbox"), configs: [] };
  const a = await buildKernel(req);
  // built once a machine: a whole kernel from scratch is the slowest step of the suite
  const { dir } = await ensureEntry(
    "kernel-from-scratch",
    a.key,
    kernelEntryOptions("kernel from scratch (the incremental build's reference)"),
    async (work) => writeArtifactRecord(work, await buildKernelFromScratch(req, work)),
  );
  const scratch = await readArtifactRecord(dir);
  t.equal(scratch.release, a.release);
  const order = readFileSync(join(a.buildDir, "modules.order"), "utf8").split("\n").filter(Boolean);
  t.ok(order.length > 3, `modules: ${order.join(" ")}`);
  for (const m of order) {
    const ko = m.replace(/\.o$/, ".ko");
    t.equal(
      await hashFile(join(a.buildDir, ko)),
      await hashFile(join(scratch.buildDir, ko)),
      `${ko} is the same`,
    );
  }
  t.equal(
    readFileSync(a.config, "utf8"),
    readFileSync(scratch.config, "utf8"),
    "and so is the configuration",
  );
});
