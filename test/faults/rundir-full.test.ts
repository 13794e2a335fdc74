/**
 * A run whose run directory's disk fills up (a real small tmpfs as the run directory, the real
 * suite on a real guest): one clear error naming the directory and the file that could not be
 * written, exit 3, no stack, no verdict table, no verdicts.json (whole or half), no temporary
 * file, nothing of the run left on the disk, no QEMU or device server left running. The same run
 * on a tmpfs with room passes: the failure is the disk's.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { hil, type Isolation, isolate, leftovers } from "../support/cli.ts";
import { noTmpfs, smallTmpfs } from "../support/tmpfs.ts";
import { type FaultRow, faultTable } from "./table.ts";

t.setTimeout(60 * 60_000);

const table = faultTable(import.meta.url);

const RUN = ["run", "--scenario", "drain-qp-idle", "--rules", "linux"];

function expectOneDiskError(
  t: Test,
  r: { exitCode: number; stdout: string; stderr: string },
  runDir: string,
  row: FaultRow,
) {
  row.exit = String(r.exitCode);
  row.verdict = `no verdict: ${r.stderr
    .split("\n")
    .filter((l) => l.startsWith("hil: "))
    .join(" ")}`;
  t.equal(r.exitCode, 3, r.stderr);
  t.equal(r.stdout, "", "no verdict table");
  const errors = r.stderr.split("\n").filter((l) => l.startsWith("hil: "));
  t.equal(errors.length, 1, `one error: ${errors.join(" | ")}`);
  t.match(
    errors[0],
    new RegExp(
      `^hil: error: ${runDir}: no space is left on the run directory's file system: (console(-\\d+)?\\.log|hw-trace(-\\d+)?\\.jsonl|traces/[^ ]+) could not be written$`,
    ),
  );
  t.match(r.stderr, /^\(ENOSPC\) free space there, or give a --run-dir on a larger file system$/m);
  t.notMatch(r.stderr, /internal error|^\s+at /m, "no stack");
}

/** The run into `runDir` on the small tmpfs `disk`, isolated and timed: one disk error (its row
 * filled in); what it left on the disk and running goes in the row, for the caller to assert. */
async function runOnFullDisk(t: Test, disk: string, runDir: string, row: FaultRow): Promise<Isolation> {
  const iso = isolate();
  const started = Date.now();
  const r = await hil([...RUN, "--run-dir", runDir], iso.env);
  row.ms = Date.now() - started;
  expectOneDiskError(t, r, runDir, row);
  row.leftovers = [...readdirSync(disk), ...leftovers(iso).processes];
  return iso;
}

t.test(
  "a run directory on a nearly full disk: one error, exit 3, nothing left",
  { skip: noTmpfs() },
  async (t) => {
    for (const size of ["40k", "120k"]) {
      await t.test(`tmpfs of ${size}, a new run directory on it`, async (t) => {
        const row = table.row(t, `a full disk for the run directory (a new one on a ${size} tmpfs)`);
        const disk = smallTmpfs(t, size);
        const runDir = join(disk, "run");
        const iso = await runOnFullDisk(t, disk, runDir, row);
        t.notOk(existsSync(runDir), "the run directory the run made is gone, with what was in it");
        t.same(readdirSync(disk), [], "nothing left on the disk (no verdicts.json, no temporary file)");
        t.same(leftovers(iso).processes, [], "no QEMU or device server left running");
      });
    }
    await t.test("the run directory is the full disk itself: it stays, empty", async (t) => {
      const row = table.row(t, "a full disk for the run directory (the 40k tmpfs itself)");
      const disk = smallTmpfs(t, "40k");
      const iso = await runOnFullDisk(t, disk, disk, row);
      t.same(readdirSync(disk), [], "what the run wrote is removed; the directory stays");
      t.same(leftovers(iso).processes, []);
    });
  },
);

t.test("the same run with room on the disk passes", { skip: noTmpfs() }, async (t) => {
  const disk = smallTmpfs(t, "8m");
  const runDir = join(disk, "run");
  const r = await hil([...RUN, "--run-dir", runDir]);
  t.equal(r.exitCode, 0, r.stderr);
  const record = JSON.parse(readFileSync(join(runDir, "verdicts.json"), "utf8"));
  t.equal(record.scenarios[0].name, "drain-qp-idle");
  t.same(
    readdirSync(runDir).sort(),
    ["console.log", "hw-trace.jsonl", "traces", "verdicts.json"],
    "a whole run: no lock, no temporary file",
  );
  const again = await hil([...RUN, "--run-dir", runDir]);
  t.equal(again.exitCode, 2, "a second run into it is refused");
  t.match(
    again.stderr,
    `hil: error: ${runDir}: already holds a run (console.log, hw-trace.jsonl, traces, verdicts.json): a run directory holds one run`,
  );
});
