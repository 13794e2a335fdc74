/**
 * What a patch series changed: the verdicts of the suite on the base and on base+series, compared
 * per scenario and oracle profile (and per check of the device probes stage) by verdict-diff.ts.
 * A new FAIL is a regression; a FAIL that is gone is fixed; an ERROR or MISS on the patched side
 * where the base was judged means the two cannot be compared there.
 */

import { MAX_EVIDENCE } from "../../oracle/rule.ts";
import type { RunRecord } from "../../rundir/schema.ts";
import { ruleEntriesOf, topLevelEntries } from "../../rundir/verdict-list.ts";
import {
  type Cell,
  compareCells,
  type DiffTableOptions,
  renderComparison,
  type VerdictComparison,
} from "../diff/verdict-diff.ts";

export { type Change, classify, type RuleDelta, type VerdictDelta } from "../diff/verdict-diff.ts";

export type ValidateDiff = VerdictComparison;

/** A run's cells: each probe check and scenario x profile verdict, with its rules. */
export function runCells(record: RunRecord): Map<string, Cell> {
  return new Map(
    [...topLevelEntries(record)].map(([key, entry]) => [key, { entry, rules: ruleEntriesOf(record, key) }]),
  );
}

/** Compares two runs' verdicts; keys in the base's order, then those only the patched run has. */
export function diffVerdicts(base: RunRecord, patched: RunRecord): ValidateDiff {
  return compareCells(runCells(base), runCells(patched));
}

/**
 * How many lines of a moved rule's evidence the table shows: all the oracle quotes (a KASAN
 * report's access, allocation and free stacks among them), not the device's events the suite adds
 * after them (verdicts.json has those).
 */
export const VALIDATE_EVIDENCE_LINES = MAX_EVIDENCE;

/**
 * The table: the changed rows (new FAILs, fixed, not judged, changed), each moved rule once with
 * its evidence once a row; the unchanged ones only when asked (the summary counts them).
 */
export function renderDiff(
  diff: ValidateDiff,
  opts: Pick<DiffTableOptions, "showUnchanged" | "evidenceLines"> = {},
): string {
  return renderComparison(diff, { evidenceLines: VALIDATE_EVIDENCE_LINES, showUnchanged: false, ...opts });
}

export function diffSummary(diff: ValidateDiff): string {
  const c = diff.counts;
  const verdict = diff.regression ? "REGRESSION" : c["not-judged"] > 0 ? "NOT JUDGED" : "no regression";
  const parts = [`${c["new-fail"]} new FAIL`, `${c.fixed} fixed`, `${c["not-judged"]} not judged`];
  if (c.changed > 0) parts.push(`${c.changed} changed`);
  parts.push(`${c.unchanged} unchanged`);
  return `${verdict}: ${parts.join(", ")}`;
}
