// The other Debian bases hil builds, whole: 6.1 and 7.2, each a bootable kernel with erdma and siw
// as modules (test/integration/kernel-build.test.ts builds 6.12, the default).
import t from "tap";
import { buildKernel } from "../../harness/kernel/build.ts";
import { assertKernel } from "../support/kernel-artifact.ts";

// Real builds: minutes each on a cold cache (2 shared cores), seconds once cached.
t.setTimeout(4 * 3600_000);

t.test("plain debian:6.1", async (t) => {
  const a = await buildKernel({ base: "debian:6.1", configs: [] });
  assertKernel(t, a, /^6\.1\.\d+/);
});

t.test("plain debian:7.2", async (t) => {
  const a = await buildKernel({ base: "debian:7.2", configs: [] });
  assertKernel(t, a, /^7\.2\.\d+/);
});
