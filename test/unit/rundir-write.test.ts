// Writing a run directory: every file whole or not at all, and a full file system (a real small
// tmpfs) one HilError naming the run directory and the file, exit 3, leaving no temporary file and
// no half-written verdicts.json. harness/rundir/write.ts, util/atomic-write.ts, and the line the
// device server prints when its hardware trace stops.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import { runDirFull, writeRunFile, writeRunRecord } from "../../harness/rundir/write.ts";
import { traceFailureIn, traceFailureLine } from "../../qemu/device-server/trace-failure.ts";
import { diskFullError, isTempName, tempNameFor, writeFileAtomic } from "../../util/atomic-write.ts";
import { HilError } from "../../util/errors.ts";
import { noTmpfs, smallTmpfs } from "../support/tmpfs.ts";

/** A valid record of about `bytes` bytes. */
function recordOf(bytes: number): RunRecord {
  return {
    kernel: "debian:6.12",
    results: [{ id: "probe", title: "t", verdict: "PASS", reason: "x".repeat(bytes) }],
  };
}

t.test(
  "verdicts.json on a full disk: exit 3 naming the run dir and the file; nothing left",
  { skip: noTmpfs() },
  async (t) => {
    const disk = smallTmpfs(t, "16k");
    const runDir = join(disk, "run");
    const { mkdir } = await import("node:fs/promises");
    await mkdir(runDir);
    await writeRunRecord(runDir, recordOf(100));
    const before = await readFile(join(runDir, "verdicts.json"), "utf8");
    const err = await writeRunRecord(runDir, recordOf(64 << 10)).catch((e: unknown) => e);
    t.ok(err instanceof HilError);
    t.match(err, {
      exitCode: 3,
      where: runDir,
      message: "no space is left on the run directory's file system: verdicts.json could not be written",
    });
    t.match(
      (err as HilError).format(),
      /^[^\n]+\n\(ENOSPC\) free space there, or give a --run-dir on a larger file system$/,
    );
    t.equal(
      await readFile(join(runDir, "verdicts.json"), "utf8"),
      before,
      "the record that was there is whole",
    );
    t.same(await readdir(runDir), ["verdicts.json"], "no temporary file left");

    await t.rejects(writeRunFile(runDir, "traces.jsonl", "y".repeat(64 << 10)), {
      exitCode: 3,
      message: /: traces\.jsonl could not be written$/,
    });
    t.same(await readdir(runDir), ["verdicts.json"]);
  },
);

t.test("writes are whole: the old file or the new one, never half", async (t) => {
  const dir = t.testdir({ "f.json": "old" });
  await writeFileAtomic(join(dir, "f.json"), "new");
  t.equal(await readFile(join(dir, "f.json"), "utf8"), "new");
  const temp = tempNameFor(join(dir, "f.json"));
  t.ok(isTempName(temp.slice(dir.length + 1)), temp);
  t.notOk(isTempName("f.json"));
  // a directory where the file should go: the rename fails, the temporary file goes
  await t.rejects(writeFileAtomic(dir, "x"), { message: /^EISDIR: .*rename/ });
  t.same(await readdir(dir), ["f.json"]);
  await t.rejects(writeRunFile(dir, "missing/deeper.json", "x"), {
    exitCode: 2,
    where: dir,
    message: "missing/deeper.json could not be written",
  });
});

t.test("what counts as a full disk", async (t) => {
  const enospc = Object.assign(new Error("ENOSPC: no space left on device, write"), {
    code: "ENOSPC",
    path: "/r/traces/a.jsonl",
  });
  t.equal(diskFullError(new Error("wrapped", { cause: enospc })), enospc, "found in the causes");
  t.match(runDirFull("/r", enospc), {
    exitCode: 3,
    where: "/r",
    message: /: traces\/a\.jsonl could not be written$/,
  });
  const copy = Object.assign(new Error("ENOSPC"), {
    code: "ENOSPC",
    path: "/w/console.log",
    dest: "/r/console.log",
  });
  t.match(
    runDirFull("/r", copy),
    { message: /: console\.log could not be written$/ },
    "a copy names its destination",
  );
  const quota = Object.assign(new Error("EDQUOT"), { code: "EDQUOT", path: "/r/verdicts.json" });
  t.match(runDirFull("/r", quota), {
    message: /^the disk quota is exceeded on the run directory's file system/,
  });
  t.equal(runDirFull("/r", Object.assign(new Error("EACCES"), { code: "EACCES" })), undefined);
  t.equal(runDirFull("/r", "not an error"), undefined);
});

t.test("the device server's trace failure line reads back", async (t) => {
  const err = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  const line = traceFailureLine('/run "x"/hw-trace.jsonl', err);
  t.match(line, /^\[vfio-user warn\] /, "a warning, so the harness shows it");
  t.same(traceFailureIn(["[vfio-user warn] something else", line]), {
    file: '/run "x"/hw-trace.jsonl',
    code: "ENOSPC",
    message: "ENOSPC: no space left on device, write",
  });
  t.equal(traceFailureIn(["[vfio-user warn] trace file"]), undefined);
  const bare = traceFailureLine("/t", Object.assign(new Error("odd"), { code: "EIO" }));
  t.equal(traceFailureIn([bare])?.code, "EIO");
});
