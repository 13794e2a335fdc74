import { resolve } from "node:path";
import type { Command } from "commander";
import { progress } from "../../util/progress.ts";
import { loadCase } from "../workflows/repro/case.ts";
import { renderRepro, reproRecord, reproSummary, runRepro } from "../workflows/repro/repro.ts";

interface ReproOptionValues {
  runDir?: string;
  json?: boolean;
}

export function stampedRunDir(prefix: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return resolve("runs", `${prefix}-${stamp}`);
}

export function registerReproCommand(program: Command): void {
  program
    .command("repro")
    .description(
      "reproduce a known bug: run a case of fixtures/cases (kernel, series, driver, device profile, scenarios) and say whether it behaves as the case states, with the evidence",
    )
    .argument(
      "<case>",
      "a case name from fixtures/cases (e.g. erdma-drain-hang-6.1) or a path to a case file",
    )
    .option("--run-dir <dir>", "where the run goes (default: runs/repro-<case>-<timestamp>)")
    .option("--json", "print the outcome as JSON")
    .addHelpText(
      "after",
      [
        "",
        "A case states a bug (one line and its reference), what runs it and the verdicts that show it, per",
        "scenario, rule set and rule. Verdicts are the oracle's own: the scenarios' known_bugs and expect_fail",
        "records are left out, so a known bug is a FAIL here. A case that expects a FAIL REPRODUCES or is NOT",
        "REPRODUCED; one that expects only passing verdicts (a fix) PASSES or DOES NOT PASS. The run directory holds",
        "verdicts.json, traces/, console logs and repro.json.",
        "",
        "Exit status: 0 the case behaves as stated; 1 it does not; 3 an expected verdict could not be judged (ERROR,",
        "MISS); 2 bad input (the case file, with file:line).",
        "",
      ].join("\n"),
    )
    .action(async (name: string, opts: ReproOptionValues) => {
      const c = await loadCase(name);
      const runDir = opts.runDir ? resolve(opts.runDir) : stampedRunDir(`repro-${c.name}`);
      progress.info(`[repro] ${c.name}: ${c.bug}`);
      const run = await runRepro(c, { runDir });
      const out = reproRecord(run);
      process.stdout.write(opts.json ? `${JSON.stringify(out, null, 2)}\n` : renderRepro(c, run));
      const summary = reproSummary(run);
      if (opts.json) progress.info(summary);
      else process.stdout.write(`${summary}\n`);
      process.exitCode = run.outcome.exitCode;
    });
}

export { registerReproCommand as register };
