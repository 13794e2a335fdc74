// The shipped debug fragment (guest/kconfig/debug.config) configures on every Debian base the
// harness builds: Kbuild's own tinyconfig + merge_config.sh + olddefconfig on the real 6.1, 6.12
// and 7.2 sources, and the final .config holds each checker (the harness's check that no asked
// option was dropped runs too). Configuring only: the debug kernel's build and boot are
// console-real's (its kasan-uaf, sleep-in-atomic and lockdep captures).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { kernelVersion } from "../../harness/kernel/base-source.ts";
import { BASE_CONFIG_PATH } from "../../harness/kernel/build.ts";
import { configureKernel } from "../../harness/kernel/kbuild.ts";
import { parseDotConfig, readFragment, resolveFragmentPath } from "../../harness/kernel/kconfig.ts";
import { unpackedKernelSource } from "../support/kernel-source.ts";

t.setTimeout(30 * 60_000);

const CHECKERS = [
  "KASAN",
  "KASAN_GENERIC",
  "KASAN_VMALLOC",
  "KFENCE",
  "PROVE_LOCKING",
  "LOCKDEP",
  "DEBUG_ATOMIC_SLEEP",
  "DEBUG_LIST",
];

for (const base of ["debian:6.1", "debian:6.12", "debian:7.2"]) {
  t.test(`--config debug configures on ${base}`, async (t) => {
    const srcDir = await unpackedKernelSource(base);
    const buildDir = t.testdir({});
    const fragments = [
      readFragment(BASE_CONFIG_PATH, "guest/kconfig/base.config"),
      readFragment(resolveFragmentPath("debug"), "debug"),
    ];
    await configureKernel(
      { srcDir, buildDir },
      fragments,
      join(buildDir, "fragments"),
      kernelVersion(srcDir).text,
    );
    const config = parseDotConfig(readFileSync(join(buildDir, ".config"), "utf8"));
    for (const name of CHECKERS) t.equal(config.get(name), "y", `CONFIG_${name}=y`);
    t.not(config.get("SLUB_TINY"), "y", "not SLUB_TINY, which KASAN excludes");
    t.equal(config.get("INFINIBAND_ERDMA"), "m", "the driver under test is still built");
  });
}
