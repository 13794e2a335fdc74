import { type Command, Option } from "commander";
import { cacheRoot } from "../../util/cache.ts";
import { type PruneCandidate, removeEntries, unusedEntries } from "../../util/cache-prune.ts";
import {
  allEntries,
  type ExportIndex,
  exportEntries,
  type IndexEntry,
  importEntries,
  megabytes,
  type TransferEntry,
} from "../../util/cache-transfer.ts";
import { HilError } from "../../util/errors.ts";
import { shortKey } from "../../util/hash.ts";
import { progress } from "../../util/progress.ts";
import { withDriverFragment } from "../scenario/drivers.ts";
import { EXECUTORS, type ExecutorKind } from "../scenario/schema.ts";
import { entriesNeededBy, type RunNeeds, selectEntries } from "../workflows/cache/selection.ts";
import { kernelRequestOf } from "../workflows/job/job.ts";
import { loadPlan, parseShard } from "../workflows/matrix/plan.ts";
import { shardJobs } from "../workflows/matrix/shards.ts";
import { addKernelOptions, type KernelOptionValues, kernelRequest } from "./kernel-options.ts";

interface SelectionValues extends KernelOptionValues {
  executor: ExecutorKind;
  plan?: string;
  shard?: string;
  all?: boolean;
  json?: boolean;
}

/** The selection options: a kernel (as hil run takes it), a plan (or a shard of it), or all. */
function addSelectionOptions(cmd: Command): Command {
  return addKernelOptions(cmd)
    .addOption(
      new Option("--executor <kind>", "the executor the runs use (kernel: hil_kverbs is built per kernel)")
        .choices([...EXECUTORS])
        .default("kernel"),
    )
    .option("--plan <file>", "what the jobs of a matrix plan need (instead of --kernel)")
    .option("--shard <i/n>", "with --plan: what the jobs of that shard need")
    .option("--all", "every entry of the cache");
}

/** The entries the options select, and notes on what is left out. */
async function selection(
  opts: SelectionValues,
  cmd: Command,
): Promise<{ entries: TransferEntry[]; notes: string[]; text: string }> {
  const kernelGiven = ["kernel", "series", "config", "executor"].some(
    (o) => cmd.getOptionValueSource(o) === "cli",
  );
  const modes = [kernelGiven && "--kernel", opts.plan && "--plan", opts.all && "--all"].filter(Boolean);
  if (modes.length > 1)
    throw new HilError(`${modes.join(" and ")} select in different ways: give one of them`);
  if (opts.shard && !opts.plan) throw new HilError("--shard needs --plan");
  if (opts.all) return { entries: await allEntries(), notes: [], text: "--all" };
  let needs: RunNeeds[];
  let text: string;
  if (opts.plan) {
    const plan = await loadPlan(opts.plan);
    const jobs = shardJobs(plan.jobs, opts.shard ? parseShard(opts.shard) : undefined);
    // a job's kernel as the job builds it: with its driver's fragment (rxe)
    needs = jobs.map((j) => ({
      kernel: kernelRequestOf(
        { ...j.spec, configs: withDriverFragment(j.spec.configs ?? [], j.spec.driver) },
        plan.baseDir,
      ),
      executor: j.spec.executor,
    }));
    text = `--plan ${opts.plan}${opts.shard ? ` --shard ${opts.shard}` : ""}`;
  } else {
    needs = [{ kernel: kernelRequest(opts), executor: opts.executor }];
    text = [
      `--kernel ${opts.kernel}`,
      opts.series ? `--series ${opts.series}` : "",
      ...opts.config.map((c) => `--config ${c}`),
      `--executor ${opts.executor}`,
    ]
      .filter(Boolean)
      .join(" ");
  }
  const { entries, notes } = await selectEntries(needs);
  return { entries, notes, text };
}

function entryLine(e: TransferEntry & Partial<IndexEntry>): string {
  const size = e.size === undefined ? "" : `\t${megabytes(e.size)}`;
  return `${e.kind}/${e.kind === "apt" ? e.key : shortKey(e.key)}${size}\t${e.what}`;
}

