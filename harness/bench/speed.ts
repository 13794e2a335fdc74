/**
 * Every speed figure of issue 14 in one run (`npm run bench`), each beside its reference measured
 * in the same run: the warm suite on one guest and on the default guests (paired, in turn), its
 * per-scenario split and the hang scenario's time to its verdict; then the other benchmarks in
 * turn, each in a process of its own: setup and boot (beside a bare `qemu -kernel` boot; --cold
 * adds the cold build), the MMIO round trip from inside a guest, the patched kernel of a one-file
 * erdma series (beside the same kernel from scratch; --quick leaves that out), hil validate
 * with and without its cached base, the ULP scenarios' split, and the in-guest message rate of the
 * erdma model beside siw in the same guest.
 *
 *   node --import tsx harness/bench/speed.ts [--quick] [--cold] [--runs N] [--kernel debian:6.12]
 *
 * Progress goes to stderr, the figures to stdout. Run directories go to a temporary directory,
 * removed at the end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execa } from "execa";
import { packagePath } from "../../util/package.ts";
import { readRunRecord } from "../rundir/read.ts";
import { defaultGuests } from "../suite/guests.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    cold: { type: "boolean", default: false },
    runs: { type: "string", default: "2" },
    kernel: { type: "string", default: "debian:6.12" },
  },
});
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs ${values.runs}: a whole number >= 1`);
const kernel = values.kernel ?? "debian:6.12";
const HIL = packagePath("bin", "hil");
/** The scenario whose hang the default suite foresees: its time is the hang-to-verdict time. */
const HANG = "fault-stall-sq-drain";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const out = (lines: string[]) => process.stdout.write(`${lines.join("\n")}\n`);

interface SuiteRun {
  wallMs: number;
  verdicts: string;
  durations: Map<string, number>;
  stuckMs?: number;
  boots: number;
}

async function suiteRun(scratch: string, name: string, guests: number): Promise<SuiteRun> {
  const dir = join(scratch, name);
  const started = Date.now();
  const r = await execa(HIL, ["run", "--kernel", kernel, "--guests", String(guests), "--run-dir", dir], {
    reject: false,
    stdin: "ignore",
  });
  const wallMs = Date.now() - started;
  if (r.exitCode !== 0)
    throw new Error(`hil run --guests ${guests} exited ${r.exitCode}:\n${r.stderr.slice(-2000)}`);
  const record = await readRunRecord(dir);
  const scenarios = record.scenarios ?? [];
  const hang = scenarios.find((s) => s.name === HANG);
  const stuck = hang?.observations?.find((o) => o.ev === "stuck") as { ms?: number } | undefined;
  return {
    wallMs,
    verdicts: record.results.map((x) => `${x.id} ${x.verdict}`).join("\n"),
    durations: new Map(scenarios.map((s) => [s.name, s.durationMs ?? 0])),
    ...(stuck?.ms !== undefined ? { stuckMs: stuck.ms } : {}),
    boots: record.boots ?? 0,
  };
}

async function suiteSection(scratch: string): Promise<void> {
  const guests = defaultGuests();
  process.stderr.write(`[bench] warm suite: one guest and ${guests}, ${runs} run(s) each, in turn\n`);
  await suiteRun(scratch, "warmup", guests); // builds or finds everything before anything is timed
  const one: SuiteRun[] = [];
  const many: SuiteRun[] = [];
  for (let i = 0; i < runs; i++) {
    one.push(await suiteRun(scratch, `one-${i}`, 1));
    many.push(await suiteRun(scratch, `many-${i}`, guests));
  }
  const a = median(many.map((r) => r.wallMs));
  const b = median(one.map((r) => r.wallMs));
  const last = many.at(-1) as SuiteRun;
  const perScenario = [...last.durations.values()].filter((ms) => ms > 0);
  const hangMs = last.durations.get(HANG);
  const same = [...one, ...many].every((r) => r.verdicts === last.verdicts);
  out([
    `warm hil run --kernel ${kernel} (default suite), median of ${runs}`,
    `  ${guests} guest(s) (the default):  ${seconds(a)}  (${last.boots} boots)`,
    `  one guest:                 ${seconds(b)}`,
    `  ratio default / one guest: ${(a / b).toFixed(3)}`,
    `  per scenario (default run): median ${seconds(median(perScenario))}, max ${seconds(Math.max(...perScenario))}, ${perScenario.length} scenarios`,
    `  hang to verdict (${HANG}): ${hangMs === undefined ? "not run" : seconds(hangMs)}${last.stuckMs !== undefined ? `, stuck stack after ${seconds(last.stuckMs)}` : ", NO stuck stack"}`,
    `  verdicts of all ${2 * runs} runs: ${same ? "identical" : "DIFFER"}`,
    "",
  ]);
  if (!same) process.exitCode = 1;
}

/** Another benchmark in a process of its own, its figures passed through under a heading. */
async function section(title: string, script: string, args: string[]): Promise<void> {
  process.stderr.write(`[bench] ${title}\n`);
  const r = await execa(
    process.execPath,
    ["--import", "tsx", packagePath("harness", "bench", script), ...args],
    {
      reject: false,
      stdin: "ignore",
      stderr: "inherit",
    },
  );
  out([
    title,
    ...r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => `  ${l}`),
  ]);
  if (r.exitCode !== 0) {
    out([`  (${script} exited ${r.exitCode})`, ""]);
    process.exitCode = 1;
  } else out([""]);
}

const scratch = mkdtempSync(join(tmpdir(), "hil-bench-speed-"));
try {
  await suiteSection(scratch);
  await section("setup and boot", "setup-boot.ts", ["--kernel", kernel, ...(values.cold ? ["--cold"] : [])]);
  await section("MMIO and DMA from inside a guest", "vfio-user.ts", ["--kernel", kernel]);
  await section("patched kernel, one-file erdma series", "patched-kernel.ts", [
    "--kernel",
    kernel,
    ...(values.quick ? ["--no-scratch"] : []),
  ]);
  await section(
    "hil validate, first, with its cached base, and of a series that makes drains hang",
    "validate-base-cache.ts",
    ["--kernel", kernel, "--hanging", packagePath("fixtures", "mutants", "no-reflush-after-post.mbox")],
  );
  // the --config ulp kernel is built by the first section's warm-up of it, not timed here
  await section("ULP scenarios (--scenario 'ulp-*' --config ulp), the kernel cached", "suite.ts", [
    "--",
    "--kernel",
    kernel,
    "--config",
    "ulp",
    "--scenario",
    "ulp-*",
  ]);
  await section("in-guest SEND and WRITE rate, the erdma model beside siw", "erdma-vs-siw.ts", [
    "--kernel",
    kernel,
  ]);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
