// `--kernel debian-image:6.1`: Debian's built 6.1 (virtio as modules), booted with erdma and siw
// built out of tree from 6.1's source, judges erdma's 2022 driver as the compiled debian:6.1 does
// (test/integration/kernel-prebuilt.test.ts checks debian-image:6.12 against the compiled 6.12).
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { type RuleCell, ruleCells } from "../support/verdicts.ts";

t.setTimeout(30 * 60 * 1000);

t.test(
  "debian-image:6.1: Debian's 6.1 (virtio as modules) judges erdma's 2022 driver as the compiled 6.1",
  async (t) => {
    // drain-qp-idle hangs on 6.1's erdma (no drain support in that driver): FAILs, the same on both
    const scenarios = "drain-qp-idle,post-send-in-error,drain-reads-outstanding";
    const runs: Record<string, Record<string, RuleCell>> = {};
    for (const kernel of ["debian:6.1", "debian-image:6.1"]) {
      const iso = isolate();
      const dir = t.testdir({ [kernel.replace(":", "-")]: {} });
      const r = await hil(["run", "--kernel", kernel, "--scenario", scenarios, "--run-dir", dir], iso.env);
      t.equal(r.exitCode, 1, `${kernel}: ${r.stdout.slice(-2000)}${r.stderr.slice(-2000)}`);
      runs[kernel] = ruleCells(dir);
      t.same(leftovers(iso), { processes: [], entries: [] }, `${kernel}: nothing left behind`);
    }
    const image = runs["debian-image:6.1"] ?? {};
    t.ok(Object.keys(image).length >= 3, "cells were judged");
    t.ok(
      Object.values(image).some((c) => c.verdict === "FAIL"),
      "6.1's erdma fails a drain on either kernel",
    );
    t.same(image, runs["debian:6.1"], "every cell and rule as on the compiled kernel");
  },
);
