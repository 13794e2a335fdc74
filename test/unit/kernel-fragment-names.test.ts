/**
 * `--config <name>` finds a fragment shipped in guest/kconfig when no such file exists; a file of
 * that name wins; an unknown name is one error that lists what is shipped.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  effectiveRequests,
  readFragment,
  resolveFragmentPath,
  SHIPPED_FRAGMENT_DIR,
  shippedFragments,
} from "../../harness/kernel/kconfig.ts";

t.test("shipped fragments by name", async (t) => {
  t.ok(shippedFragments().includes("smp"), "smp is shipped");
  t.notOk(shippedFragments().includes("base"), "base.config is always merged, not offered");
  t.equal(resolveFragmentPath("smp"), join(SHIPPED_FRAGMENT_DIR, "smp.config"));
  t.equal(resolveFragmentPath("smp.config"), join(SHIPPED_FRAGMENT_DIR, "smp.config"));
  const smp = readFragment(resolveFragmentPath("smp"), "smp");
  t.equal(smp.label, "smp");
  t.same(
    effectiveRequests([smp.requests]).map((r) => `${r.name}=${r.value}`),
    ["SMP=y", "NR_CPUS=8"],
    "smp asks for SMP and a CPU count",
  );
});

t.test("a file of that name wins over a shipped fragment; paths are never looked up", async (t) => {
  const dir = t.testdir({});
  const own = join(dir, "smp");
  writeFileSync(own, "CONFIG_SMP=y\n");
  t.equal(resolveFragmentPath(own), own);
  t.equal(resolveFragmentPath("some/dir/smp"), "some/dir/smp", "a path stays a path");
  const cwd = process.cwd();
  process.chdir(dir);
  t.teardown(() => process.chdir(cwd));
  t.equal(resolveFragmentPath("smp"), "smp", "./smp exists: the user's file");
});

t.test("an unknown name: one error naming it and the shipped fragments", async (t) => {
  t.throws(() => readFragment(resolveFragmentPath("no-such-fragment"), "no-such-fragment"), {
    name: "HilError",
    message: /config fragment no-such-fragment does not exist or cannot be read/,
    detail: /shipped in guest\/kconfig: .*smp/,
  });
});
