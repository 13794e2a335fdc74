// hil itself stopped mid-scenario, on a real debian:6.12 guest with the emulated erdma device:
// SIGTERM (a `kill`) and SIGINT (Ctrl-C: the whole process group) make hil die of that signal
// (exit 143, 130) within seconds, leaving no QEMU, no device server, no temp dir, no lock and no
// half-written file; SIGKILL leaves hil no say, yet QEMU and the device server go with it (a
// parent-death signal, --exit-with-parent) and what it could not remove (its temp dirs, a stale
// lock in its run directory) is swept or taken over by the next run, which runs cleanly.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { LOCK_FILE } from "../../harness/rundir/lock.ts";
import { isTempName } from "../../util/atomic-write.ts";
import { isolate, leftovers } from "../support/cli.ts";
import { processExists } from "../support/guest.ts";
import {
  nextRunPasses,
  pausedScenario,
  processesGoneFrom,
  RUN_612_LINUX,
  startRunningScenario,
} from "./live-run.ts";
import { exitText, faultTable } from "./table.ts";

t.setTimeout(40 * 60 * 1000);

const table = faultTable(import.meta.url);
// one TMPDIR for the three runs and the next one: what one leaves, the next finds
const iso = isolate();
const root = t.testdir({ "paused.yaml": pausedScenario(20_000) });
const scenario = join(root, "paused.yaml");

/** The run directory's entries a dead run must not leave: its lock, a verdicts.json, a temp file. */
function halfWritten(dir: string): string[] {
  return readdirSync(dir).filter((n) => n === LOCK_FILE || n === "verdicts.json" || isTempName(n));
}

const CASES = [
  { signal: "SIGTERM", to: "hil", code: 143 },
  { signal: "SIGINT", to: "its process group (Ctrl-C)", code: 130 },
] as const;

for (const c of CASES) {
  t.test(`${c.signal} to ${c.to} mid-scenario: dies of it, exit ${c.code}, nothing left`, async (t) => {
    const row = table.row(t, `${c.signal} of hil run (to ${c.to}) mid-scenario`);
    const dir = join(root, `run-${c.signal}`);
    const run = await startRunningScenario(t, [...RUN_612_LINUX, "--scenario", scenario], dir, iso);
    const sentAt = Date.now();
    if (c.to === "hil") process.kill(run.pid, c.signal);
    else process.kill(-run.pid, c.signal);
    const exit = await run.exited;
    row.ms = exit.at - sentAt;
    row.exit = exitText(exit);
    row.verdict = `died of ${exit.signal ?? `exit ${exit.code}`}, no verdict recorded`;
    t.equal(exit.signal, c.signal, `hil died of ${c.signal}, as a shell expects (${c.code})`, {
      output: run.output().slice(-3000),
    });
    t.ok(row.ms < 10_000, `within ${row.ms} ms`);
    t.notMatch(run.output(), /internal error|^\s+at /m, "no stack");
    const left = leftovers(iso);
    const half = halfWritten(dir);
    row.leftovers = [...left.processes, ...left.entries, ...half.map((n) => `${dir}/${n}`)];
    t.same(left, { processes: [], entries: [] }, "no QEMU, no device server, no temp dir");
    t.same(half, [], "no lock, no verdicts.json, no temp file in the run directory");
  });
}

t.test("SIGKILL of hil mid-scenario: its QEMU and device server go; the next run is clean", async (t) => {
  const row = table.row(t, "SIGKILL of hil run mid-scenario");
  const dir = join(root, "run-SIGKILL");
  const run = await startRunningScenario(t, [...RUN_612_LINUX, "--scenario", scenario], dir, iso);
  const sentAt = Date.now();
  process.kill(run.pid, "SIGKILL");
  const exit = await run.exited;
  row.exit = exitText(exit);
  t.equal(exit.signal, "SIGKILL");
  const running = await processesGoneFrom(iso.tmp, 10_000);
  row.ms = Date.now() - sentAt;
  row.verdict = "killed, no verdict recorded; its QEMU and device server gone";
  t.same(running, [], `QEMU and the device server went with hil (${row.ms} ms)`);
  const stale = leftovers(iso).entries;
  t.ok(
    stale.length > 0 && stale.every((n) => /^hil-(guest|erdma)-/.test(n)),
    `a SIGKILL leaves its temp dirs for the next run to sweep: ${stale.join(" ")}`,
  );
  const lock = join(dir, LOCK_FILE);
  t.ok(existsSync(lock), "and its run directory's lock");
  const holder = existsSync(lock) ? (JSON.parse(readFileSync(lock, "utf8")) as { pid: number }) : undefined;
  t.equal(holder?.pid, run.pid, "naming the killed hil");
  t.notOk(
    holder && processExists(holder.pid),
    "which is gone: the lock is stale, the next claim takes it over",
  );
  t.notOk(existsSync(join(dir, "verdicts.json")), "no verdicts.json, whole or half");
  row.leftovers = [...stale.map((n) => `${n} (swept by the next run)`), `${LOCK_FILE} (stale)`];

  await t.test("the next run in the same TMPDIR passes and sweeps what the killed one left", async (t) => {
    const next = t.testdir({});
    const nextRow = table.row(t, "the next hil run after the SIGTERM, SIGINT and SIGKILL");
    await nextRunPasses(t, nextRow, [...RUN_612_LINUX, "--scenario", "drain-qp-idle"], next, iso.env);
    const left = leftovers(iso);
    nextRow.leftovers = [...left.processes, ...left.entries];
    t.same(left, { processes: [], entries: [] }, "nothing left, the killed run's temp dirs included");
    t.ok(existsSync(join(next, "verdicts.json")), "its run directory holds the whole run");
    t.same(
      halfWritten(next).filter((n) => n !== "verdicts.json"),
      [],
      "and no lock or temp file",
    );
  });
});
