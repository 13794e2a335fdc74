/**
 * `hil diff <old> <new>`: last night vs tonight. Two run directories, or two matrix directories,
 * compared cell by cell with verdict-diff.ts (the comparison `hil validate` makes): new FAILs,
 * fixed, not judged (a new ERROR or MISS, or a cell gone), other flips, and the cells whose
 * repetitions (`--repeat`) disagree on either side (flaky), each with the reasons and evidence of
 * the rules that moved. A new FAIL is a regression (exit 1); anything else exits 0.
 */
import { HilError } from "../../../util/errors.ts";
import type { RunStability } from "../../rundir/schema.ts";
import { stabilityCell } from "../../rundir/stability.ts";
import type { DiffSide } from "./sides.ts";
import { compareCells, renderComparison, type VerdictComparison, type VerdictDelta } from "./verdict-diff.ts";

export interface FlakyCell {
  key: string;
  /** the cell without its profile: a scenario (a matrix cell's: after its target) */
  name: string;
  profile?: string;
  old?: RunStability;
  new?: RunStability;
}

export interface RunDiff {
  old: Pick<DiffSide, "kind" | "dir" | "label">;
  new: Pick<DiffSide, "kind" | "dir" | "label">;
  comparison: VerdictComparison;
  flaky: FlakyCell[];
  /** no verdict moved and no cell is flaky */
  noChange: boolean;
  exitCode: number;
}

/** A delta's cell without its `[profile]`: the scenario, a check's id, after a matrix job's target. */
export function cellName(d: Pick<VerdictDelta, "key" | "profile">): string {
  const suffix = d.profile === undefined ? "" : `[${d.profile}]`;
  return suffix && d.key.endsWith(suffix) ? d.key.slice(0, -suffix.length) : d.key;
}

export function diffSides(old: DiffSide, neu: DiffSide): RunDiff {
  if (old.kind !== neu.kind)
    throw new HilError(
      `cannot compare a ${old.kind} directory (${old.dir}) with a ${neu.kind} directory (${neu.dir}): give two run directories or two matrix directories`,
      { where: neu.dir },
    );
  const comparison = compareCells(old.cells, neu.cells);
  const keys = [...old.flaky.keys(), ...[...neu.flaky.keys()].filter((k) => !old.flaky.has(k))];
  const flaky = keys.map((key): FlakyCell => {
    const a = old.flaky.get(key);
    const b = neu.flaky.get(key);
    const profile = (b ?? a)?.profile;
    return {
      key,
      name: cellName({ key, ...(profile !== undefined ? { profile } : {}) }),
      ...(profile !== undefined ? { profile } : {}),
      ...(a ? { old: a } : {}),
      ...(b ? { new: b } : {}),
    };
  });
  const moved = comparison.deltas.some((d) => d.change !== "unchanged");
  return {
    old: { kind: old.kind, dir: old.dir, label: old.label },
    new: { kind: neu.kind, dir: neu.dir, label: neu.label },
    comparison,
    flaky,
    noChange: !moved && flaky.length === 0,
    exitCode: comparison.regression ? 1 : 0,
  };
}

/** Where a cell only one side has is said so under its row. */
export function onlyOn(d: VerdictDelta): "old" | "new" | undefined {
  if (d.base === undefined) return "new";
  if (d.patched === undefined) return "old";
  return undefined;
}

/** A flaky cell's side in a few words: `FLAKY 1/3 FAIL (repetition 2: FAIL: <reason>)`, or the verdict. */
export function flakyText(s: RunStability | undefined): string {
  if (!s) return "stable";
  const differs = s.differs
    ? ` (repetition 1: ${s.first.verdict}; repetition ${s.differs.repetition}: ${s.differs.verdict}: ${s.differs.reason})`
    : "";
  return `${stabilityCell(s)}${differs}`;
}

/** The CI log's line. */
export function diffSummary(d: RunDiff): string {
  const c = d.comparison.counts;
  const compared = d.comparison.deltas.length;
  if (d.noChange) return `hil diff: no change (${compared} verdicts compared)`;
  const verdict = d.comparison.regression ? "REGRESSION" : "no regression";
  const parts = [
    `${c["new-fail"]} new FAIL`,
    `${c.fixed} fixed`,
    `${c["not-judged"]} not judged`,
    `${c.changed} changed`,
    `${d.flaky.length} flaky`,
    `${c.unchanged} unchanged`,
  ];
  return `hil diff: ${verdict}: ${parts.join(", ")}`;
}

/** How many lines of a moved rule's evidence the text shows (json, ktap, junit and html have all). */
export const TEXT_EVIDENCE_LINES = 8;

export function renderDiffText(d: RunDiff): string {
  const out = [`old: ${d.old.dir} (${d.old.label})`, `new: ${d.new.dir} (${d.new.label})`, ""];
  if (d.comparison.deltas.every((x) => x.change === "unchanged"))
    out.push(`no change: the same ${d.comparison.deltas.length} verdicts on both sides`);
  else
    out.push(
      renderComparison(d.comparison, {
        showUnchanged: false,
        sides: ["old", "new"],
        name: cellName,
        note: (x) => {
          const side = onlyOn(x);
          return side ? `only in ${side} (${side === "old" ? d.old.dir : d.new.dir})` : undefined;
        },
        evidenceLines: TEXT_EVIDENCE_LINES,
      }).trimEnd(),
    );
  if (d.flaky.length > 0) {
    out.push("", "flaky (the repetitions' verdicts differ):");
    for (const f of d.flaky)
      out.push(
        `${f.name}${f.profile ? ` [${f.profile}]` : ""}`,
        `  old: ${flakyText(f.old)}`,
        `  new: ${flakyText(f.new)}`,
      );
  }
  out.push("", diffSummary(d));
  return `${out.join("\n")}\n`;
}

/** The comparison as JSON, the sides called old and new. */
export function diffJson(d: RunDiff): unknown {
  return {
    old: d.old,
    new: d.new,
    regression: d.comparison.regression,
    noChange: d.noChange,
    counts: { ...d.comparison.counts, flaky: d.flaky.length },
    deltas: d.comparison.deltas
      .filter((x) => x.change !== "unchanged")
      .map((delta) => {
        const { base, patched, rules, ...rest } = delta;
        const only = onlyOn(delta);
        return {
          ...rest,
          ...(base !== undefined ? { old: base } : {}),
          ...(patched !== undefined ? { new: patched } : {}),
          ...(only ? { only } : {}),
          rules: rules.map(({ base: o, patched: n, ...r }) => ({
            ...r,
            ...(o !== undefined ? { old: o } : {}),
            ...(n !== undefined ? { new: n } : {}),
          })),
        };
      }),
    flaky: d.flaky,
    exitCode: d.exitCode,
  };
}
