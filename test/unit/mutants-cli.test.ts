// The mutation campaign's bad input: an unknown --driver, or a selection of series none of which runs
// on the driver asked for, is one error and exit 2 before any base run, with no run directory made.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { REPO_ROOT } from "../support/cli.ts";

t.test("the campaign refuses a driver it does not know, or one no selected series runs on", async (t) => {
  const { execa } = await import("execa");
  const runDir = join(t.testdir({}), "campaign");
  for (const [args, message] of [
    [["--driver", "mlx5"], /^--driver mlx5: one of siw, erdma, rxe$/m],
    [["--driver", "siw", "--only", "no-reflush-after-post"], /^no series of the manifest runs on siw$/m],
  ] as const) {
    const r = await execa(
      "node",
      ["--import", "tsx", "harness/bench/mutants.ts", ...args, "--run-dir", runDir],
      { cwd: REPO_ROOT, reject: false, all: true },
    );
    t.equal(r.exitCode, 2, `${args.join(" ")}: bad input`);
    t.match(r.all, message, "one line saying what is wrong");
    t.notMatch(r.all, /\[mutants\] base:/, "no base run started");
    t.notOk(existsSync(runDir), "no run directory made");
  }
  t.same(readdirSync(join(runDir, "..")), [], "nothing left in the test's directory");
});
