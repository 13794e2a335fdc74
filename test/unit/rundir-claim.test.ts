// A run directory holds one run: the run locks it while it writes it (a second run into it is
// refused, naming the holder), a lock whose run is gone is taken over, and a directory that holds
// a run already (finished or interrupted) is refused. harness/rundir/claim.ts and lock.ts.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import t from "tap";
import { claimRunDir } from "../../harness/rundir/claim.ts";
import { LOCK_FILE } from "../../harness/rundir/lock.ts";
import { HilError } from "../../util/errors.ts";
import { HIL_BIN, REPO_ROOT } from "../support/cli.ts";
import { processGone } from "../support/guest.ts";

const holder = (dir: string) => JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")) as { pid: number };

/** A pid that is surely not running: a child that has exited. */
async function deadPid(): Promise<number> {
  const child = execa(process.execPath, ["-e", ""]);
  await child;
  return child.pid as number;
}

/** hil as a user runs it, from the clone, ending within two minutes. */
function hil(args: string[]) {
  return execa(HIL_BIN, args, { cwd: REPO_ROOT, reject: false, stdin: "ignore", timeout: 120_000 });
}

t.test("a new directory is made and locked for the run; release removes the lock", async (t) => {
  const dir = join(t.testdir({}), "a/b/run");
  const claim = await claimRunDir(dir);
  t.equal(claim.dir, dir);
  t.equal(holder(dir).pid, process.pid, "the lock names this process");
  await claim.release();
  t.notOk(existsSync(join(dir, LOCK_FILE)), "the lock is gone");
  t.same(await readdir(dir), []);
});

t.test("a second claim while the first holds it is refused, naming the holder", async (t) => {
  const dir = t.testdir({});
  const first = await claimRunDir(dir);
  const err = await claimRunDir(dir).catch((e: unknown) => e);
  t.ok(err instanceof HilError);
  t.match(err, {
    exitCode: 2,
    where: dir,
    message: `the run directory is in use by another hil run (pid ${process.pid}, started `,
  });
  t.equal(holder(dir).pid, process.pid, "the holder keeps its lock");
  await first.release();
  const again = await claimRunDir(dir);
  await again.release();
});

t.test("a stale lock (its pid gone, or reused by a later process) is taken over", async (t) => {
  const dir = t.testdir({});
  await writeFile(
    join(dir, LOCK_FILE),
    JSON.stringify({ pid: await deadPid(), host: hostname(), started: "2026-01-01T00:00:00Z" }),
  );
  const a = await claimRunDir(dir);
  t.equal(holder(dir).pid, process.pid, "a dead pid's lock is taken over");
  await a.release();
  // this very pid, but a process that started at another time: the pid was reused
  await writeFile(
    join(dir, LOCK_FILE),
    JSON.stringify({ pid: process.pid, host: hostname(), started: "x", procStart: "1" }),
  );
  const b = await claimRunDir(dir);
  t.equal(holder(dir).pid, process.pid);
  t.not(readFileSync(join(dir, LOCK_FILE), "utf8"), "", "a lock of its own, whole");
  await b.release();
  await writeFile(join(dir, LOCK_FILE), "garbage");
  const c = await claimRunDir(dir);
  await c.release();
  t.notOk(existsSync(join(dir, LOCK_FILE)));
});

t.test("another machine's lock cannot be checked from here: refused", async (t) => {
  const dir = t.testdir({});
  await writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid: 1, host: "elsewhere.example", started: "s" }));
  await t.rejects(claimRunDir(dir), {
    exitCode: 2,
    message: /in use by another hil run \(pid 1 on elsewhere\.example/,
  });
});

