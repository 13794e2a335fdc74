// hil repro's input checks, as a user types it: a bad case is exit 2 with file:line and leaves
// nothing behind. A case reproduced end to end (Linux 6.1's erdma drain hang) is in the nightly
// tier: test/nightly/repro-erdma-drain-hang-6.1.test.ts.
import { existsSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(8 * 60 * 1000);

t.test("a bad case: exit 2, file:line, nothing written", async (t) => {
  const iso = isolate();
  const root = t.testdir({
    "bad-case.yaml": [
      "bug: x",
      "reference: drivers/infiniband/core/verbs.c:__ib_drain_sq",
      "kernel: debian:6.1",
      "scenarios: [drain-qp-idle]",
      "expect:",
      "  - scenario: drain-qp-idle",
      "    verdict: HANGS",
    ].join("\n"),
  });
  const dir = join(root, "run");
  const r = await hil(["repro", join(root, "bad-case.yaml"), "--run-dir", dir], iso.env);
  t.equal(r.exitCode, 2);
  t.match(r.stderr, /^hil: error: \S+bad-case\.yaml:7:5: expect\[0\]\.verdict: /m);
  t.same(leftovers(iso), { processes: [], entries: [] });
  t.notOk(existsSync(dir), "no run directory");
});
