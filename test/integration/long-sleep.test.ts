// The executor never trips the kernel's own detectors: a valid `sleep: 45000` step (longer than
// the guest's 10 s hung-task timeout, guest/kconfig/base.config) sleeps interruptibly in
// hil_kverbs, so a healthy driver PASSes with a clean console, on a real debian:6.12 guest.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { ruleOf, scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(20 * 60 * 1000);

t.test("a 45 s sleep step in the kernel executor is no hung task", async (t) => {
  const iso = isolate();
  const file = join(iso.tmp, "long-sleep.yaml");
  writeFileSync(
    file,
    [
      "description: receives posted, a pause longer than the hung-task timeout, then a drain",
      "covers: [9]",
      "drivers: [siw]",
      "executors: [kernel]",
      "steps:",
      "  - post_recv: { count: 4 }",
      "  - sleep: 45000",
      "    timeout_ms: 60000",
      "  - drain: { which: qp }",
      "",
    ].join("\n"),
  );
  const runDir = join(iso.tmp, "run");
  const r = await hil(
    [
      "run",
      "--kernel",
      "debian:6.12",
      "--driver",
      "siw",
      "--rules",
      "linux",
      "--scenario",
      file,
      "--run-dir",
      runDir,
    ],
    iso.env,
  );
  t.equal(r.exitCode, 0, r.stderr);
  const s = scenarioOf(runDir, "long-sleep");
  t.same(verdictsOf(s), ["linux PASS"]);
  t.equal(ruleOf(s, "linux", "console")?.verdict, "PASS", "no hung-task report on the console");
  t.equal(ruleOf(s, "linux", "hang")?.verdict, "PASS");
  t.same(leftovers(iso).processes, [], "nothing left running");
});