function totalOf(entries: readonly IndexEntry[]): string {
  return megabytes(entries.reduce((s, e) => s + e.size, 0));
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** "30d", "12h" or a number of days, as --unused-for takes it, in ms. */
export function parseUnusedFor(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([dh]?)$/.exec(text.trim());
  if (!m) throw new HilError(`--unused-for: expected a duration such as 30d or 12h, got "${text}"`);
  return Number(m[1]) * (m[2] === "h" ? DAY_MS / 24 : DAY_MS);
}

function pruneLine(e: PruneCandidate, now: number): string {
  const days = (now - e.lastUsedMs) / DAY_MS;
  const ago = days >= 1 ? `${Math.floor(days)} d` : `${Math.floor(days * 24)} h`;
  return `${entryLine({ ...e, size: e.bytes })}\tlast used ${ago} ago`;
}

export function register(program: Command): void {
  const cache = program
    .command("cache")
    .description(
      "carry cache entries between machines (CI jobs): export what a run or plan needs, import it; prune what no run uses",
    );

  addSelectionOptions(
    cache
      .command("export")
      .description(
        "write the cache entries a run, a plan or a shard needs into a directory (an archive per entry and index.json)",
      )
      .argument("<dir>", "the export directory (must not exist, or be empty)"),
  )
    .option("--json", "print the export's index as JSON")
    .addHelpText(
      "after",
      [
        "",
        "Selected by the keys hil computes (nothing is built or fetched): the QEMU build, each kernel and the source",
        "tree its record names (kernel-base, or kernel-patched for a series), the guest image's layers and initramfs,",
        "hil_kverbs per kernel (executor kernel) and the apt package lists the keys are computed from. An entry the",
        "selection needs that is not in the cache is an error naming it. Each entry is archived under its lock.",
        "",
        "Exit status: 0 exported; 2 bad input (a selection entry missing, the directory not empty); 3 no space left.",
        "",
      ].join("\n"),
    )
    .action(async (dir: string, opts: SelectionValues, cmd: Command) => {
      const started = Date.now();
      const { entries, notes, text } = await selection(opts, cmd);
      for (const n of notes) progress.info(`[cache] ${n}`);
      const index: ExportIndex = await exportEntries(entries, dir, text);
      const summary = `hil cache export: ${index.entries.length} entries, ${totalOf(index.entries)} in ${((Date.now() - started) / 1000).toFixed(1)} s into ${dir}`;
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(index, null, 2)}\n`);
        progress.info(summary);
      } else process.stdout.write(`${index.entries.map(entryLine).join("\n")}\n${summary}\n`);
    });

  cache
    .command("import")
    .description(
      "put the entries of an export directory (hil cache export) into the cache, each checked first",
    )
    .argument("<dir>", "a directory written by hil cache export")
    .option("--json", "print what was placed and skipped as JSON")
    .addHelpText(
      "after",
      [
        "",
        "An entry already in the cache and intact is skipped. Every other entry is unpacked beside its place and checked",
        "(the archive's sha256 in the index, the entry's own manifest) before any is placed, so a corrupt or truncated",
        "export places nothing; then each is renamed into place under its lock.",
        "",
        "Exit status: 0 imported; 2 bad input (no export there, a corrupt archive: named); 3 no space left in the cache.",
        "",
      ].join("\n"),
    )
    .action(async (dir: string, opts: { json?: boolean }) => {
      const started = Date.now();
      const { placed, skipped } = await importEntries(dir);
      const summary = `hil cache import: ${placed.length} placed (${totalOf(placed)}), ${skipped.length} already there, in ${((Date.now() - started) / 1000).toFixed(1)} s into ${cacheRoot()}`;
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ placed, skipped }, null, 2)}\n`);
        progress.info(summary);
        return;
      }
      const lines = [
        ...placed.map((e) => `placed\t${entryLine(e)}`),
        ...skipped.map((e) => `skipped\t${entryLine(e)}\t(already in the cache)`),
      ];
      process.stdout.write(`${lines.join("\n")}\n${summary}\n`);
    });

  cache
    .command("prune")
    .description("remove the cache entries no run has used for a while (30 days unless told)")
    .option("--unused-for <duration>", "how long unused: 30d, 12h, or a number of days", "30d")
    .option("--dry-run", "list what would be removed, remove nothing")
    .option("--json", "print the entries as JSON")
    .addHelpText(
      "after",
      [
        "",
        "Every kind hil builds is pruned (QEMU builds, kernels and their source trees, image layers, modules, cached",
        "base runs); the apt package lists are kept. A run marks each entry it uses; an entry made before marks were",
        "kept counts from when it was built; a kernel's source tree counts as used when the kernel is. Each entry is",
        "removed under its lock, and only if still unused then.",
        "",
        "Exit status: 0 done; 2 bad input.",
        "",
      ].join("\n"),
    )
    .action(async (opts: { unusedFor: string; dryRun?: boolean; json?: boolean }) => {
      const unusedFor = parseUnusedFor(opts.unusedFor);
      const root = cacheRoot();
      const now = Date.now();
      const candidates = await unusedEntries(root, unusedFor, now, entriesNeededBy);
      const removed = opts.dryRun
        ? candidates
        : await removeEntries(root, candidates, unusedFor, entriesNeededBy);
      const bytes = removed.reduce((s, e) => s + e.bytes, 0);
      const verb = opts.dryRun ? "would remove" : "removed";
      const summary = `hil cache prune: ${verb} ${removed.length} entries unused for ${opts.unusedFor}, ${megabytes(bytes)}, from ${root}`;
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ dryRun: !!opts.dryRun, removed }, null, 2)}\n`);
        progress.info(summary);
        return;
      }
      const lines = removed.map((e) => `${verb}\t${pruneLine(e, now)}`);
      process.stdout.write(`${[...lines, summary].join("\n")}\n`);
    });

  addSelectionOptions(
    cache
      .command("list")
      .description("list the cache entries a run, a plan or a shard needs (what export would write)"),
  )
    .option("--json", "print them as JSON")
    .action(async (opts: SelectionValues, cmd: Command) => {
      const { entries, notes } = await selection(opts, cmd);
      for (const n of notes) progress.info(`[cache] ${n}`);
      process.stdout.write(
        opts.json ? `${JSON.stringify(entries, null, 2)}\n` : `${entries.map(entryLine).join("\n")}\n`,
      );
    });
}
