// harness/bench/connect-race.ts refuses bad arguments with one line naming the option, before it
// builds or boots anything.
import { spawnSync } from "node:child_process";
import t from "tap";

const bench = (args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "harness/bench/connect-race.ts", ...args], {
    encoding: "utf8",
    timeout: 60_000,
  });

for (const [args, message] of [
  [["--runs", "0"], "--runs 0: a whole number >= 1"],
  [["--runs", "2.5"], "--runs 2.5: a whole number >= 1"],
  [["--load", "x"], "--load x: a whole number >= 0"],
] as const) {
  t.test(`${args.join(" ")} is refused`, async (t) => {
    const r = bench([...args]);
    t.equal(r.status, 1);
    t.equal(r.stderr.trim(), message, "one line, naming the option");
    t.equal(r.stdout, "");
  });
}
