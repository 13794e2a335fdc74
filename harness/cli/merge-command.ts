import type { Command } from "commander";
import { progress } from "../../util/progress.ts";
import { matrixSummary, renderIndex } from "../workflows/matrix/matrix.ts";
import { mergeMatrixDirs } from "../workflows/matrix/merge.ts";

interface MergeOptionValues {
  out: string;
  json?: boolean;
}

export function registerMergeCommand(program: Command): void {
  program
    .command("merge")
    .description("join the matrix directories of a plan's shards (hil matrix --shard i/n) into one")
    .argument("<dir...>", "matrix directories written by hil matrix")
    .requiredOption("--out <dir>", "the merged matrix directory (must not exist, or be empty)")
    .option("--json", "print the merged matrix.json")
    .addHelpText(
      "after",
      [
        "",
        "The inputs must be shards of one plan (the same job list: the plan's content hash in matrix.json), dealt by",
        "the same hil, and disjoint: a job in two inputs, or shards of different plans, shard counts or dealings, is",
        "refused with the directories named, before anything is written. Jobs that no input ran are listed as MISS.",
        "The jobs' run directories are copied to <out>/jobs/<id>/ and <out>/matrix.json indexes them; hil report",
        "reports the merged directory.",
        "",
        "Exit status: as hil matrix over all the jobs (a missing job is a MISS: 3); 2 inconsistent or overlapping inputs.",
        "",
      ].join("\n"),
    )
    .action(async (dirs: string[], opts: MergeOptionValues) => {
      const index = await mergeMatrixDirs(dirs, opts.out);
      const summary = `hil merge: ${matrixSummary(index)}`;
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(index, null, 2)}\n`);
        progress.info(summary);
      } else process.stdout.write(`${renderIndex(index)}\nmatrix directory: ${opts.out}\n${summary}\n`);
      process.exitCode = index.exitCode;
    });
}

export { registerMergeCommand as register };
