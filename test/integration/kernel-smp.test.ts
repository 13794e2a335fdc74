// `--config smp` (guest/kconfig/smp.config): a Linux 6.12 guest with two running vCPUs, on which the
// erdma driver probes and drains with completions handled in softirq and workqueue context while
// the poster runs on the other CPU. The default kernels stay uniprocessor.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(60 * 60 * 1000);

t.test("hil boot --config smp: two CPUs online", async (t) => {
  const iso = isolate();
  const r = await hil(
    ["boot", "--kernel", "debian:6.12", "--config", "smp", "--", "cat /sys/devices/system/cpu/online; nproc"],
    iso.env,
  );
  t.equal(r.exitCode, 0, r.stderr);
  t.equal(r.stdout, "0-1\n2\n", "CPUs 0 and 1 are online");
  t.match(r.stderr, /\+ config smp/, "the kernel is described with its fragment");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("hil run --config smp: the drain scenarios with concurrent completion contexts pass", async (t) => {
  const iso = isolate();
  const dir = t.testdir({});
  const scenarios = "drain-qp-busy-mixed,softirq-cq-drain-busy,workqueue-cq-drain-busy";
  const r = await hil(
    ["run", "--config", "smp", "--scenario", scenarios, "--rules", "linux", "--run-dir", dir],
    iso.env,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`);
  for (const s of scenarios.split(","))
    t.match(r.stdout, new RegExp(`^${s}\\s+PASS\\s+(?:\\w+:\\d+ ?)+\\s+every rule holds$`, "m"));
  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as { kernel: string };
  t.match(record.kernel, /debian:6\.12 \+ config smp/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
