// `--kernel debian-image:6.12`: Debian's built kernel of the version debian:6.12 compiles, booted
// with erdma, siw, RTRS and RNBD built out of tree. It boots as base.config's kernels do (one CPU,
// the 10 s hung-task timeout), and judges scenarios as the compiled kernel does: erdma's against
// the default suite's golden record (the compiled kernel's verdicts, which
// suite-verdicts-golden.test.ts holds it to), siw's against a run of the compiled kernel. A config
// fragment Debian's config cannot meet is one error naming the option and the kernel to compile.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, hilWithRunDir, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";
import { type RuleCell, ruleCells } from "../support/verdicts.ts";

t.setTimeout(30 * 60 * 1000);

const IMAGE = "debian-image:6.12";

t.test("hil boot: Debian's kernel, one CPU, the 10 s hung-task timeout, erdma and siw loaded", async (t) => {
  const iso = isolate();
  const script =
    "uname -r; nproc; cat /proc/sys/kernel/hung_task_timeout_secs; modprobe siw; for m in erdma siw; do [ -d /sys/module/$m ] && echo $m; done";
  const r = await hil(["boot", "--kernel", IMAGE, "--", script], iso.env);
  t.equal(r.exitCode, 0, r.stderr);
  const [release, cpus, hung, ...loaded] = r.stdout.trim().split("\n");
  t.match(release, /^6\.12\.\d+\+deb12-amd64$/, "Debian's release, not a compiled one");
  t.equal(cpus, "1", "nosmp: one CPU, as hil's own kernels boot");
  t.equal(hung, "10", "base.config's CONFIG_DEFAULT_HUNG_TASK_TIMEOUT, set at boot");
  t.same(loaded, ["erdma", "siw"], "the drivers built out of tree load");
  t.match(r.stderr, /debian-image:6\.12/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("hil run: erdma scenarios judged as the golden record (the compiled kernel) says", async (t) => {
  const scenarios = "drain-qp-busy-mixed,drain-reads-outstanding,fault-stall-sq-drain,storage-pattern-reg-mr";
  const { iso, dir, r } = await hilWithRunDir(["run", "--kernel", IMAGE, "--scenario", scenarios], t);
  t.equal(r.exitCode, 0, `${r.stdout.slice(-3000)}${r.stderr.slice(-3000)}`);
  const golden = (
    JSON.parse(readFileSync(join(REPO_ROOT, "test/fixtures/verdicts/default-suite.json"), "utf8")) as {
      cells: Record<string, RuleCell>;
    }
  ).cells;
  const want = Object.fromEntries(
    Object.entries(golden).filter(([k]) => scenarios.split(",").includes(k.split("[")[0] ?? "")),
  );
  const got = ruleCells(dir);
  t.same(Object.keys(got).sort(), Object.keys(want).sort(), "the same scenarios and rule sets");
  for (const [cell, w] of Object.entries(want)) t.same(got[cell], w, cell);
  const verdicts = new Set(Object.values(want).map((c) => c.verdict));
  t.ok(
    verdicts.has("PASS") && verdicts.has("XFAIL"),
    "passes and expected failures (a judged hang among them)",
  );
  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as {
    kernel: string;
    release: string;
  };
  t.equal(record.kernel, IMAGE);
  t.match(record.release, /\+deb12-amd64$/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("hil run --driver siw: the siw built out of tree judges as the compiled kernel's", async (t) => {
  const scenarios = "drain-qp-busy-mixed,post-send-in-error,drain-rq-outstanding";
  const runs: Record<string, Record<string, RuleCell>> = {};
  for (const kernel of ["debian:6.12", IMAGE]) {
    const iso = isolate();
    const dir = t.testdir({ [kernel.replace(":", "-")]: {} });
    const r = await hil(
      ["run", "--kernel", kernel, "--driver", "siw", "--scenario", scenarios, "--run-dir", dir],
      iso.env,
    );
    t.equal(r.exitCode, 0, `${kernel}: ${r.stdout.slice(-2000)}${r.stderr.slice(-2000)}`);
    runs[kernel] = ruleCells(dir);
    t.same(leftovers(iso), { processes: [], entries: [] }, `${kernel}: nothing left behind`);
  }
  t.ok(Object.keys(runs[IMAGE] ?? {}).length >= 3, "cells were judged");
  t.same(runs[IMAGE], runs["debian:6.12"], "every cell and rule as on the compiled kernel");
});

t.test(
  "a fragment Debian's config cannot meet is one error naming the option and the kernel to compile",
  async (t) => {
    const iso = isolate();
    const r = await hil(["boot", "--kernel", IMAGE, "--config", "debug", "--", "true"], iso.env);
    t.equal(r.exitCode, 2, r.stderr);
    t.match(
      r.stderr,
      /debian-image:6\.12 cannot give \d+ option\(s\) the config fragments ask for: CONFIG_KASAN,/,
    );
    t.match(r.stderr, /CONFIG_KASAN=y \(debug:\d+\): not set in Debian's config-6\.12\.\d+\+deb12-amd64/);
    t.match(r.stderr, /--kernel debian:6\.12/);
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);
