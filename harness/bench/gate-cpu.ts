/**
 * Where the gate's CPU goes, test file by test file: runs `npx tap` (the whole gate, or the files
 * given after --) with gate-cpu-record.mjs loaded into each test file's process, and prints the
 * run's wall and CPU time (every process of the run, from this process's reaped children), the
 * CPU of each tier and the files that took the most. A file's CPU is its own process's and that
 * of the children it reaped (QEMU, hil's CLI, device servers, compilers).
 *
 *   node --import tsx harness/bench/gate-cpu.ts [--jobs N] [--top N] [-- <tap files or options>]
 *
 * The whole gate takes about 20 minutes on 2 cores. tap's own output goes to stderr, the figures
 * to stdout; the exit status is tap's (with files named, add --allow-incomplete-coverage after --
 * or tap fails the run on the coverage of those files alone).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execa } from "execa";
import { PACKAGE_ROOT, packagePath } from "../../util/package.ts";
import { parseGateCpuLog, summarizeGateCpu } from "./gate-cpu-summary.ts";

const { values, positionals } = parseArgs({
  options: { jobs: { type: "string" }, top: { type: "string", default: "25" } },
  allowPositionals: true,
});
const top = Number(values.top);
if (!Number.isInteger(top) || top < 1) throw new Error(`--top ${values.top}: a whole number >= 1`);
if (values.jobs !== undefined && !/^[1-9]\d*$/.test(values.jobs))
  throw new Error(`--jobs ${values.jobs}: a whole number >= 1`);

/** User and system CPU of this process's reaped children, in seconds (/proc/self/stat 16, 17). */
function reapedChildrenCpuS(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  return ((fields[13] ?? 0) + (fields[14] ?? 0)) / 100;
}

const scratch = mkdtempSync(join(tmpdir(), "hil-gate-cpu-"));
process.once("exit", () => rmSync(scratch, { recursive: true, force: true }));
const log = join(scratch, "files.jsonl");
const hook = packagePath("harness", "bench", "gate-cpu-record.mjs");
const args = [...(values.jobs ? ["--jobs", values.jobs] : []), ...positionals];

const before = reapedChildrenCpuS();
const started = Date.now();
const tap = await execa("npx", ["tap", ...args], {
  cwd: PACKAGE_ROOT,
  env: {
    HIL_GATE_CPU_LOG: log,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${hook}`.trim(),
  },
  stdout: process.stderr,
  stderr: process.stderr,
  stdin: "ignore",
  reject: false,
});
const wallS = (Date.now() - started) / 1000;
const cpuS = reapedChildrenCpuS() - before;

let text = "";
try {
  text = readFileSync(log, "utf8");
} catch {
  throw new Error(`tap ran no test file that wrote a record (${log}); tap's exit status ${tap.exitCode}`);
}
const summary = summarizeGateCpu(parseGateCpuLog(text), PACKAGE_ROOT, top);
const f1 = (x: number) => x.toFixed(1);
const lines = [
  `npx tap ${args.join(" ")}`.trim() + `: exit ${tap.exitCode}`,
  `wall ${f1(wallS)} s, CPU ${f1(cpuS)} s (every process of the run), ${(cpuS / wallS).toFixed(2)} of ${cpus().length} cores`,
  `test files' processes: ${summary.files} files, CPU ${f1(summary.cpuS)} s, their wall times summed ${f1(summary.wallSumS)} s`,
  ...summary.byTier.map(
    (t) => `  ${t.tier.padEnd(12)} ${String(t.files).padStart(4)} files ${f1(t.cpuS).padStart(8)} s CPU`,
  ),
  `the ${summary.top.length} files that took the most CPU (s):`,
  `${"CPU".padStart(8)} ${"own".padStart(6)} ${"reaped".padStart(7)} ${"wall".padStart(6)} ${"share".padStart(6)}  file`,
  ...summary.top.map(
    (r) =>
      `${f1(r.cpuS).padStart(8)} ${f1(r.selfS).padStart(6)} ${f1(r.childrenS).padStart(7)} ${f1(r.wallS).padStart(6)} ${`${(100 * r.share).toFixed(1)}%`.padStart(6)}  ${r.file}`,
  ),
];
process.stdout.write(`${lines.join("\n")}\n`);
process.exitCode = tap.exitCode ?? 1;
