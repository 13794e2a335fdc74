/**
 * The command line that reruns one scenario of a run: `hil run` with the run's kernel (base,
 * series, config fragments), driver, executor, device (profile or external socket, and the guest
 * MAC), rule sets, repetitions and strictness, and that scenario alone, taken from verdicts.json
 * (the job's spec and base directory, hil >= the version that records them); and the command line
 * that made the run (its `invocation`). Paths come out absolute, so the line works from anywhere.
 * The suite has no random seed: a scenario's commands, faults and the device profile are the whole
 * of its input.
 */
import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { readDevice, runViews } from "../backend/registry.ts";
import { isNamedKernel } from "../kernel/base-spec.ts";
import { deviceOf, hasSeries, kernelBase, type RunDir, repetitionOf } from "../rundir/read.ts";
import type { RunScenario } from "../rundir/schema.ts";

export interface CommandLine {
  /** the arguments after `hil` */
  argv: string[];
  /** `hil` and the arguments, quoted for a POSIX shell */
  line: string;
}

export interface Rerun extends CommandLine {
  /** where the rerun differs from the run or what the record could not tell (empty: nothing) */
  notes: string[];
}

const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One word for a POSIX shell: as is when nothing in it is special, else single-quoted. */
export function shellQuote(word: string): string {
  return word !== "" && PLAIN.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function commandLine(argv: readonly string[]): CommandLine {
  return { argv: [...argv], line: ["hil", ...argv].map(shellQuote).join(" ") };
}

/** A path of the spec made absolute against the recorded base directory (a note when there is none). */
function absolute(path: string, baseDir: string | undefined, notes: string[], what: string): string {
  if (isAbsolute(path)) return path;
  if (baseDir) return resolve(baseDir, path);
  notes.push(`the ${what} ${path} is relative to the directory hil ran in, which this record does not name`);
  return path;
}

/** The scenario as --scenario names it: a shipped one by name, any other by its file. */
function scenarioArg(s: RunScenario, baseDir: string | undefined, notes: string[]): string {
  const name = s.scenario ?? repetitionOf(s).scenario;
  if (
    !s.file ||
    s.file === `fixtures/scenarios/${name}.yaml` ||
    s.file.endsWith(`/fixtures/scenarios/${name}.yaml`)
  )
    return name;
  return absolute(s.file, baseDir, notes, "scenario file");
}

/** A config fragment as the job resolved it: a file next to the base directory, else a shipped name. */
function configArg(c: string, baseDir: string | undefined, notes: string[]): string {
  if (isAbsolute(c)) return c;
  if (c.includes("/") || (baseDir && existsSync(resolve(baseDir, c))))
    return absolute(c, baseDir, notes, "config");
  return c;
}

function deviceArgs(run: RunDir, profile: string | undefined, baseDir: string | undefined, notes: string[]) {
  // a record that names no device but a job whose spec names a profile: the device of that profile
  const d = deviceOf(run) ?? (profile !== undefined ? readDevice({ deviceProfile: profile }) : undefined);
  const mac = run.record.device?.mac;
  const macArgs = mac ? ["--mac", mac] : [];
  const deviceArgs = d
    ? runViews(d).rerunArgs(d, {
        ...(profile !== undefined ? { profile } : {}),
        absolute: (path, what) => absolute(path, baseDir, notes, what),
      })
    : [];
  return [...deviceArgs, ...macArgs];
}

/** The `hil run` line that runs scenario `s` of `run` again, alone, as the run ran it. */
export function rerunScenario(run: RunDir, s: RunScenario): Rerun {
  const r = run.record;
  const notes: string[] = [];
  const spec = r.job?.spec;
  const baseDir = r.job?.baseDir;
  const argv = ["run"];
  if (spec) {
    if (!baseDir) notes.push("written by a hil that did not record the directory its paths are relative to");
    const git = r.versions?.kernel?.git;
    if (git) {
      argv.push("--kernel", `${git.repository}@${git.commit}`);
      if (git.ref !== git.commit)
        notes.push(
          `the kernel is the commit ${git.ref} named when the run ran; ${git.repository}@${git.ref} may name another now`,
        );
    } else
      argv.push(
        "--kernel",
        isNamedKernel(spec.kernel) ? spec.kernel : absolute(spec.kernel, baseDir, notes, "kernel"),
      );
    if (spec.series) argv.push("--series", absolute(spec.series, baseDir, notes, "series"));
    for (const c of spec.configs ?? []) argv.push("--config", configArg(c, baseDir, notes));
    argv.push("--driver", spec.driver, "--executor", spec.executor);
    argv.push(...deviceArgs(run, spec.deviceProfile, baseDir, notes));
    if (spec.oracle) argv.push("--rules", s.judgements.map((j) => j.profile).join(","));
  } else {
    if (!r.target)
      notes.push(
        "written by a hil that did not record the job: the kernel, driver and device are the record's",
      );
    argv.push("--kernel", kernelBase(run));
    if (r.series?.path) argv.push("--series", r.series.path);
    else if (hasSeries(run))
      notes.push(`the kernel was built with a patch series the record does not locate: ${r.kernel}`);
    if (r.driver) argv.push("--driver", r.driver);
    if (r.executor) argv.push("--executor", r.executor);
    argv.push(...deviceArgs(run, undefined, undefined, notes));
    if (r.target) {
      argv.push("--target", r.target.url);
      notes.push("add --identity <key> if the run logged in to its target with one");
    }
  }
  argv.push("--scenario", scenarioArg(s, baseDir, notes));
  if (r.repeat && r.repeat > 1) argv.push("--repeat", String(r.repeat));
  if (r.strict) argv.push("--strict");
  const made = r.invocation?.argv[0];
  if (made === "repro")
    notes.push(
      `hil repro judges without the scenarios' known-bug records; this line applies them (a recorded bug is an XFAIL here). The case as it ran: ${madeBy(run)?.line}`,
    );
  return { ...commandLine(argv), notes };
}

/** The command line that made the run and the directory it ran in; undefined for a record without it. */
export function madeBy(run: RunDir): (CommandLine & { cwd: string }) | undefined {
  const inv = run.record.invocation;
  return inv ? { ...commandLine(inv.argv), cwd: inv.cwd } : undefined;
}
