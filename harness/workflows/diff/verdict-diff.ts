/**
 * The comparison of two sides' verdicts that `hil validate` (base vs base+series) and `hil diff`
 * (last night vs tonight) share: cells (a probe check, a scenario under an oracle profile, a
 * matrix job's such cell) matched by key, each classified (new FAIL, fixed, not judged, changed,
 * unchanged), with the rules under it whose verdicts moved and their reasons and evidence.
 *
 * The two sides are called `base` (the one compared against: validate's base kernel, diff's
 * <old>) and `patched` (the one judged: validate's base+series, diff's <new>), the names
 * validate.json has always used.
 */

import type { VerdictEntry } from "../../rundir/verdict-list.ts";
import { PASSING_VERDICTS, type Verdict } from "../../verdict.ts";

export type Change =
  /**
   * FAIL on the patched side, not on the base (XFAIL -> FAIL too: a FAIL no known bug accounts
   * for), or FAIL on both with a problem on the patched side that the base does not have
   */
  | "new-fail"
  /** FAIL on the base, not on the patched side */
  | "fixed"
  /** ERROR or MISS on the patched side (or gone from it) where the base was judged */
  | "not-judged"
  /** the same verdict */
  | "unchanged"
  /** any other difference (PASS -> SKIP, XFAIL -> XPASS, a cell only the patched side has) */
  | "changed";

export const CHANGES: readonly Change[] = ["new-fail", "fixed", "not-judged", "changed", "unchanged"];

export interface RuleDelta {
  rule: string;
  base?: Verdict;
  patched?: Verdict;
  reason: string;
  /** the lines the rule quotes (events of the traces, console lines) on the side the reason is from */
  evidence?: string[];
}

export interface VerdictDelta {
  /** "<scenario>[<profile>]" or a check's id (a matrix cell's: its target before them) */
  key: string;
  scenario?: string;
  profile?: string;
  base?: Verdict;
  patched?: Verdict;
  change: Change;
  /** the patched side's reason (the base's when the patched side has none) */
  reason: string;
  /** a check's quoted evidence, from the side the reason is from */
  evidence?: string[];
  /** the rules whose verdicts differ */
  rules: RuleDelta[];
}

/** One side's cell: its verdict entry and the rule verdicts under it, by rule. */
export interface Cell {
  entry: VerdictEntry;
  rules: Map<string, VerdictEntry>;
}

export interface VerdictComparison {
  deltas: VerdictDelta[];
  counts: Record<Change, number>;
  regression: boolean;
}

const UNJUDGED: readonly Verdict[] = ["ERROR", "MISS"];
const PASSING_OR_SKIPPED: readonly Verdict[] = ["PASS", "SKIP"];

export function classify(base: Verdict | undefined, patched: Verdict | undefined): Change {
  if (base === patched) return "unchanged";
  if (patched === "FAIL") return "new-fail";
  if (base === "FAIL" && patched !== undefined && PASSING_VERDICTS.includes(patched)) return "fixed";
  if (patched !== undefined && UNJUDGED.includes(patched) && base !== undefined && !UNJUDGED.includes(base))
    return "not-judged";
  if (patched === undefined && base !== undefined && !UNJUDGED.includes(base) && base !== "SKIP")
    return "not-judged";
  return "changed";
}

function ruleDeltas(a: Map<string, VerdictEntry>, b: Map<string, VerdictEntry>): RuleDelta[] {
  const out: RuleDelta[] = [];
  for (const rule of [...a.keys(), ...[...b.keys()].filter((r) => !a.has(r))]) {
    const x = a.get(rule);
    const y = b.get(rule);
    if (x?.verdict === y?.verdict) continue;
    const from = y ?? x;
    out.push({
      rule,
      ...(x ? { base: x.verdict } : {}),
      ...(y ? { patched: y.verdict } : {}),
      reason: from?.reason ?? "",
      ...(from?.evidence?.length ? { evidence: from.evidence } : {}),
    });
  }
  return out;
}

/**
 * A problem's reason without what differs between two runs of one situation (code offsets,
 * addresses, counts, times): "KASAN: slab-use-after-free in erdma_destroy_qp+0x1cf/0x23e" and the
 * same report at another offset are one problem.
 */
export function problemSignature(reason: string): string {
  return reason.replace(/0x[0-9a-f]+/gi, "#").replace(/\d+/g, "#");
}