t.test("a directory that holds a run already, finished or interrupted, is refused", async (t) => {
  for (const [what, files] of [
    ["a finished run", { "verdicts.json": "{}", traces: { "s.jsonl": "" } }],
    ["an interrupted run", { traces: { "s.jsonl": "" }, "console.log": "", "hw-trace.jsonl": "" }],
    ["a reboot's console", { "console-2.log": "" }],
    ["a matrix job's series", { series: {} }],
    ["a judged lab's log", { "lava-log.txt": "" }],
  ] as const) {
    const dir = t.testdir(files);
    const err = await claimRunDir(dir).catch((e: unknown) => e);
    t.match(
      err,
      { exitCode: 2, where: dir, message: /^already holds a run \(.+\): a run directory holds one run$/ },
      what,
    );
    t.match((err as HilError).detail, /give a new --run-dir/);
    t.notOk(existsSync(join(dir, LOCK_FILE)), `${what}: no lock left behind`);
  }
  const withInput = t.testdir({ "my-scenario.yaml": "x", notes: {} });
  const ok = await claimRunDir(withInput);
  await ok.release();
  t.pass("files that are not a run's (a scenario file beside it) are no obstacle");
  const matrix = t.testdir({ "matrix.json": "{}" });
  await t.rejects(claimRunDir(matrix, "matrix"), { message: /^already holds a matrix \(matrix\.json\)/ });
});

t.test("discard removes what the run wrote, and a directory it made", async (t) => {
  const root = t.testdir({ kept: { "input.yaml": "x" } });
  const made = await claimRunDir(join(root, "new"));
  await mkdir(join(root, "new", "traces"));
  await writeFile(join(root, "new", "console.log"), "boot");
  await writeFile(join(root, "new", ".verdicts.json.123.0a1b2c3d.tmp"), "half");
  await made.discard();
  t.notOk(existsSync(join(root, "new")), "the directory the run made is gone");
  const kept = await claimRunDir(join(root, "kept"));
  await writeFile(join(root, "kept", "hw-trace.jsonl"), "x");
  await kept.discard();
  t.same(
    await readdir(join(root, "kept")),
    ["input.yaml"],
    "a directory that was there stays, with what was in it",
  );
});

t.test(
  "hil run into a directory another run holds: exit 2 at once, naming the holder; the lock goes with it",
  async (t) => {
    const dir = t.testdir({});
    const script = fileURLToPath(new URL("../support/hold-run-dir.ts", import.meta.url));
    const child = execFile(process.execPath, ["--import", "tsx", script, dir], { cwd: REPO_ROOT });
    t.teardown(() => child.kill("SIGKILL"));
    const { pid } = await new Promise<{ pid: number }>((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (d) => {
        out += d;
        if (out.includes("\n")) resolve(JSON.parse(out));
      });
      child.on("exit", (code) => reject(new Error(`the holder exited (${code})`)));
    });
    t.equal(holder(dir).pid, pid);
    const r = await hil(["run", "--scenario", "drain-qp-idle", "--run-dir", dir]);
    t.equal(r.exitCode, 2);
    t.equal(
      String(r.stderr)
        .trimEnd()
        .split("\n")
        .filter((l) => l.startsWith("hil: error:"))[0],
      `hil: error: ${dir}: the run directory is in use by another hil run (pid ${pid}, started ${JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")).started})`,
    );
    t.notMatch(r.stderr, /\[kernel\]|\[guest\]/, "refused before anything is built or booted");
    t.equal(holder(dir).pid, pid, "the holder's lock is untouched");
    child.kill("SIGTERM");
    t.ok(await processGone(pid), "the holder ends on SIGTERM");
    t.notOk(existsSync(join(dir, LOCK_FILE)), "and its lock goes with it");
  },
);

t.test(
  "hil run takes over a stale lock with a notice; a failed run leaves the directory as it was",
  async (t) => {
    const dir = t.testdir({ "my-scenario.yaml": "x" });
    const dead = await deadPid();
    await writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid: dead, host: hostname(), started: "then" }));
    const r = await hil([
      "run",
      "--kernel",
      join(dir, "no-such-kernel"),
      "--scenario",
      "drain-qp-idle",
      "--run-dir",
      dir,
    ]);
    t.match(
      r.stderr,
      `hil: notice: ${dir}: taking over the lock of a run that is gone (pid ${dead}, started then)`,
    );
    t.equal(r.exitCode, 2, r.stderr);
    t.same(await readdir(dir), ["my-scenario.yaml"], "no lock, nothing of the run left");
  },
);
