/**
 * The tap-in-process Stryker runner (test/support/stryker-tap-runner.ts) on a small project whose
 * one module is instrumented by hand the way Stryker's instrumenter does it (every mutant behind a
 * check of `__stryker__.activeMutant`, coverage counted under `__stryker__.currentTestId`). The
 * runner runs in a child process: it takes over tap's root test, which here is this file's own.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TestStatus } from "@stryker-mutator/api/test-runner";
import t from "tap";

const RUNNER = fileURLToPath(new URL("../support/stryker-tap-runner.ts", import.meta.url));

// Mutant 0 is static (a module-level constant); 1 flips add's operator (its test sees it); 2 adds
// zero (nothing can see it); 3 sits in a function no test calls.
const LIB = `
const ns = () => (globalThis.__stryker__ ??= {});
const cover = (...ids) => {
  const n = ns();
  const cov = (n.mutantCoverage ??= { static: {}, perTest: {} });
  const at = n.currentTestId ? (cov.perTest[n.currentTestId] ??= {}) : cov.static;
  for (const id of ids) at[id] = (at[id] ?? 0) + 1;
};
const on = (id) => ns().activeMutant === id;
cover("0");
export const LIMIT = on("0") ? 4 : 3;
export function add(a: number, b: number): number {
  cover("1", "2");
  return on("1") ? a - b : on("2") ? a + b + 0 : a + b;
}
export function unused(): number {
  cover("3");
  return on("3") ? 1 : 0;
}
`;

const ADD_TEST = `
import t from "tap";
import { add, LIMIT } from "./lib.ts";
t.test("adds", (t) => { t.equal(add(2, 1), 3); t.end(); });
t.test("limit", (t) => { t.equal(LIMIT, 3); t.end(); });
`;

// Loads lib.ts without calling it, and counts its runs with a teardown on the root test (which,
// left to tap, would end the root test once idle and run only at the process's end).
const OTHER_TEST = `
import { appendFileSync } from "node:fs";
import t from "tap";
import { LIMIT } from "./lib.ts";
t.teardown(() => appendFileSync("teardowns", "x"));
t.test("nothing of lib's functions", (t) => { t.ok(LIMIT > 0); t.end(); });
`;

/** Runs `steps` (JavaScript, `runner` in scope) in a fresh node in `dir`; returns what it printed as JSON. */
function drive(dir: string, steps: string): unknown {
  const script = `
    const { TapInProcessRunner } = await import(${JSON.stringify(RUNNER)});
    const runner = new TapInProcessRunner({ tapInProcess: { testFiles: ["add.test.ts", "other.test.ts"] } });
    const out = {};
    ${steps}
    process.stdout.write(JSON.stringify(out));
    process.exit(0);
  `;
  const stdout = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, TAP_CHILD_ID: undefined, TAP: undefined },
  });
  return JSON.parse(stdout);
}

const mutant = (id: string, extra = "") =>
  `{ activeMutant: { id: "${id}" }, mutantActivation: "runtime", reloadEnvironment: false, timeout: 0, disableBail: false, sandboxFileName: "lib.ts"${extra} }`;