/**
 * Rules that FAIL on both sides where the patched side has a problem the base does not: a FAIL
 * that hid a new one (a base with a WARN of its own, and a series that adds a use-after-free).
 */
function newProblems(a: Map<string, VerdictEntry>, b: Map<string, VerdictEntry>): RuleDelta[] {
  const out: RuleDelta[] = [];
  for (const [rule, y] of b) {
    const x = a.get(rule);
    if (x?.verdict !== "FAIL" || y.verdict !== "FAIL") continue;
    const known = new Set((x.problems ?? [x.reason]).map(problemSignature));
    const added = (y.problems ?? [y.reason]).filter((p) => !known.has(problemSignature(p)));
    if (added.length === 0) continue;
    out.push({
      rule,
      base: x.verdict,
      patched: y.verdict,
      reason: `a new problem: ${added[0]}${added.length > 1 ? ` (and ${added.length - 1} more)` : ""}`,
      ...(y.evidence?.length ? { evidence: y.evidence } : {}),
    });
  }
  return out;
}

/** Compares two sides' cells; keys in the base's order, then those only the patched side has. */
export function compareCells(base: Map<string, Cell>, patched: Map<string, Cell>): VerdictComparison {
  const keys = [...base.keys(), ...[...patched.keys()].filter((k) => !base.has(k))];
  const deltas = keys.map((key): VerdictDelta => {
    const x = base.get(key)?.entry;
    const y = patched.get(key)?.entry;
    const from = y ?? x;
    const baseRules = base.get(key)?.rules ?? new Map<string, VerdictEntry>();
    const patchedRules = patched.get(key)?.rules ?? new Map<string, VerdictEntry>();
    const change = classify(x?.verdict, y?.verdict);
    const hidden =
      change === "unchanged" && y?.verdict === "FAIL" ? newProblems(baseRules, patchedRules) : [];
    return {
      key,
      ...(from?.scenario ? { scenario: from.scenario, profile: from.profile } : {}),
      ...(x ? { base: x.verdict } : {}),
      ...(y ? { patched: y.verdict } : {}),
      change: hidden.length > 0 ? "new-fail" : change,
      reason: hidden[0] ? `rule ${hidden[0].rule}: ${hidden[0].reason}` : (from?.reason ?? ""),
      ...(from?.evidence?.length ? { evidence: from.evidence } : {}),
      rules: [
        ...hidden,
        ...ruleDeltas(baseRules, patchedRules).filter(
          // a cell only one side has: the rules that say something, not every rule that held
          (r) => (x && y) || !PASSING_OR_SKIPPED.includes((r.patched ?? r.base) as Verdict),
        ),
      ],
    };
  });
  const counts = Object.fromEntries(CHANGES.map((c) => [c, 0])) as Record<Change, number>;
  for (const d of deltas) counts[d.change]++;
  return { deltas, counts, regression: counts["new-fail"] > 0 };
}

const WORDS: Record<Change, string> = {
  "new-fail": "NEW FAIL",
  fixed: "FIXED",
  "not-judged": "NOT JUDGED",
  unchanged: "unchanged",
  changed: "changed",
};

export function changeWord(c: Change): string {
  return WORDS[c];
}

export interface DiffTableOptions {
  /** list the unchanged rows too (default) */
  showUnchanged?: boolean;
  /** the two verdict columns' headings (default base, patched) */
  sides?: [string, string];
  /** the name column: what the row is (default the scenario, else the key) */
  name?: (d: VerdictDelta) => string;
  /** a line printed under a row (after its rules), e.g. where only one side has it */
  note?: (d: VerdictDelta) => string | undefined;
  /** print this many lines of each moved rule's evidence (default 0: none) */
  evidenceLines?: number;
}

/** Evidence lines are cut here in the table; verdicts.json in the run directory has them whole. */
const EVIDENCE_WIDTH = 160;

function evidenceBlock(lines: readonly string[] | undefined, max: number, indent: string): string[] {
  if (!lines || max <= 0) return [];
  const cut = (l: string) => (l.length > EVIDENCE_WIDTH ? `${l.slice(0, EVIDENCE_WIDTH - 2)} …` : l);
  const shown = lines.slice(0, max).map((l) => `${indent}${cut(l)}`.trimEnd());
  if (lines.length > max) shown.push(`${indent}... ${lines.length - max} more line(s)`);
  return shown;
}

