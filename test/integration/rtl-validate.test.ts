// hil validate on the RTL queue engine (--device-rtl): the base and the base+series runs both use
// the verilated engine and say so in their records, and a series that breaks the driver is a
// regression there as on the TypeScript engine (the immediate-error series: rule 1 FAILs).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(15 * 60 * 1000);

const IMMEDIATE_ERROR = "fixtures/series/erdma-fail-post-in-error.mbox";

t.test("validate --device-rtl: both sides on the RTL engine, the regression found", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    [
      "validate",
      "--kernel",
      "debian:6.12",
      "--series",
      IMMEDIATE_ERROR,
      "--device-rtl",
      "--scenario",
      "drain-qp-idle,post-send-in-error",
    ],
    t,
  );
  t.equal(r.exitCode, 1, `a regression exits 1\n${`${r.stdout}${r.stderr}`.slice(-4000)}`);
  t.match(
    r.stdout,
    /^post-send-in-error\s+(?:[\w-]+,)*ib(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL\s+rule 1: post call \d+ to qp in ERR returned -22, not 0/m,
  );
  for (const side of ["base", "patched"]) {
    const v = JSON.parse(readFileSync(join(dir, side, "verdicts.json"), "utf8"));
    t.match(v.device, { rtl: "rtl", profile: "erdma-reflush" }, `the ${side} run records the RTL engine`);
  }
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
