// hil boot on the other Debian bases, as a user types it: Linux 6.1's erdma loads, and Linux 7.2's
// goes through the verbs lifecycle on the emulated device (test/integration/cli-boot.test.ts boots
// the default 6.12).
import t from "tap";
import { expectNothingLeft, hil, isolate } from "../support/cli.ts";

t.setTimeout(60 * 60_000);

t.test("hil boot --kernel debian:6.1 -- ls /sys/module/erdma shows the driver", async (t) => {
  const before = isolate();
  const r = await hil(["boot", "--kernel", "debian:6.1", "--", "ls", "/sys/module/erdma"], before.env);
  t.equal(r.exitCode, 0, r.stderr);
  t.match(r.stdout, /\brefcnt\b/);
  t.match(r.stdout, /\bsections\b|\bholders\b/);
  expectNothingLeft(t, before);
});

t.test("hil boot --kernel debian:7.2: the verbs lifecycle on the emulated erdma", async (t) => {
  const before = isolate();
  const r = await hil(
    ["boot", "--kernel", "debian:7.2", "--", "hil-verbs-lifecycle && rdma link"],
    before.env,
  );
  t.equal(r.exitCode, 0, r.stderr);
  t.match(r.stdout, /^ok close_device$/m);
  t.match(r.stdout, /^link erdma_0\/1 state ACTIVE physical_state LINK_UP netdev eth0/m);
  expectNothingLeft(t, before);
});
