import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createRunDir, sweepStaleRunDirs } from "../../qemu/launch/rundir.ts";

t.test("run dirs carry their owner; dead owners' dirs are swept, live and fresh ones kept", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "hil-rundir-test-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const deadPid = spawnSync("true").pid as number;
  const make = (name: string, owner?: number) => {
    const dir = join(root, name);
    mkdirSync(dir);
    if (owner !== undefined) writeFileSync(join(dir, "owner.pid"), `${owner}\n`);
    return dir;
  };
  const dead = make("hil-guest-dead", deadPid);
  const live = make("hil-guest-live", process.pid);
  const fresh = make("hil-guest-fresh");
  const old = make("hil-guest-old");
  utimesSync(old, new Date(0), new Date(0));
  const other = make("someone-else", deadPid);
  t.same(sweepStaleRunDirs("hil-guest-", root).sort(), [dead, old].sort());
  t.ok(existsSync(live));
  t.ok(existsSync(fresh));
  t.ok(existsSync(other), "other prefixes are not touched");
  t.same(sweepStaleRunDirs("hil-guest-", join(root, "missing")), []);
});

t.test("createRunDir makes a temp dir owned by this process", async (t) => {
  const dir = await createRunDir("hil-rundir-test-");
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(readFileSync(join(dir, "owner.pid"), "utf8").trim(), String(process.pid));
});
