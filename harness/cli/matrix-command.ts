import { existsSync, readdirSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { matrixSummary, renderIndex, runMatrix } from "../workflows/matrix/matrix.ts";
import { loadPlan, parseShard, renderJobList, type Shard } from "../workflows/matrix/plan.ts";
import { kernelCount, shardJobs } from "../workflows/matrix/shards.ts";
import { stampedRunDir } from "./repro-command.ts";

interface MatrixOptionValues {
  shard?: Shard;
  out?: string;
  list?: boolean;
  json?: boolean;
}

export function registerMatrixCommand(program: Command): void {
  program
    .command("matrix")
    .description(
      "run a plan: kernels x device profiles x executors x scenario selections (fixtures/plans/*.yaml), one job each, or one shard of it",
    )
    .argument("<plan>", "a plan file (YAML)")
    .option(
      "--shard <i/n>",
      "run shard i of n: the plan's jobs dealt by kernel, so that a shard builds only the kernels of its own jobs (below)",
      parseShard,
    )
    .option(
      "--out <dir>",
      "the matrix directory: matrix.json and jobs/<id>/ (default: runs/matrix-<plan>-<timestamp>)",
    )
    .option(
      "--list",
      "print the jobs (of the shard), each with every axis (kernel, series, configs, driver, device profile, executor, scenarios, rules), and exit without running them",
    )
    .option("--json", "print matrix.json (or, with --list, the jobs) as JSON")
    .addHelpText(
      "after",
      [
        "",
        "A plan names kernels (a base, or { base, series, configs, weight } with paths relative to the plan file), drivers",
        "(default erdma), device_profiles (erdma only; default erdma-reflush), executors (default kernel), scenario",
        "selections (one job each: names or globs, comma-separated within an entry, or paths), rules (the oracle's",
        "rule sets, as hil run --rules; the old key oracle still works) and exclude entries. Job ids are stable",
        "(<kernel>.<driver>[.<profile>].<executor>.<scenarios>).",
        "",
        "Shards are dealt by kernel (base, series and config fragments): with n no more than the plan's kernels, each",
        "kernel's jobs all go to one shard, the largest kernel first to the shard with the fewest jobs, so each kernel",
        "is built on one machine and the shards are as even as whole kernels allow; with more shards than kernels,",
        "each shard gets one kernel and a kernel with many jobs gets several shards. A kernel entry's weight (default 1)",
        "counts each of its jobs as that many: give a debug kernel's 3 when its jobs take three times as long",
        "(harness/bench/matrix-shards.ts suggests weights from a run). The dealing is deterministic: every",
        "CI machine that runs --shard i/n for i = 1..n runs a disjoint part and together they run every job once. Join",
        "the shards' directories with hil merge.",
        "",
        "Exit status: 0 every job passed (PASS/SKIP/XFAIL/XPASS); 1 a job FAILed; 3 a job could not be judged",
        "(ERROR, MISS); 2 bad input (the plan, with file:line).",
        "",
      ].join("\n"),
    )
    .action(async (planFile: string, opts: MatrixOptionValues) => {
      const plan = await loadPlan(planFile);
      const jobs = shardJobs(plan.jobs, opts.shard);
      const where = opts.shard ? ` shard ${opts.shard.index}/${opts.shard.count}` : "";
      if (opts.list) {
        if (opts.json)
          process.stdout.write(
            `${JSON.stringify({ plan: plan.name, hash: plan.hash, shard: opts.shard ?? null, jobs }, null, 2)}\n`,
          );
        else process.stdout.write(renderJobList(jobs));
        progress.info(
          `hil matrix: ${plan.name}${where}: ${jobs.length} of ${plan.jobs.length} job(s), ${kernelCount(jobs)} of ${kernelCount(plan.jobs)} kernel(s)`,
        );
        return;
      }
      const out = opts.out ? resolve(opts.out) : stampedRunDir(`matrix-${plan.name}`);
      if (existsSync(out) && readdirSync(out).length > 0)
        throw new HilError("the matrix directory exists and is not empty", { where: out });
      const index = await runMatrix(plan, { out, ...(opts.shard ? { shard: opts.shard } : {}) });
      const summary = `hil matrix: ${matrixSummary(index)}`;
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(index, null, 2)}\n`);
        progress.info(summary);
      } else process.stdout.write(`${renderIndex(index)}\nmatrix directory: ${out}\n${summary}\n`);
      process.exitCode = index.exitCode;
    });
}

export { registerMatrixCommand as register };
