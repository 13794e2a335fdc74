// `npm ci --omit=dev` then `hil report`: a copy of the working tree with the production
// dependencies alone (installed by npm from package-lock.json) writes every text report; the kcidb
// one is validated at run time with ajv, a runtime dependency. tsx, the loader bin/hil runs the
// TypeScript through, is a devDependency: it is taken from the full install and every import of
// the CLI resolves from the copy's own node_modules, so a runtime import of a dev-only package
// fails here.
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";
import t from "tap";
import { REPO_ROOT } from "../support/cli.ts";

t.setTimeout(10 * 60 * 1000);

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir-mutant", import.meta.url));
const TSX = pathToFileURL(join(REPO_ROOT, "node_modules", "tsx", "dist", "esm", "index.mjs")).href;

t.test("hil report writes ktap, junit and a validated kcidb with production dependencies only", async (t) => {
  const copy = mkdtempSync(join(tmpdir(), "hil-omit-dev-"));
  t.teardown(() => rmSync(copy, { recursive: true, force: true }));
  // Regular files only: a worktree's node_modules may be a symlink to a shared install, and npm ci
  // in a copy holding that symlink would empty the shared install through it.
  const files = (await execa("git", ["ls-files", "-co", "--exclude-standard"], { cwd: REPO_ROOT })).stdout
    .split("\n")
    .filter(
      (f) =>
        f &&
        !f.split("/").includes("node_modules") &&
        lstatSync(join(REPO_ROOT, f), { throwIfNoEntry: false })?.isFile(),
    );
  for (const f of files) {
    mkdirSync(dirname(join(copy, f)), { recursive: true });
    cpSync(join(REPO_ROOT, f), join(copy, f));
  }
  if (lstatSync(join(copy, "node_modules"), { throwIfNoEntry: false }) !== undefined)
    throw new Error(`${copy}/node_modules exists before npm ci: refusing to run it there`);
  const ci = await execa(
    "npm",
    ["ci", "--omit=dev", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"],
    { cwd: copy, reject: false },
  );
  t.equal(ci.exitCode, 0, `npm ci --omit=dev: ${ci.stderr.slice(-1000)}`);
  t.ok(existsSync(join(copy, "node_modules", "ajv")), "ajv is a production dependency");
  t.notOk(existsSync(join(copy, "node_modules", "tap")), "dev dependencies are not installed");
  for (const format of ["ktap", "junit", "kcidb"]) {
    const r = await execa(
      "node",
      ["--import", TSX, join(copy, "harness", "cli", "main.ts"), "report", FIXTURE, "--format", format],
      // a user's environment: not tap's (its NODE_OPTIONS load tap's own dev-only hooks)
      {
        cwd: tmpdir(),
        reject: false,
        extendEnv: false,
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
      },
    );
    t.equal(r.exitCode, 0, `hil report --format ${format}: ${r.stderr.slice(-1500)}`);
    if (format === "kcidb") t.same(JSON.parse(r.stdout).version, { major: 5, minor: 0 });
    else t.ok(r.stdout.length > 1000, `${format}: a report on stdout`);
  }
});
