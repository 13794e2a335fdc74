// `--config smp` (guest/kconfig/smp.config): a Linux 6.12 guest with two running vCPUs, on which the
// erdma driver probes and drains with completions handled in softirq and workqueue context while
// the poster runs on the other CPU. base.config already builds SMP: the fragment compiles nothing
// new, and without it the same kernel boots `nosmp`, on one CPU.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(60 * 60 * 1000);

/** the guest's CPUs: the online list, then nproc */
const CPUS = "cat /sys/devices/system/cpu/online; nproc";

t.test("hil boot --config smp: two CPUs online", async (t) => {
  const iso = isolate();
  const r = await hil(["boot", "--kernel", "debian:6.12", "--config", "smp", "--", CPUS], iso.env);
  t.equal(r.exitCode, 0, r.stderr);
  t.equal(r.stdout, "0-1\n2\n", "CPUs 0 and 1 are online");
  t.match(r.stderr, /\+ config smp/, "the kernel is described with its fragment");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("the smp kernel is the base build's objects; without the fragment it boots on one CPU", async (t) => {
  const iso = isolate();
  const built = await hil(
    ["kernel", "build", "--kernel", "debian:6.12", "--config", "smp", "--json"],
    iso.env,
  );
  t.equal(built.exitCode, 0, built.stderr);
  const smp = JSON.parse(built.stdout) as { rebuild?: { mode: string; steps: number } };
  // the record of how it was built, kept with the cached entry
  t.equal(smp.rebuild?.mode, "incremental", "continued the base's build");
  t.ok(
    (smp.rebuild?.steps ?? Infinity) < 100,
    `Kbuild made ${smp.rebuild?.steps} steps (a whole build is about 2100)`,
  );
  const r = await hil(
    ["boot", "--kernel", "debian:6.12", "--", `${CPUS}; grep -c nosmp /proc/cmdline; uname -v`],
    iso.env,
  );
  t.equal(r.exitCode, 0, r.stderr);
  const [online, nproc, nosmp, version] = r.stdout.split("\n");
  t.same([online, nproc, nosmp], ["0", "1", "1"], "one CPU, booted nosmp");
  t.match(version, /\bSMP\b/, "an SMP build");
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