/** The cells of one row: the same name and the same change, the same rules moved the same way. */
interface Row {
  deltas: VerdictDelta[];
}

/** What makes two cells one row: the name, the change, and the rules that moved, how and why. */
function signature(d: VerdictDelta, name: string): string {
  const rules = d.rules.map((r) => [r.rule, r.base, r.patched, r.reason]);
  return JSON.stringify([name, d.base, d.patched, d.change, rules.length > 0 ? rules : d.reason]);
}

/** Cells of one name whose change is the same under several profiles become one row. */
function rowsOf(deltas: readonly VerdictDelta[], name: (d: VerdictDelta) => string): Row[] {
  const rows: Row[] = [];
  const bySignature = new Map<string, Row>();
  for (const d of deltas) {
    const key = signature(d, name(d));
    const row = bySignature.get(key);
    if (row && d.profile !== undefined && d.change !== "unchanged") row.deltas.push(d);
    else {
      const fresh = { deltas: [d] };
      rows.push(fresh);
      bySignature.set(key, fresh);
    }
  }
  return rows;
}

/**
 * The table: changed rows first (new FAILs, fixed, not judged, changed), then the unchanged ones
 * when asked. A scenario whose cells changed the same way under several rule sets is one row naming
 * them, its moved rules once, and the evidence once for the row (a FAIL's first).
 */
export function renderComparison(diff: VerdictComparison, opts: DiffTableOptions = {}): string {
  const name = opts.name ?? ((d: VerdictDelta) => d.scenario ?? d.key);
  const rows = CHANGES.flatMap((c) =>
    rowsOf(
      diff.deltas.filter((d) => d.change === c && (c !== "unchanged" || opts.showUnchanged !== false)),
      name,
    ),
  );
  if (diff.deltas.length === 0) return "no verdicts to compare\n";
  if (rows.length === 0) return `no verdict changed (${diff.deltas.length} compared)\n`;
  const [left, right] = opts.sides ?? ["base", "patched"];
  const max = opts.evidenceLines ?? 0;
  const profilesOf = (row: Row) => row.deltas.map((d) => d.profile ?? "").join(",");
  const w = Math.max(8, ...rows.map((r) => name(r.deltas[0] as VerdictDelta).length));
  const pw = Math.max(7, ...rows.map((r) => profilesOf(r).length));
  const lw = Math.max(5, left.length);
  const rw = Math.max(7, right.length);
  const indent = "".padEnd(w + pw + 4);
  // evidence already printed for a row of the same name (a console report FAILs other rules too)
  const printed = new Set<string>();
  const lines = [
    `${"scenario".padEnd(w)}  ${"rules".padEnd(pw)}  ${left.padEnd(lw)}  ${right.padEnd(rw)}  ${"change".padEnd(10)}  reason`,
  ];
  for (const row of rows) {
    const d = row.deltas[0] as VerdictDelta;
    lines.push(
      `${name(d).padEnd(w)}  ${profilesOf(row).padEnd(pw)}  ${(d.base ?? "-").padEnd(lw)}  ${(d.patched ?? "-").padEnd(rw)}  ${WORDS[d.change].padEnd(10)}  ${d.change === "unchanged" ? "" : d.reason}`.trimEnd(),
    );
    if (d.change === "unchanged") continue;
    // the evidence of one rule a row, under it (a FAIL's first): the others' are in verdicts.json
    const shown =
      d.rules.find((r) => r.patched === "FAIL" && r.evidence?.length) ??
      d.rules.find((r) => r.evidence?.length);
    const evidenceOf = (evidence: readonly string[] | undefined) => {
      if (!evidence?.length || max <= 0) return;
      const key = `${name(d)}\n${evidence.join("\n")}`;
      if (printed.has(key)) lines.push(`${indent}  (the same evidence as above)`);
      else {
        printed.add(key);
        lines.push(...evidenceBlock(evidence, max, `${indent}  `));
      }
    };
    if (d.rules.length === 0) evidenceOf(d.evidence);
    for (const r of d.rules) {
      lines.push(`${indent}rule ${r.rule}: ${r.base ?? "-"} -> ${r.patched ?? "-"}  ${r.reason}`);
      if (r === shown) evidenceOf(r.evidence);
    }
    const note = opts.note?.(d);
    if (note) lines.push(`${indent}${note}`);
  }
  return `${lines.join("\n")}\n`;
}
