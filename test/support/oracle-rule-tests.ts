/**
 * Every unit test that exercises the oracle's rules, in one process: the command Stryker's command
 * runner runs for each mutant of harness/oracle/rules (stryker.config.json, `npm run mutate:oracle`).
 * One process rather than one per file because tap's start-up (about 2 s on this machine) would be
 * paid per file and mutant. tap sets the exit code: non-zero when any test fails.
 */
import { readdirSync } from "node:fs";

const UNIT = new URL("../unit/", import.meta.url);
const FILES = [
  "oracle-rules.test.ts",
  "verdict-known-bugs.test.ts",
  "suite-faults.test.ts",
  ...readdirSync(UNIT)
    .filter((f) => /^oracle-rule-.+\.test\.ts$/.test(f))
    .sort(),
];

for (const file of FILES) await import(new URL(file, UNIT).href);
