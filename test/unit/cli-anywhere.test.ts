// hil runs from any directory: by the absolute path of bin/hil from a directory outside the clone,
// and by name through a symlink on PATH laid out as `npm link` and global installs lay it out
// (<prefix>/bin/hil -> ../lib/node_modules/erdma-hil/bin/hil, the package itself a symlink).
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { execa } from "execa";
import t, { type Test } from "tap";
import { HIL_BIN, REPO_ROOT } from "../support/cli.ts";

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }
).version;

/** A new directory outside the clone, removed when the test ends. */
function outsideDir(t: Test, prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  t.ok(relative(realpathSync(REPO_ROOT), dir).startsWith(".."), `${dir} is outside the clone`);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const r = await execa(command, args, {
    cwd,
    env: { ...process.env, ...env },
    reject: false,
    stdin: "ignore",
    timeout: 120_000,
  });
  return { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** What `hil --version` and `hil run --help` must print wherever they are run from. */
async function checkCommands(t: Test, command: string, cwd: string, env: NodeJS.ProcessEnv = {}) {
  const version = await run(command, ["--version"], cwd, env);
  t.equal(version.exitCode, 0, version.stderr);
  t.notMatch(version.stderr, /ERR_MODULE_NOT_FOUND|Cannot find/);
  const lines = version.stdout.split("\n");
  t.match(
    lines[0],
    new RegExp(
      `^hil ${PACKAGE_VERSION.replace(/\./g, "\\.")}\\+(g[0-9a-f]{12}(\\.dirty)?|src\\.[0-9a-f]{16})$`,
    ),
    "hil's version is package.json's, with the code it is at",
  );
  t.match(lines[1], /^qemu /);
  t.match(lines[2], /^kernel debian:6\.12[ :]/);
  t.match(lines[3], /^rdma-core[ :]/);

  const help = await run(command, ["run", "--help"], cwd, env);
  t.equal(help.exitCode, 0, help.stderr);
  t.match(help.stdout, /^Usage: hil run \[options\]/);
  for (const option of [
    "--kernel <base>",
    "--scenario <glob>",
    "--executor <kind>",
    "--run-dir <dir>",
    "--json",
  ])
    t.ok(help.stdout.includes(option), `run --help names ${option}`);
  t.same(readdirSync(cwd), [], "nothing written in the working directory");
}

t.test("bin/hil by its absolute path from a directory outside the clone", async (t) => {
  const cwd = outsideDir(t, "hil-anywhere-");
  await checkCommands(t, HIL_BIN, cwd);
});

t.test("hil by name through a symlink on PATH, npm-link style, with an empty cache", async (t) => {
  const prefix = outsideDir(t, "hil-prefix-");
  const cache = outsideDir(t, "hil-cache-");
  const cwd = outsideDir(t, "hil-cwd-");
  mkdirSync(join(prefix, "lib", "node_modules"), { recursive: true });
  symlinkSync(REPO_ROOT, join(prefix, "lib", "node_modules", "erdma-hil"));
  mkdirSync(join(prefix, "bin"));
  symlinkSync("../lib/node_modules/erdma-hil/bin/hil", join(prefix, "bin", "hil"));
  const env = { PATH: `${join(prefix, "bin")}:${process.env.PATH ?? ""}`, HIL_CACHE_DIR: cache };
  await checkCommands(t, "hil", cwd, env);
  t.same(readdirSync(cache), [], "hil --version built and fetched nothing into the cache");
});
