import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { withLock } from "../../util/cache-lock.ts";
import { tempDir } from "../support/temp-dir.ts";

t.test("processes contending for one lock each get it alone", async (t) => {
  const dir = tempDir(t, "hil-lock-test-");
  const lock = join(dir, "entry.lock");
  const counter = join(dir, "counter");
  const inside = join(dir, "inside");
  writeFileSync(counter, "0");
  const { execa } = await import("execa");
  const lockModule = new URL("../../util/cache-lock.ts", import.meta.url).href;
  // read, wait, write: two holders at once would lose an increment; each also checks it is alone
  const script = `
    import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
    import { withLock } from ${JSON.stringify(lockModule)};
    const [lock, counter, inside] = process.argv.slice(1);
    for (let i = 0; i < 5; i++)
      await withLock(lock, "counter", async () => {
        if (existsSync(inside)) throw new Error("two holders at once");
        writeFileSync(inside, String(process.pid));
        const n = Number(readFileSync(counter, "utf8"));
        await new Promise((r) => setTimeout(r, 20));
        writeFileSync(counter, String(n + 1));
        rmSync(inside);
      });`;
  const runs = Array.from({ length: 4 }, () =>
    execa("node", ["--import", "tsx", "--input-type=module", "-e", script, lock, counter, inside], {
      reject: false,
    }),
  );
  const results = await Promise.all(runs);
  for (const [i, r] of results.entries())
    t.equal(r.exitCode, 0, `process ${i} finished${r.exitCode === 0 ? "" : `: ${r.stderr}`}`);
  t.equal(readFileSync(counter, "utf8"), "20", "every increment kept");
  t.same(readdirSync(dir).sort(), ["counter"], "no lock or side file left");
});

t.test("an empty lock file is one being made: waited for while young, taken over when old", async (t) => {
  const dir = tempDir(t, "hil-lock-test-");
  const lock = join(dir, "entry.lock");
  writeFileSync(lock, "");
  let got = false;
  const waiting = withLock(lock, "young", async () => {
    got = true;
  });
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(got, "an empty lock of a moment ago is not taken over");
  t.ok(existsSync(lock));
  const old = new Date(Date.now() - 60_000);
  utimesSync(lock, old, old);
  await waiting;
  t.ok(got, "an empty lock a minute old is");
  t.notOk(existsSync(lock));
});

t.test("a lock held by a dead process is taken over; its file holds the new owner while held", async (t) => {
  const dir = tempDir(t, "hil-lock-test-");
  const lock = join(dir, "entry.lock");
  writeFileSync(lock, "999999999");
  const owner = await withLock(lock, "stale", async () => readFileSync(lock, "utf8"));
  t.equal(owner, String(process.pid));
  t.same(readdirSync(dir), [], "no lock or side file left");
});

t.test("releasing leaves a lock that is no longer ours", async (t) => {
  const dir = tempDir(t, "hil-lock-test-");
  const lock = join(dir, "entry.lock");
  await withLock(lock, "mine", async () => {
    // as if the lock had been taken from us and another process held it now
    writeFileSync(lock, "1");
  });
  t.equal(readFileSync(lock, "utf8"), "1");
});