t.test("coverage per test file and static, kills, survivors, reruns, root teardowns", async (t) => {
  const dir = t.testdir({ "lib.ts": LIB, "add.test.ts": ADD_TEST, "other.test.ts": OTHER_TEST });
  const out = drive(
    dir,
    `
    out.dry = await runner.dryRun({ coverageAnalysis: "perTest", timeout: 0, disableBail: false });
    out.flipped = await runner.mutantRun(${mutant("1", ', testFilter: ["add.test.ts"]')});
    out.zero = await runner.mutantRun(${mutant("2", ', testFilter: ["add.test.ts"]')});
    out.flippedAgain = await runner.mutantRun(${mutant("1")});
    out.none = await runner.mutantRun(${mutant("none")});
    out.staticLate = await runner.mutantRun(${mutant("0")});
    `,
  ) as Record<string, Record<string, unknown>>;

  const dry = out.dry as {
    status: string;
    tests: { id: string; status: TestStatus }[];
    mutantCoverage: unknown;
  };
  t.equal(dry.status, "complete");
  t.same(
    dry.tests.map((test) => [test.id, test.status]),
    [
      ["add.test.ts", TestStatus.Success],
      ["other.test.ts", TestStatus.Success],
    ],
  );
  t.same(
    dry.mutantCoverage,
    { static: { "0": 1 }, perTest: { "add.test.ts": { "1": 1, "2": 1 } } },
    "loading counts as static; each file's tests count under its name; what no test reaches is absent",
  );

  t.equal(out.flipped?.status, "killed");
  t.same(out.flipped?.killedBy, ["add.test.ts"]);
  t.match(out.flipped?.failureMessage, /^add\.test\.ts: not ok 1 - should be equal \/ not ok \d+ - adds\b/);
  t.same(out.zero, { status: "survived", nrOfTests: 1 }, "a mutant its test cannot see survives");
  t.equal(
    out.flippedAgain?.status,
    "killed",
    "a file runs again under the next mutant, with every file when unfiltered",
  );
  t.same(out.flippedAgain?.killedBy, ["add.test.ts"], "bails at the first file that fails");
  t.same(out.none, { status: "survived", nrOfTests: 2 }, "no mutant active: every file passes again");
  t.same(
    out.staticLate,
    { status: "survived", nrOfTests: 2 },
    "a static mutant switched on at run time after loading changes nothing: why it needs fresh modules",
  );
  t.equal(
    readFileSync(join(dir, "teardowns"), "utf8"),
    "xxx",
    "other.test.ts's root teardown ran after each of its 3 runs",
  );
});

t.test("a static mutant as a fresh worker's first is active while its modules load", async (t) => {
  const dir = t.testdir({ "lib.ts": LIB, "add.test.ts": ADD_TEST, "other.test.ts": OTHER_TEST });
  const out = drive(
    dir,
    `out.static = await runner.mutantRun({ ...${mutant("0")}, mutantActivation: "static" });`,
  ) as {
    static: { status: string; killedBy: string[] };
  };
  t.equal(out.static.status, "killed");
  t.same(out.static.killedBy, ["add.test.ts"], "LIMIT is 4: add.test.ts's limit test fails");
});

t.test(
  "a static mutant after others runs on a new copy of the project's modules; the first stay as they were",
  async (t) => {
    const dir = t.testdir({ "lib.ts": LIB, "add.test.ts": ADD_TEST, "other.test.ts": OTHER_TEST });
    const out = drive(
      dir,
      `out.capabilities = runner.capabilities();
     out.before = await runner.mutantRun(${mutant("none")});
     out.static = await runner.mutantRun({ ...${mutant("0")}, mutantActivation: "static" });
     out.after = await runner.mutantRun({ ...${mutant("none")}, reloadEnvironment: true });
     out.again = await runner.mutantRun({ ...${mutant("0")}, mutantActivation: "static" });`,
    ) as Record<string, { status?: string; killedBy?: string[] }>;
    t.same(out.capabilities, { reloadEnvironment: true });
    t.equal(out.before?.status, "survived");
    t.equal(out.static?.status, "killed");
    t.same(out.static?.killedBy, ["add.test.ts"], "LIMIT is 4 in the new copy");
    t.equal(out.after?.status, "survived", "the first modules never loaded with mutant 0 active");
    t.equal(out.again?.status, "killed", "each static mutant gets its own copy");
  },
);

t.test("a config without test files is refused, naming the option", async (t) => {
  const { TapInProcessRunner } = await import("../support/stryker-tap-runner.ts");
  t.throws(
    () => new TapInProcessRunner({ tapInProcess: { testFiles: [] } } as never),
    /tapInProcess\.testFiles/,
  );
  t.throws(() => new TapInProcessRunner({} as never), /tapInProcess\.testFiles/);
});
