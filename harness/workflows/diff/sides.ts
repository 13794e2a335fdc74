/**
 * One side of `hil diff`: a run directory (`hil run --run-dir`) or a matrix directory (`hil
 * matrix`, `hil merge`), read as the cells verdict-diff.ts compares, and the cells whose
 * repetitions (`--repeat`) disagree.
 *
 * A run's cells are its probe checks and its scenarios under each oracle profile. The repetitions
 * of a repeated run (`<scenario>#<k>`) are one cell: the worst verdict of any repetition (as the
 * run's exit status counts them), with that repetition's reason and rules, so a run repeated 5
 * times compares with one that was not. A matrix's cells are each job's cells prefixed by the
 * job's target (kernel with series and config fragments, driver and device profile, executor), so
 * the same scenario of two jobs that differ only by their scenario selection is the same cell (when
 * both ran it, the worse verdict counts); a job no shard ran is one MISS cell.
 */
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { HilError } from "../../../util/errors.ts";
import { impliedProfile } from "../../backend/registry.ts";
import { combineVerdicts } from "../../oracle/judge.ts";
import { readRunRecord, repetitionOf } from "../../rundir/read.ts";
import { type RunRecord, type RunStability, VERDICTS_FILE } from "../../rundir/schema.ts";
import { ruleEntriesOf, topLevelEntries, type VerdictEntry } from "../../rundir/verdict-list.ts";
import type { JobSpec } from "../job/job.ts";
import { MATRIX_FILE } from "../matrix/matrix.ts";
import { loadMatrixDir } from "../matrix/matrix-dir.ts";
import type { Cell } from "./verdict-diff.ts";

export interface DiffSide {
  kind: "run" | "matrix";
  /** absolute path */
  dir: string;
  /** what it is in a few words: the run's kernel, or the matrix's plan and job count */
  label: string;
  cells: Map<string, Cell>;
  /** the cells whose repetitions' verdicts differ, by cell key */
  flaky: Map<string, RunStability>;
}

/** A cell's key: `<scenario>[<profile>]` or a check's id, after the matrix job's target if any. */
export function cellKey(target: string | undefined, name: string, profile?: string): string {
  const local = profile === undefined ? name : `${name}[${profile}]`;
  return target === undefined ? local : `${target} ${local}`;
}

/** A run's cells, a repeated scenario's repetitions made one cell (see the header). */
export function recordCells(record: RunRecord, target?: string): Map<string, Cell> {
  const groups = new Map<string, Array<{ key: string; entry: VerdictEntry; repetition?: number }>>();
  for (const [key, entry] of topLevelEntries(record)) {
    const rep =
      entry.scenario === undefined ? undefined : repetitionOf({ name: entry.scenario, judgements: [] });
    const cell = cellKey(target, rep?.scenario ?? key, entry.profile);
    const group = groups.get(cell) ?? [];
    group.push({ key, entry, ...(rep?.repetition !== undefined ? { repetition: rep.repetition } : {}) });
    groups.set(cell, group);
  }
  const cells = new Map<string, Cell>();
  for (const [cell, group] of groups) {
    const worst = combineVerdicts(group.map((g) => g.entry.verdict));
    const pick = group.find((g) => g.entry.verdict === worst) ?? (group[0] as (typeof group)[number]);
    const rep = group.length > 1 && pick.repetition !== undefined ? ` (repetition ${pick.repetition})` : "";
    cells.set(cell, {
      entry: {
        ...pick.entry,
        key: cell,
        ...(pick.entry.scenario !== undefined
          ? { scenario: repetitionOf({ name: pick.entry.scenario, judgements: [] }).scenario }
          : {}),
        reason: `${pick.entry.reason}${rep}`,
      },
      rules: ruleEntriesOf(record, pick.key),
    });
  }
  return cells;
}

/** A repeated run's flaky cells by key. */
export function flakyCells(record: RunRecord, target?: string): Map<string, RunStability> {
  return new Map(
    (record.stability ?? [])
      .filter((s) => s.flaky)
      .map((s) => [cellKey(target, s.scenario, s.profile), s] as const),
  );
}

/** A matrix job's target: everything that decides what it runs on, its scenario selection aside. */
export function jobTarget(spec: JobSpec): string {
  const series = spec.series ? ` + ${spec.series}` : "";
  const configs = (spec.configs ?? []).map((c) => ` +config ${c}`).join("");
  const profile = impliedProfile(spec.driver, spec.deviceProfile);
  const device = profile !== undefined ? `/${profile}` : "";
  const rules = spec.oracle ? ` rules ${spec.oracle.join(",")}` : "";
  return `${spec.kernel}${series}${configs} ${spec.driver}${device} ${spec.executor}${rules}`;
}

function notADiffSide(dir: string): HilError {
  return new HilError(
    `neither a run directory (no ${VERDICTS_FILE}: hil run --run-dir) nor a matrix directory (no ${MATRIX_FILE}: hil matrix, hil merge)`,
    { where: dir },
  );
}

/** Reads a run or matrix directory as one side of the comparison; bad input is one HilError naming it. */
export async function loadDiffSide(path: string): Promise<DiffSide> {
  const dir = resolve(path);
  const info = statSync(dir, { throwIfNoEntry: false });
  if (!info) throw new HilError("does not exist (a run or matrix directory was expected)", { where: dir });
  if (!info.isDirectory()) throw notADiffSide(dir);
  if (existsSync(join(dir, VERDICTS_FILE))) {
    const record = await readRunRecord(dir);
    return {
      kind: "run",
      dir,
      label: record.kernel,
      cells: recordCells(record),
      flaky: flakyCells(record),
    };
  }
  if (!existsSync(join(dir, MATRIX_FILE))) throw notADiffSide(dir);
  const m = await loadMatrixDir(dir);
  const cells = new Map<string, Cell>();
  const flaky = new Map<string, RunStability>();
  for (const { entry, run } of m.jobs) {
    const target = jobTarget(entry.spec);
    if (!run) {
      const key = cellKey(target, `job ${entry.spec.scenarios}`);
      cells.set(key, {
        entry: { key, verdict: "MISS", reason: `no shard ran job ${entry.id}: ${entry.missing}` },
        rules: new Map(),
      });
      continue;
    }
    for (const [k, c] of recordCells(run.record, target)) {
      // two jobs of one target whose scenario selections overlap judge the cell twice: the worse counts
      const had = cells.get(k);
      if (!had || combineVerdicts([had.entry.verdict, c.entry.verdict]) !== had.entry.verdict)
        cells.set(k, c);
    }
    for (const [k, s] of flakyCells(run.record, target)) flaky.set(k, s);
  }
  return {
    kind: "matrix",
    dir,
    label: `matrix ${m.index.plan.name}, ${m.index.jobs.length} job(s)`,
    cells,
    flaky,
  };
}
